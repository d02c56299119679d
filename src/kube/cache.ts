/**
 * One informer per resource of one cluster, shared by every component that reads it — as
 * controller-runtime's cache is: a kind (with its namespace and selectors) is listed and watched
 * once however many controllers, webhooks and servers look at it.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ClusterClient } from "./clients.js";
import { Informer, type InformerOptions, startInformers, stopInformers } from "./informer.js";
import type { ResourceSelector } from "./list-watch.js";

type MakeInformer = (selector: ResourceSelector) => Informer<KubernetesObject>;

/** The key of a resource: two selectors that follow the same objects share an informer. */
export function resourceKey(selector: ResourceSelector): string {
  return [
    selector.apiVersion,
    selector.kind,
    selector.namespace ?? "",
    selector.labelSelector ?? "",
    selector.fieldSelector ?? "",
  ].join("|");
}

export class InformerCache {
  private readonly informers = new Map<
    string,
    { selector: ResourceSelector; informer: Informer<KubernetesObject> }
  >();
  private started = false;
  private stopped = false;
  private readonly make: MakeInformer;

  /** `make` builds an informer for a selector (tests give one of their own). */
  constructor(
    readonly client: ClusterClient,
    options: InformerOptions & { make?: MakeInformer } = {},
  ) {
    const { make, ...informerOptions } = options;
    this.make = make ?? ((selector) => Informer.forResource(client, selector, informerOptions));
  }

  /**
   * The informer for `selector`, made on first use. Once the cache runs, a new one starts at once;
   * callers wait for it with `waitForSync`. Its indexes are shared too: name them after the caller.
   */
  informer<T extends KubernetesObject>(selector: ResourceSelector): Informer<T> {
    if (this.stopped) throw new Error("the informer cache is stopped");
    const key = resourceKey(selector);
    let entry = this.informers.get(key);
    if (!entry) {
      entry = { selector: { ...selector }, informer: this.make(selector) };
      this.informers.set(key, entry);
      if (this.started) entry.informer.start();
    }
    return entry.informer as unknown as Informer<T>;
  }

  /** Starts every informer asked for so far and resolves once all have listed. */
  async start(timeoutMs?: number): Promise<void> {
    this.started = true;
    await startInformers(
      [...this.informers.values()].map((e) => e.informer),
      timeoutMs,
    );
  }

  /** Stops every informer; components that read them stop first. */
  async stop(): Promise<void> {
    this.stopped = true;
    await stopInformers([...this.informers.values()].map((e) => e.informer));
  }

  /** What is watched, one entry per informer: a kind watched twice shows up as two selectors. */
  watched(): ResourceSelector[] {
    return [...this.informers.values()].map((e) => ({ ...e.selector }));
  }
}

/**
 * A component's cache: the shared one it was given, or one of its own (built on `client`) that it
 * then starts and stops itself. Components read through it either way.
 */
export function componentCache(options: { client: ClusterClient; cache?: InformerCache | undefined }): {
  cache: InformerCache;
  /** Stops the cache if the component made it; a shared one is the owner's to stop. */
  release(): Promise<void>;
} {
  if (options.cache) return { cache: options.cache, release: async () => {} };
  const cache = new InformerCache(options.client);
  return { cache, release: () => cache.stop() };
}

/**
 * A capability's informers read through a cache: the process's shared one, or one of its own that
 * `stop()` stops. Subclasses ask `this.cache` for their informers in their constructor and say which
 * ones `start()` waits for.
 */
export abstract class CachedInformers {
  protected readonly cache: InformerCache;
  private readonly release: () => Promise<void>;

  constructor(
    readonly client: ClusterClient,
    shared?: InformerCache,
  ) {
    const { cache, release } = componentCache({ client, cache: shared });
    this.cache = cache;
    this.release = release;
  }

  /** The informers `start()` starts and waits for. */
  protected abstract get all(): Informer<KubernetesObject>[];

  start(timeoutMs = 60_000): Promise<void> {
    return startInformers(this.all, timeoutMs);
  }

  stop(): Promise<void> {
    return this.release();
  }
}
