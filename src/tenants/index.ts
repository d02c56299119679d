/** The tenants capability (Tenant, NamespaceTemplate, TenantResourceQuota): its only public entry. */

export { type AllowedClasses, classAllowed } from "./admission/classes.js";
export {
  isCascadeDeleter,
  isClusterAdmin,
  isSystemComponent,
  type Requester,
  type TenantRole,
  tenantRole,
  tenantryIdentity,
  tenantsOf,
  userLabelValue,
} from "./admission/identity.js";
export { authenticatedUsername, RUNTIMES_NODE_TAINT_KEY, tenantWebhooks } from "./admission/index.js";
export { KeyedMutex } from "./admission/keyed-mutex.js";
export { tenantNameOfNamespace } from "./admission/lookup.js";
export * from "./api/index.js";
export { TENANT_INFORMERS, TenantsCapability } from "./capability.js";
export {
  IN_TENANT_NAMESPACES,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NAMESPACE_ISOLATION,
  NAMESPACE_ORIGIN_LABEL,
  NETWORK_ISOLATION_LABEL,
  RUNTIME_USER_ANNOTATION,
  TENANT_LABEL,
  USER_LABEL,
} from "./controllers/labels.js";
export {
  NAMESPACE_PROVISIONER_CLUSTER_ROLE,
  namespaceProvisionerClusterRole,
  RUNTIME_VIEWER_CLUSTER_ROLE,
  runtimeOwnerAccess,
  runtimeViewerClusterRole,
} from "./controllers/render.js";
export { TenantController, type TenantControllerOptions } from "./controllers/tenant-controller.js";
export { TenantInformers } from "./informers.js";
export { QuotaAdmission, type QuotaAdmissionOptions } from "./quota/admission.js";
export { QuotaController, type QuotaControllerOptions } from "./quota/quota-controller.js";
export { QuotaStore } from "./quota/store.js";
export { isTerminalPod, podUsage } from "./quota/usage.js";
