/**
 * The CustomResourceDefinitions of the tenants capability, generated from the TypeBox schemas,
 * plus local validators that apply the very same schemas.
 */
import {
  type CustomResourceDefinition,
  crdValidator,
  customResourceDefinition,
  type PrinterColumn,
} from "../../apis/index.js";
import { TENANTRY_CATEGORY, TENANTRY_GROUP, TENANTS_VERSION } from "./group.js";
import { type NamespaceTemplate, NamespaceTemplateSchema } from "./namespace-template.js";
import { type Tenant, TenantSchema } from "./tenant.js";
import { type TenantResourceQuota, TenantResourceQuotaSchema } from "./tenant-resource-quota.js";

export const READY_COLUMN: PrinterColumn = {
  name: "Ready",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  description: "Status of the Ready condition.",
};
const REASON: PrinterColumn = {
  name: "Reason",
  type: "string",
  jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
  description: "Reason of the Ready condition.",
  priority: 1,
};
export const AGE_COLUMN: PrinterColumn = {
  name: "Age",
  type: "date",
  jsonPath: ".metadata.creationTimestamp",
  description: "Time since the object was created.",
};

/** Printer columns and settings every tenantry CRD shares. */
export const CRD_COMMON = {
  group: TENANTRY_GROUP,
  version: TENANTS_VERSION,
  scope: "Cluster",
  categories: [TENANTRY_CATEGORY],
  labels: { "app.kubernetes.io/part-of": "tenantry" },
} as const;

export const TENANT_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "Tenant",
  plural: "tenants",
  singular: "tenant",
  shortNames: ["tnt"],
  schema: TenantSchema,
  printerColumns: [
    {
      name: "Owners",
      type: "string",
      jsonPath: ".status.ownerSummary",
      description: "Owners of the tenant.",
    },
    {
      name: "Namespaces",
      type: "integer",
      jsonPath: ".status.namespaceCount",
      description: "Number of namespaces of the tenant.",
    },
    {
      name: "Quota",
      type: "string",
      jsonPath: ".status.usage.summary",
      description:
        "The most used resources as shares of the quota (every resource: tenantry tenant usage NAME).",
    },
    READY_COLUMN,
    AGE_COLUMN,
    {
      name: "Pod Security",
      type: "string",
      jsonPath: ".spec.podSecurity.level",
      description: "Pod Security Standard enforced.",
      priority: 1,
    },
    {
      name: "Cordoned",
      type: "boolean",
      jsonPath: ".spec.cordoned",
      description: "Whether the tenant is frozen: its users may change nothing in it.",
      priority: 1,
    },
    REASON,
  ],
});

export const NAMESPACE_TEMPLATE_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "NamespaceTemplate",
  plural: "namespacetemplates",
  singular: "namespacetemplate",
  shortNames: ["nstpl"],
  schema: NamespaceTemplateSchema,
  printerColumns: [
    {
      name: "Namespaces",
      type: "integer",
      jsonPath: ".status.namespaceCount",
      description: "Number of namespaces the template is rendered into.",
    },
    READY_COLUMN,
    AGE_COLUMN,
    REASON,
  ],
});

export const TENANT_RESOURCE_QUOTA_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "TenantResourceQuota",
  plural: "tenantresourcequotas",
  singular: "tenantresourcequota",
  shortNames: ["trq"],
  schema: TenantResourceQuotaSchema,
  printerColumns: [
    { name: "Tenant", type: "string", jsonPath: ".spec.tenant", description: "Tenant the quota covers." },
    {
      name: "Usage",
      type: "string",
      jsonPath: ".status.summary",
      description: "The most used resources as shares of the limits (every resource: -o yaml).",
    },
    AGE_COLUMN,
    { ...READY_COLUMN, priority: 1 },
    REASON,
  ],
});

/** Every CRD of the tenants capability, in install order. */
export const TENANTS_CRDS: readonly CustomResourceDefinition[] = [
  TENANT_CRD,
  NAMESPACE_TEMPLATE_CRD,
  TENANT_RESOURCE_QUOTA_CRD,
];

/**
 * Schema violations of a whole object, with Kubernetes field paths; empty when valid. CEL rules
 * are checked by the API server only.
 */
export const validateTenant = crdValidator<Tenant>(TENANT_CRD);
export const validateNamespaceTemplate = crdValidator<NamespaceTemplate>(NAMESPACE_TEMPLATE_CRD);
export const validateTenantResourceQuota = crdValidator<TenantResourceQuota>(TENANT_RESOURCE_QUOTA_CRD);
