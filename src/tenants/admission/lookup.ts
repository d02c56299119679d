import { CustomObjectsApi } from "@kubernetes/client-node";
import { isNotFound, readNamespaceIfExists } from "../../kube/index.js";
import { oncePerRequest, tenantKey, tenantOfNamespaceKey } from "../../webhooks/index.js";
import { TENANTRY_GROUP, TENANTS_VERSION } from "../api/group.js";
import type { Tenant } from "../api/tenant.js";
import { TENANT_LABEL } from "../controllers/labels.js";
import type { TenantInformers } from "../informers.js";
import type { Requester } from "./identity.js";

const tenantCoordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenants" };

/**
 * The name of the tenant a namespace belongs to (its tenant label), once per admission request
 * whichever capability's check asks first; read from the API server when the cache has not seen
 * the namespace yet.
 */
export function tenantNameOfNamespace(
  informers: TenantInformers,
  namespace: string,
): Promise<string | undefined> {
  return oncePerRequest(tenantOfNamespaceKey(namespace), async () => {
    const cached = informers.tenantNamespaces.get(undefined, namespace);
    if (cached) return cached.metadata?.labels?.[TENANT_LABEL];
    const fresh = await readNamespaceIfExists(informers.client.core, namespace);
    return fresh?.metadata?.labels?.[TENANT_LABEL];
  });
}

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

  /** Once per admission request, whichever check asks first (see oncePerRequest). */
  tenant(name: string): Promise<Tenant | undefined> {
    return oncePerRequest(tenantKey(name), async () => {
      const cached = this.informers.tenants.get(undefined, name);
      if (cached) return cached;
      try {
        return (await this.customObjects.getClusterCustomObject({ ...tenantCoordinates, name })) as Tenant;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    });
  }

  tenantNameOfNamespace(namespace: string): Promise<string | undefined> {
    return tenantNameOfNamespace(this.informers, namespace);
  }

  async tenantOfNamespace(namespace: string): Promise<Tenant | undefined> {
    const name = await this.tenantNameOfNamespace(namespace);
    return name ? this.tenant(name) : undefined;
  }

  /**
   * The tenants that can matter to a new namespace: those the requester owns, those declaring its
   * name, and the one its tenant label names — from indexes, never a list of every tenant. The
   * named tenant is read from the API server when the cache has not seen it yet. A tenant the
   * requester owns is always cached before they can create namespaces: the RBAC that lets an
   * owner create one is granted by the tenant controller, which reads the same cache.
   */
  async candidateTenants(namespace: string, requester: Requester, requested?: string): Promise<Tenant[]> {
    const found = new Map<string, Tenant>();
    const add = (tenant: Tenant) => found.set(tenant.metadata!.name!, tenant);
    this.informers.tenantsOwnedBy(requester).forEach(add);
    this.informers.tenantsDeclaring(namespace).forEach(add);
    if (requested && !found.has(requested)) {
      const tenant = await this.tenant(requested);
      if (tenant) add(tenant);
    }
    return [...found.values()];
  }
}
