import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type JitteredBackoffOptions, jitteredBackoffDelay } from "./backoff.js";
import type { ClusterClient } from "./clients.js";
import { type CancelTimer, type Clock, sleep, systemClock } from "./clock.js";
import { describeError, isGone, statusOf } from "./errors.js";
import {
  KubeListWatch,
  type ListWatchSource,
  type RawWatchEvent,
  type ResourceSelector,
  type WatchHandle,
} from "./list-watch.js";
import { silentLogger } from "./logging.js";

/**
 * Where an event comes from: `watch` for a change the API server just reported; `list` for what a
 * (re)list or a late handler's replay shows — the state as it is, mostly unchanged for a controller
 * that saw it before.
 */
export type InformerEventOrigin = "list" | "watch";

export interface InformerHandler<T> {
  onAdd?(obj: T, origin: InformerEventOrigin): void;
  onUpdate?(oldObj: T, newObj: T, origin: InformerEventOrigin): void;
  onDelete?(obj: T, origin: InformerEventOrigin): void;
}

export interface InformerOptions {
  clock?: Clock;
  logger?: Logger;
  /** Source of randomness for reconnect jitter and watch timeouts. */
  random?: () => number;
  /** Reconnect backoff; defaults to 100 ms doubling up to 30 s, ±20% jitter. */
  backoff?: JitteredBackoffOptions;
  /**
   * Server-side watch timeout; each watch asks for a random value between this and twice
   * this (as client-go does) so that watches of many informers do not all end together.
   */
  watchTimeoutSeconds?: number;
  /** A clean close sooner than this, with no event received, counts as a failure. */
  minHealthyWatchMs?: number;
}

/** The index values of one object (e.g. its owners' names); an object may have none or many. */
export type IndexFunction<T> = (obj: T) => readonly string[];

interface InformerIndex<T> {
  keysOf: IndexFunction<T>;
  /** Index value → cache keys of the objects with that value. */
  byValue: Map<string, Set<string>>;
}

export interface InformerStats {
  /** Successful full lists (initial sync, and relists after 410 Gone). */
  lists: number;
  /** Watch connections opened. */
  watches: number;
  /** Failed lists and watches (each followed by a backoff). */
  failures: number;
  /** Times the resourceVersion expired (410 Gone) and the informer had to relist. */
  expired: number;
  /** Object and bookmark events applied from watches. */
  events: number;
}

export interface SnapshotDiff<T> {
  added: T[];
  updated: Array<{ oldObj: T; newObj: T }>;
  deleted: T[];
}

/** Cache key of an object: `namespace/name`, or just `name` when cluster-scoped. */
export function cacheKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function cacheKeyOf(obj: KubernetesObject): string {
  const name = obj.metadata?.name;
  if (!name) throw new Error("object without metadata.name");
  return cacheKey(obj.metadata?.namespace, name);
}

/**
 * What changed between the cached objects and a fresh full list. Objects whose
 * resourceVersion is unchanged are not reported; objects missing from the list are
 * reported as deleted (with their last known state), which is how deletions that happened
 * while the watch was down become visible.
 */
export function diffSnapshot<T extends KubernetesObject>(
  previous: ReadonlyMap<string, T>,
  items: readonly T[],
): SnapshotDiff<T> {
  const diff: SnapshotDiff<T> = { added: [], updated: [], deleted: [] };
  const seen = new Set<string>();
  for (const newObj of items) {
    const key = cacheKeyOf(newObj);
    seen.add(key);
    const oldObj = previous.get(key);
    if (!oldObj) diff.added.push(newObj);
    else if (oldObj.metadata?.resourceVersion !== newObj.metadata?.resourceVersion)
      diff.updated.push({ oldObj, newObj });
  }
  for (const [key, oldObj] of previous) {
    if (!seen.has(key)) diff.deleted.push(oldObj);
  }
  return diff;
}

/** A watch ERROR event other than 410 Gone. */
export class WatchEventError extends Error {
  readonly code: number | undefined;
  readonly reason: string | undefined;
  constructor(status: unknown) {
    const parsed = statusOf(status);
    super(`watch error event: ${parsed?.message ?? parsed?.reason ?? JSON.stringify(status)}`);
    this.name = "WatchEventError";
    this.code = parsed?.code;
    this.reason = parsed?.reason;
  }
}

interface WatchOutcome {
  /** Undefined when the server closed the stream cleanly. */
  error?: unknown;
  /** The resourceVersion is too old: a full relist is needed. */
  expired: boolean;
  /** The watch delivered events or stayed open long enough to count as healthy. */
  healthy: boolean;
}

/** The index `inNamespace` keeps. */
const NAMESPACE_INDEX = "namespace";

/**
 * Keeps an in-memory copy of one resource (list + watch) and reports changes to handlers.
 *
 * Objects are kept exactly as the API server sent them (timestamps are strings), whether
 * they came from the list or from the watch. The informer never gives up: a watch that
 * fails or ends unexpectedly is reopened from the last seen resourceVersion after a
 * jittered exponential backoff; a 410 Gone (the resourceVersion was compacted away) causes
 * a full relist, and objects that vanished meanwhile are reported as deletions.
 */
export class Informer<T extends KubernetesObject> {
  readonly cluster: string;
  private readonly source: ListWatchSource<T>;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private readonly backoff: JitteredBackoffOptions;
  private readonly watchTimeoutSeconds: number;
  private readonly minHealthyWatchMs: number;

  private cache = new Map<string, T>();
  /** Named indexes, kept in step with the cache. */
  private readonly indexes = new Map<
    string,
    { keysOf: IndexFunction<T>; byValue: Map<string, Set<string>> }
  >();
  private handlers = new Set<InformerHandler<T>>();
  private resourceVersion: string | undefined;
  private synced = false;
  private syncWaiters: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  private state: "new" | "running" | "stopped" = "new";
  private readonly stopController = new AbortController();
  private currentWatch: WatchHandle | undefined;
  private consecutiveFailures = 0;
  private readonly counters: InformerStats = { lists: 0, watches: 0, failures: 0, expired: 0, events: 0 };
  private loop: Promise<void> | undefined;

  constructor(source: ListWatchSource<T>, options: InformerOptions = {}) {
    this.source = source;
    this.cluster = source.cluster;
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({
      cluster: source.cluster,
      informer: source.description,
    });
    this.random = options.random ?? Math.random;
    this.backoff = options.backoff ?? {};
    this.watchTimeoutSeconds = options.watchTimeoutSeconds ?? 300;
    this.minHealthyWatchMs = options.minHealthyWatchMs ?? 1000;
  }

  /** Informer for one resource of one cluster. */
  static forResource<T extends KubernetesObject>(
    client: ClusterClient,
    selector: ResourceSelector,
    options?: InformerOptions,
  ): Informer<T> {
    return new Informer<T>(new KubeListWatch<T>(client, selector), options);
  }

  start(): void {
    if (this.state === "running") return;
    if (this.state === "stopped") throw new Error("a stopped informer cannot be restarted; create a new one");
    this.state = "running";
    running.add(this as unknown as Informer<KubernetesObject>);
    this.loop = this.run();
  }

  /** The cluster and resource it follows, as its logs name them ("v1/Secret in namespace x"). */
  get watching(): { cluster: string; resource: string } {
    return { cluster: this.cluster, resource: this.source.description };
  }

  /** Stops watching; the cache keeps its last content. Resolves when the internal loop has ended. */
  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    this.state = "stopped";
    running.delete(this as unknown as Informer<KubernetesObject>);
    this.stopController.abort();
    this.currentWatch?.abort();
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    for (const waiter of waiters)
      waiter.reject(new Error("informer stopped before its first list completed"));
    await this.loop;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first full list is in the cache. */
  waitForSync(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.synced) return Promise.resolve();
    if (this.state === "stopped") return Promise.reject(new Error("informer is stopped"));
    return new Promise((resolve, reject) => {
      let cancelTimeout: CancelTimer | undefined;
      const waiter = {
        resolve: () => {
          cancelTimeout?.();
          resolve();
        },
        reject: (error: Error) => {
          cancelTimeout?.();
          reject(error);
        },
      };
      this.syncWaiters.push(waiter);
      if (options.timeoutMs !== undefined) {
        const timeoutMs = options.timeoutMs;
        cancelTimeout = this.clock.setTimer(timeoutMs, () => {
          this.syncWaiters = this.syncWaiters.filter((w) => w !== waiter);
          reject(new Error(`informer ${this.source.description} did not sync within ${timeoutMs} ms`));
        });
      }
    });
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  /**
   * Maintains an index over the cache, as client-go's indexers do, so that lookups by a field
   * (owner, label, …) cost the size of the answer, not of the cache. Add indexes before start().
   */
  addIndex(name: string, keysOf: IndexFunction<T>): void {
    if (this.indexes.has(name)) throw new Error(`informer index "${name}" exists already`);
    const index = { keysOf, byValue: new Map<string, Set<string>>() };
    this.indexes.set(name, index);
    for (const [key, obj] of this.cache) this.indexAdd(index, key, obj);
  }

  /**
   * Adds the index unless one of that name exists: for a reader of a shared informer that may be
   * built again over it (a leader's controllers after a lost and regained lease). A name stands for
   * one index function, so readers name their indexes after themselves.
   */
  ensureIndex(name: string, keysOf: IndexFunction<T>): void {
    if (!this.indexes.has(name)) this.addIndex(name, keysOf);
  }

  /**
   * Objects in one namespace, from an index kept for it (made on first use, as client-go's
   * NamespaceIndex): a per-namespace reconcile must not cost the size of a cluster-wide cache.
   */
  inNamespace(namespace: string): T[] {
    if (!this.indexes.has(NAMESPACE_INDEX))
      this.addIndex(NAMESPACE_INDEX, (o) => (o.metadata?.namespace ? [o.metadata.namespace] : []));
    return this.byIndex(NAMESPACE_INDEX, namespace);
  }

  /** Objects whose index `name` has `value`. */
  byIndex(name: string, value: string): T[] {
    const index = this.indexes.get(name);
    if (!index) throw new Error(`informer has no index "${name}"`);
    const keys = index.byValue.get(value);
    if (!keys) return [];
    const objects: T[] = [];
    for (const key of keys) {
      const obj = this.cache.get(key);
      if (obj) objects.push(obj);
    }
    return objects;
  }

  private indexAdd(index: InformerIndex<T>, key: string, obj: T): void {
    for (const value of index.keysOf(obj)) {
      const keys = index.byValue.get(value);
      if (keys) keys.add(key);
      else index.byValue.set(value, new Set([key]));
    }
  }

  private indexRemove(index: InformerIndex<T>, key: string, obj: T): void {
    for (const value of index.keysOf(obj)) {
      const keys = index.byValue.get(value);
      if (!keys) continue;
      keys.delete(key);
      if (keys.size === 0) index.byValue.delete(value);
    }
  }

  /** Puts `obj` into the cache under `key`, keeping every index in step. */
  private store(key: string, obj: T): T | undefined {
    const old = this.cache.get(key);
    for (const index of this.indexes.values()) {
      if (old) this.indexRemove(index, key, old);
      this.indexAdd(index, key, obj);
    }
    this.cache.set(key, obj);
    return old;
  }

  private evict(key: string): T | undefined {
    const old = this.cache.get(key);
    if (!old) return undefined;
    for (const index of this.indexes.values()) this.indexRemove(index, key, old);
    this.cache.delete(key);
    return old;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.cache.get(cacheKey(namespace, name));
  }

  /** resourceVersion the next watch resumes from. */
  lastResourceVersion(): string | undefined {
    return this.resourceVersion;
  }

  stats(): InformerStats {
    return { ...this.counters };
  }

  /**
   * Registers handlers and returns a function that removes them. If the informer has
   * already synced, the current objects are replayed to `onAdd` first, so late
   * subscribers see the same state as early ones.
   */
  addHandler(handler: InformerHandler<T>): () => void {
    this.handlers.add(handler);
    if (this.synced) {
      for (const obj of this.cache.values()) this.call("onAdd", () => handler.onAdd?.(obj, "list"));
    }
    return () => {
      this.handlers.delete(handler);
    };
  }

  /**
   * Test hook: drops the current watch connection as a network failure would. Returns
   * false if no watch was open at that moment.
   */
  disconnectForTest(): boolean {
    if (!this.currentWatch) return false;
    this.currentWatch.abort();
    return true;
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    let needsList = true;
    while (!signal.aborted) {
      let delayMs = 0;
      try {
        if (needsList) {
          await this.relist(signal);
          needsList = false;
        }
        const outcome = await this.watchOnce(signal);
        if (signal.aborted) break;
        if (outcome.healthy) this.consecutiveFailures = 0;
        if (outcome.expired) {
          needsList = true;
          this.counters.expired++;
          this.logger.info({ resourceVersion: this.resourceVersion }, "resourceVersion expired, relisting");
          // Relist at once the first time; repeated expiries without progress back off.
          delayMs = this.consecutiveFailures === 0 ? 0 : this.nextBackoff();
          this.consecutiveFailures++;
        } else if (outcome.error !== undefined || !outcome.healthy) {
          this.counters.failures++;
          delayMs = this.nextBackoff();
          this.consecutiveFailures++;
          this.logger.warn(
            {
              error: outcome.error === undefined ? "closed too soon" : describeError(outcome.error),
              delayMs,
            },
            "watch ended, reconnecting",
          );
        }
      } catch (error) {
        if (signal.aborted) break;
        if (isGone(error)) {
          needsList = true;
          this.counters.expired++;
        } else {
          this.counters.failures++;
        }
        delayMs = this.nextBackoff();
        this.consecutiveFailures++;
        this.logger.warn({ error: describeError(error), delayMs }, "list failed, retrying");
      }
      if (delayMs > 0) await sleep(this.clock, delayMs, signal);
    }
  }

  private nextBackoff(): number {
    return jitteredBackoffDelay(this.consecutiveFailures, this.backoff, this.random);
  }

  private async relist(signal: AbortSignal): Promise<void> {
    const { items, resourceVersion } = await this.source.list(signal);
    if (signal.aborted) return;
    const diff = diffSnapshot(this.cache, items);
    this.cache = new Map<string, T>();
    for (const index of this.indexes.values()) index.byValue.clear();
    for (const item of items) this.store(cacheKeyOf(item), item);
    this.resourceVersion = resourceVersion;
    this.counters.lists++;
    for (const obj of diff.deleted) this.emit("onDelete", (h) => h.onDelete?.(obj, "list"));
    for (const obj of diff.added) this.emit("onAdd", (h) => h.onAdd?.(obj, "list"));
    for (const { oldObj, newObj } of diff.updated)
      this.emit("onUpdate", (h) => h.onUpdate?.(oldObj, newObj, "list"));
    if (!this.synced) {
      this.synced = true;
      const waiters = this.syncWaiters;
      this.syncWaiters = [];
      for (const waiter of waiters) waiter.resolve();
    }
    this.logger.debug({ count: items.length, resourceVersion }, "listed");
  }

  private watchOnce(signal: AbortSignal): Promise<WatchOutcome> {
    // Stopped between the list and this watch: an abort listener added now would never fire, and
    // stop() would wait for the watch's own end (minutes).
    if (signal.aborted) return Promise.resolve({ error: undefined, expired: false, healthy: true });
    return new Promise<WatchOutcome>((resolve) => {
      const startedAt = this.clock.now();
      let received = 0;
      let settled = false;
      let handle: WatchHandle | undefined;
      const timeoutSeconds = Math.round(this.watchTimeoutSeconds * (1 + this.random()));
      const finish = (error: unknown, expired = false) => {
        if (settled) return;
        settled = true;
        cancelWatchdog();
        signal.removeEventListener("abort", onStop);
        if (this.currentWatch === handle) this.currentWatch = undefined;
        handle?.abort();
        const healthy = received > 0 || this.clock.now() - startedAt >= this.minHealthyWatchMs;
        resolve({ error, expired: expired || isGone(error), healthy });
      };
      const onStop = () => finish(undefined);
      // A silently dead TCP connection would otherwise keep the informer waiting forever:
      // the server ends every watch after timeoutSeconds, so one that outlives that is stuck.
      const cancelWatchdog = this.clock.setTimer((timeoutSeconds + 30) * 1000, () =>
        finish(new Error(`no end of watch after ${timeoutSeconds} s; assuming a dead connection`)),
      );
      signal.addEventListener("abort", onStop, { once: true });
      this.counters.watches++;
      handle = this.source.watch(
        this.resourceVersion ?? "",
        timeoutSeconds,
        (event) => {
          if (settled) return;
          if (event.type === "ERROR") {
            if (isGone(event.object)) finish(undefined, true);
            else finish(new WatchEventError(event.object));
            return;
          }
          if (this.applyEvent(event)) received++;
        },
        (error) => finish(error),
      );
      if (!settled) this.currentWatch = handle;
      else handle.abort();
    });
  }

  /** Applies one watch event to the cache; returns false for events it does not understand. */
  private applyEvent(event: RawWatchEvent): boolean {
    const obj = event.object as T | undefined;
    const resourceVersion = obj?.metadata?.resourceVersion;
    switch (event.type) {
      case "BOOKMARK":
        break;
      case "ADDED":
      case "MODIFIED": {
        const key = cacheKeyOf(obj as T);
        const oldObj = this.store(key, obj as T);
        if (oldObj) this.emit("onUpdate", (h) => h.onUpdate?.(oldObj, obj as T, "watch"));
        else this.emit("onAdd", (h) => h.onAdd?.(obj as T, "watch"));
        break;
      }
      case "DELETED": {
        const key = cacheKeyOf(obj as T);
        if (this.evict(key)) this.emit("onDelete", (h) => h.onDelete?.(obj as T, "watch"));
        break;
      }
      default:
        this.logger.warn({ type: event.type }, "ignoring unknown watch event type");
        return false;
    }
    if (resourceVersion) this.resourceVersion = resourceVersion;
    this.counters.events++;
    return true;
  }

  private emit(kind: keyof InformerHandler<T>, invoke: (handler: InformerHandler<T>) => void): void {
    for (const handler of this.handlers) this.call(kind, () => invoke(handler));
  }

  /** One misbehaving handler must not stop the informer or starve the other handlers. */
  private call(kind: string, invoke: () => void): void {
    try {
      invoke();
    } catch (error) {
      this.logger.error({ error: describeError(error), handler: kind }, "informer handler threw");
    }
  }
}

const running = new Set<Informer<KubernetesObject>>();

/**
 * What the informers running in this process watch, one entry per informer: the same cluster and
 * resource twice is a duplicate watch (and a duplicate cache) that a shared informer would avoid.
 */
export function runningWatches(): { cluster: string; resource: string }[] {
  return [...running].map((informer) => informer.watching);
}

/** Starts informers together and resolves once every one has listed (or rejects after `timeoutMs`). */
export async function startInformers(
  informers: readonly Informer<KubernetesObject>[],
  timeoutMs = 60_000,
): Promise<void> {
  for (const informer of informers) informer.start();
  await Promise.all(informers.map((i) => i.waitForSync({ timeoutMs })));
}

export async function stopInformers(informers: readonly Informer<KubernetesObject>[]): Promise<void> {
  await Promise.all(informers.map((i) => i.stop()));
}
