/**
 * The CustomResourceDefinitions of the tenants capability, generated from the TypeBox schemas,
 * plus local validators that apply the very same schemas.
 */
import { stringify } from "yaml";
import {
  type CustomResourceDefinition,
  customResourceDefinition,
  type FieldViolation,
  type JSONSchemaProps,
  type PrinterColumn,
  SchemaValidator,
} from "../../apis/index.js";
import { TENANTRY_CATEGORY, TENANTRY_GROUP, TENANTS_VERSION } from "./group.js";
import { type NamespaceTemplate, NamespaceTemplateSchema } from "./namespace-template.js";
import { type Tenant, TenantSchema } from "./tenant.js";
import { type TenantResourceQuota, TenantResourceQuotaSchema } from "./tenant-resource-quota.js";

const READY: PrinterColumn = {
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
const AGE: PrinterColumn = {
  name: "Age",
  type: "date",
  jsonPath: ".metadata.creationTimestamp",
  description: "Time since the object was created.",
};

const common = {
  group: TENANTRY_GROUP,
  version: TENANTS_VERSION,
  scope: "Cluster",
  categories: [TENANTRY_CATEGORY],
  labels: { "app.kubernetes.io/part-of": "tenantry" },
} as const;

export const TENANT_CRD: CustomResourceDefinition = customResourceDefinition({
  ...common,
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
      description: "Usage against the quota.",
    },
    READY,
    AGE,
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
      description: "Whether new objects are refused.",
      priority: 1,
    },
    REASON,
  ],
});

export const NAMESPACE_TEMPLATE_CRD: CustomResourceDefinition = customResourceDefinition({
  ...common,
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
    READY,
    AGE,
    REASON,
  ],
});

export const TENANT_RESOURCE_QUOTA_CRD: CustomResourceDefinition = customResourceDefinition({
  ...common,
  kind: "TenantResourceQuota",
  plural: "tenantresourcequotas",
  singular: "tenantresourcequota",
  shortNames: ["trq"],
  schema: TenantResourceQuotaSchema,
  printerColumns: [
    { name: "Tenant", type: "string", jsonPath: ".spec.tenant", description: "Tenant the quota covers." },
    {
      name: "Used/Hard",
      type: "string",
      jsonPath: ".status.summary",
      description: "Usage against the limits.",
    },
    AGE,
    { ...READY, priority: 1 },
    REASON,
  ],
});

/** Every CRD of the tenants capability, in install order. */
export const TENANTS_CRDS: readonly CustomResourceDefinition[] = [
  TENANT_CRD,
  NAMESPACE_TEMPLATE_CRD,
  TENANT_RESOURCE_QUOTA_CRD,
];

function openApiSchemaOf(crd: CustomResourceDefinition): JSONSchemaProps {
  const [version] = crd.spec.versions;
  if (!version) throw new Error(`${crd.metadata.name} has no version`);
  return version.schema.openAPIV3Schema;
}

function lazyValidator<T>(crd: CustomResourceDefinition): (value: unknown) => FieldViolation[] {
  let validator: SchemaValidator<T> | undefined;
  return (value) => {
    validator ??= new SchemaValidator<T>(openApiSchemaOf(crd));
    return validator.violations(value);
  };
}

/**
 * Schema violations of a whole object, with Kubernetes field paths; empty when valid. CEL rules
 * are checked by the API server only.
 */
export const validateTenant = lazyValidator<Tenant>(TENANT_CRD);
export const validateNamespaceTemplate = lazyValidator<NamespaceTemplate>(NAMESPACE_TEMPLATE_CRD);
export const validateTenantResourceQuota = lazyValidator<TenantResourceQuota>(TENANT_RESOURCE_QUOTA_CRD);

/** Where the generated manifests live, relative to the repository root. */
export const CRD_MANIFEST_DIR = "deploy/crds";

export const CRD_MANIFEST_HEADER =
  "# Generated from src/tenants/api by `npx tsx scripts/generate-crds.ts`. Edit the schemas there, not this file.\n";

/** The manifest files of {@link TENANTS_CRDS}: `<group>_<plural>.yaml` → YAML text. */
export function crdManifests(): { file: string; content: string }[] {
  return TENANTS_CRDS.map((crd) => ({
    file: `${crd.spec.group}_${crd.spec.names.plural}.yaml`,
    content: CRD_MANIFEST_HEADER + stringify(crd, { lineWidth: 0 }),
  }));
}
