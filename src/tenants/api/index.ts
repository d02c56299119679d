export {
  AGE_COLUMN,
  CRD_COMMON,
  NAMESPACE_TEMPLATE_CRD,
  READY_COLUMN,
  TENANT_CRD,
  TENANT_RESOURCE_QUOTA_CRD,
  TENANTS_CRDS,
  validateNamespaceTemplate,
  validateTenant,
  validateTenantResourceQuota,
} from "./crds.js";
export { DEFAULT_TENANT_LIMIT_RANGES, DEFAULT_TENANT_QUOTA, withTenantDefaults } from "./defaults.js";
export {
  TENANTRY_CATEGORY,
  TENANTRY_GROUP,
  TENANTRY_LABEL_PREFIX,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
} from "./group.js";
export { type InstallCrdsOptions, installCrds } from "./install.js";
export {
  BUILTIN_TEMPLATE_PARAMETERS,
  type NamespaceTemplate,
  NamespaceTemplateSchema,
  type NamespaceTemplateSpec,
  NamespaceTemplateSpecSchema,
  type NamespaceTemplateStatus,
  NamespaceTemplateStatusSchema,
  TEMPLATE_PARAMETER_PATTERN,
  type TemplateObject,
  type TemplateParameter,
} from "./namespace-template.js";
export { formatOwnerSummary, formatUsageSummary } from "./summary.js";
export {
  type DeclaredNamespace,
  IMAGE_PULL_POLICIES,
  type ImagePullPolicy,
  MAX_NAMESPACE_NAME,
  OWNER_KINDS,
  type OwnerKind,
  POD_SECURITY_LEVELS,
  type PodSecurityLevel,
  RUNTIME_OWNER_ACCESS,
  type RuntimeOwnerAccess,
  SERVICE_ACCOUNT_USERNAME_PATTERN,
  SERVICE_TYPES,
  type ServiceType,
  type TemplateReference,
  type Tenant,
  type TenantOwner,
  TenantSchema,
  type TenantSpec,
  TenantSpecSchema,
  type TenantStatus,
  TenantStatusSchema,
  type TenantUser,
} from "./tenant.js";
export {
  type NamespaceQuota,
  type QuotaReservation,
  type TenantResourceQuota,
  TenantResourceQuotaSchema,
  type TenantResourceQuotaSpec,
  TenantResourceQuotaSpecSchema,
  type TenantResourceQuotaStatus,
  TenantResourceQuotaStatusSchema,
} from "./tenant-resource-quota.js";
