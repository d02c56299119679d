import { CustomObjectsApi } from "@kubernetes/client-node";
import { isNotFound } from "../../kube/index.js";
import { TENANTRY_GROUP, TENANTS_VERSION } from "../api/group.js";
import type { Tenant } from "../api/tenant.js";
import { TENANT_LABEL } from "../controllers/labels.js";
import type { TenantInformers } from "../informers.js";

const tenantCoordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenants" };

/**
 * Tenants and tenant namespaces as admission needs them: from the informer caches, and from the
 * API server when the cache has not seen an object yet. A pod created a moment after its
 * namespace must still get its tenant's node pool, so a cache miss is never taken for "none".
 */
export class TenantLookup {
  private readonly customObjects: CustomObjectsApi;

  constructor(readonly informers: TenantInformers) {
    this.customObjects = informers.client.kubeConfig.makeApiClient(CustomObjectsApi);
  }

  async tenant(name: string): Promise<Tenant | undefined> {
    const cached = this.informers.tenants.get(undefined, name);
    if (cached) return cached;
    try {
      return (await this.customObjects.getClusterCustomObject({ ...tenantCoordinates, name })) as Tenant;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The name of the tenant a namespace belongs to (its tenant label). */
  async tenantNameOfNamespace(namespace: string): Promise<string | undefined> {
    const cached = this.informers.tenantNamespaces.get(undefined, namespace);
    if (cached) return cached.metadata?.labels?.[TENANT_LABEL];
    try {
      const fresh = await this.informers.client.core.readNamespace({ name: namespace });
      return fresh.metadata?.labels?.[TENANT_LABEL];
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async tenantOfNamespace(namespace: string): Promise<Tenant | undefined> {
    const name = await this.tenantNameOfNamespace(namespace);
    return name ? this.tenant(name) : undefined;
  }

  /**
   * Every tenant, read from the API server: deciding which tenant a new namespace joins must not
   * miss a tenant created a moment ago. Namespace creations are rare enough to afford it.
   */
  async freshTenants(): Promise<Tenant[]> {
    const list = (await this.customObjects.listClusterCustomObject(tenantCoordinates)) as { items: Tenant[] };
    return list.items;
  }
}
