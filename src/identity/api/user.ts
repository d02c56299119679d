/**
 * User: a person known to tenantry's built-in identity service (the embedded default's answer to
 * Keystone or an OIDC provider). The password hash lives in a Secret beside tenantry, never here.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DNS1123_SUBDOMAIN,
  DnsLabel,
  ListSet,
  ObservedGeneration,
  ResourceSchema,
} from "../../apis/index.js";

/** Users are named like objects (the name is the username); short enough for the Secret `user-<name>`. */
export const MAX_USERNAME = 63;

export const UserSpecSchema = Type.Object(
  {
    displayName: Type.Optional(Type.String({ description: "Full name, shown in listings.", maxLength: 256 })),
    groups: Type.Optional(
      ListSet(Type.String({ description: "A group name.", minLength: 1, maxLength: 256 }), {
        description:
          "Groups the user belongs to, as the API server will see them. `system:` groups are reserved to Kubernetes.",
        maxItems: 64,
        "x-kubernetes-validations": [
          {
            rule: "self.all(g, !g.startsWith('system:'))",
            message: "groups must not start with system: (reserved to Kubernetes)",
            reason: "FieldValueForbidden",
          },
        ],
      }),
    ),
    tenant: Type.Optional(
      DnsLabel({
        description:
          "The user's tenant: their tokens carry it, and at first login the user is added to it (and it is created when tenantry is configured to).",
        maxLength: 40,
      }),
    ),
    tenantAdmin: Type.Optional(
      Type.Boolean({
        description: "Whether the user administers their tenant (becomes an owner).",
        default: false,
      }),
    ),
    disabled: Type.Optional(
      Type.Boolean({
        description: "A disabled user cannot log in, and their tokens are refused at once.",
        default: false,
      }),
    ),
  },
  { description: "Who the user is." },
);
export type UserSpec = Static<typeof UserSpecSchema>;

export const UserStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    lastLogin: Type.Optional(
      Type.String({ description: "When the user last logged in.", format: "date-time" }),
    ),
    tokensNotBefore: Type.Optional(
      Type.String({
        description: "Tokens issued before this time are refused: set by `tenantry user revoke-tokens`.",
        format: "date-time",
      }),
    ),
    loginsUnlockedAt: Type.Optional(
      Type.String({
        description:
          "Wrong passwords before this time no longer count against the user: set by `tenantry user unlock`, it lifts a lock at once.",
        format: "date-time",
      }),
    ),
    conditions: Type.Optional(ConditionList("Current state of the user.")),
  },
  { description: "Observed state of the user, written by tenantry." },
);

export const UserSchema = ResourceSchema({
  description: "A user of tenantry's built-in identity service.",
  name: {
    description: "The username: lowercase letters, digits, `-` and `.`.",
    maxLength: MAX_USERNAME,
    pattern: DNS1123_SUBDOMAIN,
  },
  spec: UserSpecSchema,
  status: UserStatusSchema,
});
export type User = Static<typeof UserSchema>;
