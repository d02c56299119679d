import { TENANTS_API_VERSION } from "../api/group.js";
import type { Tenant } from "../api/tenant.js";
import type { TenantResourceQuota } from "../api/tenant-resource-quota.js";
import { managedMetadata } from "./labels.js";
import { tenantRef, userObjectName } from "./render.js";

/**
 * The TenantResourceQuotas a Tenant implies: one named after the tenant for spec.quota.hard, and
 * one per user with a quota of their own. (spec.quota.quotaRef names a quota the admin manages.)
 */
export function tenantQuotas(tenant: Tenant): TenantResourceQuota[] {
  const name = tenant.metadata!.name!;
  const quotas: TenantResourceQuota[] = [];
  if (tenant.spec.quota?.hard) {
    quotas.push({
      apiVersion: TENANTS_API_VERSION,
      kind: "TenantResourceQuota",
      metadata: managedMetadata(tenantRef(tenant), name),
      spec: { tenant: name, hard: tenant.spec.quota.hard },
    } as TenantResourceQuota);
  }
  for (const user of tenant.spec.users ?? []) {
    if (!user.quota?.hard) continue;
    quotas.push({
      apiVersion: TENANTS_API_VERSION,
      kind: "TenantResourceQuota",
      metadata: managedMetadata(
        tenantRef(tenant),
        `${name}-${userObjectName(user.name).replace(/^tenantry-/, "")}`,
      ),
      spec: { tenant: name, user: user.name, hard: user.quota.hard },
    } as TenantResourceQuota);
  }
  return quotas;
}
