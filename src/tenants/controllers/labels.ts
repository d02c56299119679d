import type { KubernetesObject, V1OwnerReference } from "@kubernetes/client-node";
import { TENANTS_API_VERSION } from "../api/group.js";

/** Which tenant a namespace or object belongs to. */
export const TENANT_LABEL = "tenantry.dev/tenant";
/** Which user created an object (CloudVeneto CaaS, step 10). */
export const USER_LABEL = "tenantry.dev/user";
/** How a namespace joined its tenant: `declared` in spec.namespaces, or created by an `owner`. */
export const NAMESPACE_ORIGIN_LABEL = "tenantry.dev/namespace-origin";
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY = "tenantry";
export const POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce";
/**
 * On a tenant namespace, `Namespace` narrows the tenant's isolation policy there to the namespace
 * itself (and the tenant's allowFromNamespaces): the tenant's other namespaces cannot reach it.
 * The runtimes capability sets it on each user's runtimes namespace (Vasilenko & Kurapati §3.2).
 */
export const NETWORK_ISOLATION_LABEL = "tenantry.dev/network-isolation";
export const NAMESPACE_ISOLATION = "Namespace";
/**
 * On a user's runtimes namespace (the runtimes capability's Segregated mode): the user, exactly as
 * authenticated. The namespace is theirs: they get `edit` and manage AccessGrants there, the
 * tenant's owners what `spec.runtimeAccess.owners` gives them, its other members nothing.
 */
export const RUNTIME_USER_ANNOTATION = "tenantry.dev/runtime-user";
/**
 * On the namespaces of a cordoned tenant (spec.cordoned), so that only their requests are sent to
 * the cordon webhook.
 */
export const CORDONED_LABEL = "tenantry.dev/cordoned";

/** Webhook namespaceSelector for the namespaces that belong to some tenant. */
export const IN_TENANT_NAMESPACES = { matchExpressions: [{ key: TENANT_LABEL, operator: "Exists" }] };

export interface TenantRef {
  name: string;
  uid: string;
}

export function ownerReference(tenant: TenantRef): V1OwnerReference {
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "Tenant",
    name: tenant.name,
    uid: tenant.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Labels and owner of every object the tenant controller writes. */
export function managedMetadata(
  tenant: TenantRef,
  name: string,
  namespace?: string,
): NonNullable<KubernetesObject["metadata"]> {
  return {
    name,
    ...(namespace ? { namespace } : {}),
    labels: { [TENANT_LABEL]: tenant.name, [MANAGED_BY_LABEL]: MANAGED_BY },
    ownerReferences: [ownerReference(tenant)],
  };
}

export function isManaged(object: KubernetesObject): boolean {
  return object.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY;
}
