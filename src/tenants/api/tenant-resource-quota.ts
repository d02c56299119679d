/**
 * TenantResourceQuota: a ResourceQuota summed over all namespaces of one tenant, with optional
 * per-namespace quotas (the tenant resource quota of the ICN tenant design).
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  AtomicList,
  ConditionList,
  DNS1123_SUBDOMAIN,
  DnsLabel,
  ListMap,
  ObservedGeneration,
  QUANTITY_PATTERN,
  QuotaScopes,
  ResourceList,
  ResourceSchema,
  ScopeSelector,
  StringMap,
} from "../../apis/index.js";

const NamespaceQuotaSchema = Type.Object(
  {
    namespace: DnsLabel({ description: "A namespace of the tenant." }),
    hard: ResourceList("Limits for this namespace alone, enforced by a ResourceQuota created in it."),
  },
  { description: "A quota for one namespace, within the tenant-wide limits." },
);
export type NamespaceQuota = Static<typeof NamespaceQuotaSchema>;

const ReservationSchema = Type.Object(
  {
    id: Type.String({
      description: "UID of the admission request that made the reservation.",
      minLength: 1,
      maxLength: 128,
    }),
    namespace: DnsLabel({ description: "Namespace of the object being created." }),
    resource: Type.String({
      description: "Resource of the object being created, e.g. `pods` or `deployments.apps`.",
      minLength: 1,
      maxLength: 317,
    }),
    name: Type.String({
      description: "Name of the object being created (may be empty with generateName).",
      maxLength: 253,
    }),
    amounts: StringMap(
      Type.String({
        description: "A quantity, e.g. `1` or `500m`.",
        maxLength: 64,
        pattern: QUANTITY_PATTERN,
      }),
      {
        description:
          "What the object counts against the quota, as quantity strings (written by tenantry only).",
        maxProperties: 64,
      },
    ),
    expiresAt: Type.String({
      description: "When the reservation lapses if the object has not been counted by then (RFC 3339).",
      format: "date-time",
    }),
  },
  {
    description:
      "An admitted creation not yet counted in used. Admission adds it with a compare-and-swap on the quota's resourceVersion; only the quota controller removes it: once the object is counted, or once the reservation expired and no such object exists. An expired reservation still counts until then.",
  },
);
export type QuotaReservation = Static<typeof ReservationSchema>;

export const TenantResourceQuotaSpecSchema = Type.Object(
  {
    tenant: DnsLabel({
      description: "Name of the Tenant whose namespaces the quota covers. Cannot be changed.",
      "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "spec.tenant cannot be changed" }],
    }),
    user: Type.Optional(
      Type.String({
        description:
          "When set, only objects created by this user (labelled tenantry.dev/user) count: the user's own quota within the tenant. Cannot be changed.",
        minLength: 1,
        maxLength: 512,
        "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "spec.user cannot be changed" }],
      }),
    ),
    hard: ResourceList(
      "Limits summed over every namespace of the tenant: `cpu`, `memory`, `pods`, `count/deployments.apps`, `requests.dummy/dummyResource` …",
    ),
    scopes: Type.Optional(
      QuotaScopes(
        "Only objects in all these scopes count, as in a ResourceQuota (e.g. NotTerminating, BestEffort).",
      ),
    ),
    scopeSelector: Type.Optional(
      ScopeSelector(
        "Only objects matching these scope requirements count, as in a ResourceQuota (e.g. PriorityClass In [common]).",
      ),
    ),
    namespaceQuotas: Type.Optional(
      ListMap(NamespaceQuotaSchema, ["namespace"], {
        description: "Quotas for single namespaces of the tenant, within hard.",
        maxItems: 256,
      }),
    ),
  },
  { description: "Desired limits." },
);
export type TenantResourceQuotaSpec = Static<typeof TenantResourceQuotaSpecSchema>;

export const TenantResourceQuotaStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    conditions: Type.Optional(
      ConditionList(
        "Current state: `Ready` is True when usage is up to date and the per-namespace quotas exist.",
      ),
    ),
    hard: Type.Optional(
      ResourceList("Limits being enforced (spec.hard as last observed).", { checkNames: false }),
    ),
    used: Type.Optional(
      ResourceList("Usage recomputed from the objects in the tenant's namespaces.", { checkNames: false }),
    ),
    reserved: Type.Optional(
      ResourceList(
        "Usage admitted but not yet seen as objects: creations in flight. Counted against hard together with used.",
        { checkNames: false },
      ),
    ),
    reservations: Type.Optional(
      AtomicList(ReservationSchema, {
        description: "The admitted creations behind reserved, one per admission request (ids are unique).",
        maxItems: 2000,
      }),
    ),
    namespaces: Type.Optional(
      AtomicList(
        Type.Object(
          {
            namespace: DnsLabel({ description: "A namespace of the tenant." }),
            used: ResourceList("What this namespace uses of each limited resource.", { checkNames: false }),
          },
          { description: "Usage of one namespace." },
        ),
        { description: "Usage per namespace.", maxItems: 10000 },
      ),
    ),
    summary: Type.Optional(
      Type.String({
        description:
          "The most used resources on one short line, e.g. `pods 95% (19/20), requests.cpu 40%, +13 more`.",
        maxLength: 1024,
      }),
    ),
  },
  { description: "Observed usage, written by the quota controller." },
);
export type TenantResourceQuotaStatus = Static<typeof TenantResourceQuotaStatusSchema>;

export const TenantResourceQuotaSchema = ResourceSchema({
  description:
    "A TenantResourceQuota limits the resources of all namespaces of one tenant together, like a ResourceQuota spanning namespaces.",
  name: { description: "Quota name.", maxLength: 253, pattern: DNS1123_SUBDOMAIN },
  spec: TenantResourceQuotaSpecSchema,
  status: TenantResourceQuotaStatusSchema,
});
export type TenantResourceQuota = Static<typeof TenantResourceQuotaSchema>;
