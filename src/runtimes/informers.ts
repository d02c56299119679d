/**
 * The caches of Runtime and RuntimeService objects the Admin API and the runtimes controllers
 * share (one watch per kind, whoever reads it), with the indexes both look things up by.
 */
import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import { CachedInformers, type ClusterClient, type Informer, type InformerCache } from "../kube/index.js";
import { TENANT_LABEL, TENANTS_API_VERSION } from "../tenants/index.js";
import type { Runtime } from "./api/runtime.js";
import type { RuntimeService } from "./api/runtime-service.js";

// Named after their reader: the cache's informers, and their indexes, are shared.
export const BY_USER = "runtimes/user";
export const BY_KEY = "runtimes/key";
export const BY_SERVICE = "runtimes/service";

/** Index value of a runtime's user, service and instance. */
export const runtimeKeyOf = (user: string, service: string, instance: string) =>
  `${user}\n${service}\n${instance}`;

export class RuntimesInformers extends CachedInformers {
  readonly runtimes: Informer<Runtime>;
  readonly services: Informer<RuntimeService>;
  /**
   * The tenants' namespaces, users' runtimes namespaces among them (the tenants capability's
   * informer when they share a cache): a start reads its namespace here, not from the API server.
   */
  readonly tenantNamespaces: Informer<V1Namespace>;

  /** With `shared`, the process's cache (indexes named after this reader); without, informers of its own. */
  constructor(client: ClusterClient, shared?: InformerCache) {
    super(client, shared);
    const { cache } = this;
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
    this.tenantNamespaces = cache.informer<V1Namespace>({
      apiVersion: "v1",
      kind: "Namespace",
      labelSelector: TENANT_LABEL,
    });
  }

  protected get all(): Informer<KubernetesObject>[] {
    return [this.runtimes, this.services, this.tenantNamespaces] as unknown as Informer<KubernetesObject>[];
  }
}
