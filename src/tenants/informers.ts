import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import { type ClusterClient, Informer, startInformers, stopInformers } from "../kube/index.js";
import { TENANTS_API_VERSION } from "./api/group.js";
import type { NamespaceTemplate } from "./api/namespace-template.js";
import type { Tenant } from "./api/tenant.js";
import type { TenantResourceQuota } from "./api/tenant-resource-quota.js";
import { TENANT_LABEL } from "./controllers/labels.js";

/**
 * The caches the tenants capability shares between its controllers and admission webhooks: one
 * watch per resource, whoever reads it.
 */
export class TenantInformers {
  readonly tenants: Informer<Tenant>;
  readonly templates: Informer<NamespaceTemplate>;
  /** Namespaces that belong to a tenant (carry the tenant label). */
  readonly tenantNamespaces: Informer<V1Namespace>;
  readonly quotas: Informer<TenantResourceQuota>;

  constructor(readonly client: ClusterClient) {
    this.tenants = Informer.forResource<Tenant>(client, { apiVersion: TENANTS_API_VERSION, kind: "Tenant" });
    this.templates = Informer.forResource<NamespaceTemplate>(client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceTemplate",
    });
    this.tenantNamespaces = Informer.forResource<V1Namespace>(client, {
      apiVersion: "v1",
      kind: "Namespace",
      labelSelector: TENANT_LABEL,
    });
    this.quotas = Informer.forResource<TenantResourceQuota>(client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "TenantResourceQuota",
    });
  }

  private get all(): Informer<KubernetesObject>[] {
    return [
      this.tenants,
      this.templates,
      this.tenantNamespaces,
      this.quotas,
    ] as unknown as Informer<KubernetesObject>[];
  }

  start(timeoutMs = 60_000): Promise<void> {
    return startInformers(this.all, timeoutMs);
  }

  stop(): Promise<void> {
    return stopInformers(this.all);
  }

  /** The tenant a namespace belongs to, from the cache. */
  tenantOfNamespace(namespace: string): Tenant | undefined {
    const name = this.tenantNamespaces.get(undefined, namespace)?.metadata?.labels?.[TENANT_LABEL];
    return name ? this.tenants.get(undefined, name) : undefined;
  }
}
