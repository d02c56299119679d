/**
 * AccessGrant: a tenant admin lets another tenant, a user or a group use chosen resources of one
 * of their namespaces (Arktos: "team A allows team B to access its certain resources"). Deleting
 * the grant revokes it.
 */
import { type Static, Type } from "@sinclair/typebox";
import { ConditionList, ListMap, ObservedGeneration, ResourceSchema, StringEnum } from "../../apis/index.js";

export const GRANTEE_KINDS = ["Tenant", "User", "Group"] as const;
export type GranteeKind = (typeof GRANTEE_KINDS)[number];

/** Verbs a grant may name. Never `*`, `escalate`, `bind` or `impersonate`: a grant names exactly what it allows. */
export const GRANTABLE_VERBS = [
  "get",
  "list",
  "watch",
  "create",
  "update",
  "patch",
  "delete",
  "deletecollection",
] as const;

/** API groups whose objects would let a grantee widen their own access: never grantable. */
export const UNGRANTABLE_API_GROUPS = ["rbac.authorization.k8s.io", "tenantry.dev"] as const;

const NAME = Type.String({ minLength: 1, maxLength: 253 });

const GranteeSchema = Type.Object(
  {
    kind: StringEnum(GRANTEE_KINDS, { description: "Tenant (all its owners and members), User or Group." }),
    name: Type.String({ description: "Tenant name, username or group name.", minLength: 1, maxLength: 512 }),
  },
  { description: "Who receives the access." },
);

const GrantRuleSchema = Type.Object(
  {
    apiGroups: Type.Array(
      Type.String({ description: 'An API group; `""` is the core group.', maxLength: 253 }),
      {
        description: 'API groups the rule covers, e.g. `""` or `apps`.',
        minItems: 1,
        maxItems: 16,
        "x-kubernetes-validations": [
          {
            rule: `self.all(g, g != '*' && !(g in [${UNGRANTABLE_API_GROUPS.map((g) => `'${g}'`).join(", ")}]))`,
            message: `apiGroups must be named one by one (no *) and must not include ${UNGRANTABLE_API_GROUPS.join(" or ")}`,
            reason: "FieldValueForbidden",
          },
        ],
      },
    ),
    resources: Type.Array(
      Type.String({
        description: "A resource or resource/subresource, e.g. `configmaps`, `pods/log`.",
        minLength: 1,
        maxLength: 253,
        pattern: "^[a-z0-9][-a-z0-9.]*(/[a-z0-9][-a-z0-9.]*)?$",
      }),
      { description: "Resources the rule covers, named one by one (no `*`).", minItems: 1, maxItems: 32 },
    ),
    verbs: Type.Array(StringEnum(GRANTABLE_VERBS, { description: "A verb." }), {
      description: `Verbs allowed: ${GRANTABLE_VERBS.join(", ")}.`,
      minItems: 1,
      maxItems: GRANTABLE_VERBS.length,
    }),
    resourceNames: Type.Optional(
      Type.Array(NAME, {
        description: "Only these objects; empty means every object of the resources.",
        maxItems: 64,
      }),
    ),
  },
  { description: "What the grantees may do: API groups × resources × verbs, optionally named objects." },
);
export type GrantRule = Static<typeof GrantRuleSchema>;

export const AccessGrantSpecSchema = Type.Object(
  {
    grantees: ListMap(GranteeSchema, ["kind", "name"], {
      description: "Who receives the access.",
      minItems: 1,
      maxItems: 32,
    }),
    rules: Type.Array(GrantRuleSchema, {
      description: "What the grantees may do in this namespace.",
      minItems: 1,
      maxItems: 16,
    }),
    expiresAt: Type.Optional(
      Type.String({ description: "After this time the grant no longer applies.", format: "date-time" }),
    ),
  },
  { description: "Who may do what in the grant's namespace." },
);
export type AccessGrantSpec = Static<typeof AccessGrantSpecSchema>;

export const AccessGrantSchema = ResourceSchema({
  description:
    "Access a tenant admin gives another tenant, user or group to chosen resources of this namespace. Delete it to revoke.",
  spec: AccessGrantSpecSchema,
  status: Type.Object(
    {
      observedGeneration: ObservedGeneration(),
      conditions: Type.Optional(ConditionList("Current state of the grant.")),
    },
    { description: "Observed state of the grant." },
  ),
});
export type AccessGrant = Static<typeof AccessGrantSchema>;
