/**
 * The caches of Runtime and RuntimeService objects the Admin API and the runtimes controllers
 * share (one watch per kind, whoever reads it), with the indexes both look things up by.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import {
  type ClusterClient,
  componentCache,
  type Informer,
  type InformerCache,
  startInformers,
} from "../kube/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { Runtime } from "./api/runtime.js";
import type { RuntimeService } from "./api/runtime-service.js";

export const BY_USER = "user";
export const BY_KEY = "key";
export const BY_SERVICE = "service";

/** Index value of a runtime's user, service and instance. */
export const runtimeKeyOf = (user: string, service: string, instance: string) =>
  `${user}\n${service}\n${instance}`;

export class RuntimesInformers {
  readonly runtimes: Informer<Runtime>;
  readonly services: Informer<RuntimeService>;

  private readonly release: () => Promise<void>;

  /** With `cache`, the process's shared cache; without, caches of its own. */
  constructor(
    readonly client: ClusterClient,
    shared?: InformerCache,
  ) {
    const { cache, release } = componentCache({ client, ...(shared ? { cache: shared } : {}) });
    this.release = release;
    this.runtimes = cache.informer<Runtime>({ apiVersion: TENANTS_API_VERSION, kind: "Runtime" });
    this.runtimes.addIndex(BY_USER, (r) => (r.spec?.user ? [r.spec.user] : []));
    this.runtimes.addIndex(BY_SERVICE, (r) => (r.spec?.service ? [r.spec.service] : []));
    this.runtimes.addIndex(BY_KEY, (r) =>
      r.spec ? [runtimeKeyOf(r.spec.user, r.spec.service, r.spec.instance)] : [],
    );
    this.services = cache.informer<RuntimeService>({
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeService",
    });
  }

  private get all(): Informer<KubernetesObject>[] {
    return [this.runtimes, this.services] as unknown as Informer<KubernetesObject>[];
  }

  start(): Promise<void> {
    return startInformers(this.all);
  }

  stop(): Promise<void> {
    return this.release();
  }
}
