/** API group and version of every tenantry custom resource. */
export const TENANTRY_GROUP = "tenantry.dev";
export const TENANTS_VERSION = "v1alpha1";
export const TENANTS_API_VERSION = `${TENANTRY_GROUP}/${TENANTS_VERSION}`;

/** Label and annotation keys under this prefix are written by tenantry only. */
export const TENANTRY_LABEL_PREFIX = `${TENANTRY_GROUP}/`;

/** `kubectl get tenantry` lists every tenantry resource. */
export const TENANTRY_CATEGORY = "tenantry";
