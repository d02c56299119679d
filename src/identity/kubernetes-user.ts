import type { Identity } from "./providers/provider.js";

/** `extra` key carrying the identity's tenant to authorizers, admission webhooks and audit logs. */
export const TENANT_EXTRA_KEY = "tenantry.dev/tenant";
/** `extra` key naming the identity provider that vouched for the user. */
export const PROVIDER_EXTRA_KEY = "tenantry.dev/identity-provider";

/** Every user the identity service places in a tenant is in this group: bind it to give the whole tenant a role. */
export function tenantGroup(tenant: string): string {
  return `tenantry:tenant:${tenant}`;
}

/** The provider's tenant admins (Keystone `admin` role, …): the owners of a tenant created at first login. */
export function tenantAdminsGroup(tenant: string): string {
  return `tenantry:tenant-admins:${tenant}`;
}

export interface KubernetesUser {
  username: string;
  uid: string;
  groups: string[];
  extra: Record<string, string[]>;
}

/** The user as kube-apiserver (TokenReview) and the gateway (impersonation) present it. */
export function kubernetesUserOf(identity: Identity): KubernetesUser {
  const groups = [...identity.groups];
  const extra: Record<string, string[]> = { [PROVIDER_EXTRA_KEY]: [identity.provider] };
  if (identity.tenant) {
    groups.push(tenantGroup(identity.tenant));
    if (identity.tenantAdmin) groups.push(tenantAdminsGroup(identity.tenant));
    extra[TENANT_EXTRA_KEY] = [identity.tenant];
  }
  return { username: identity.username, uid: identity.uid, groups: [...new Set(groups)], extra };
}
