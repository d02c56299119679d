/**
 * The DCM REST API's wire shapes (EMCO's Distributed Cloud Manager, as its users' scripts send
 * them), published in the OpenAPI document. Bodies are checked again field by field in
 * bodies.ts, which names the field of every refusal.
 */
import { type Static, Type } from "@sinclair/typebox";
import { ProblemSchema } from "../../common/index.js";

export const MAX_BODY_BYTES = 256 * 1024;

const Str = (description: string, maxLength = 1024) => Type.String({ description, maxLength });
const Opt = (description: string, maxLength = 1024) => Type.Optional(Str(description, maxLength));

export const Metadata = Type.Object(
  {
    name: Opt("Name: a DNS label (logical clouds: a DNS subdomain of at most 128 characters).", 253),
    description: Opt("Description."),
    userData1: Opt("Free-form data kept for the caller.", 512),
    userData2: Opt("Free-form data kept for the caller.", 512),
  },
  { description: "DCM's metadata block.", additionalProperties: true },
);
export type Metadata = Static<typeof Metadata>;

export const ProjectBody = Type.Object(
  {
    metadata: Type.Optional(Metadata),
    spec: Type.Optional(
      Type.Object(
        {
          admins: Type.Optional(
            Type.Array(
              Type.Object({ kind: Str("User or Group.", 16), name: Str("User or group name.", 256) }),
              {
                description: "Who may manage the project's logical clouds (tenantry's addition).",
                maxItems: 64,
              },
            ),
          ),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { description: "A project.", additionalProperties: true },
);
export type ProjectBody = Static<typeof ProjectBody>;

const UserBody = Type.Object(
  {
    userName: Opt("The user's name (the certificate's CN).", 63),
    type: Opt('How the user authenticates: "certificate".', 32),
    certificateRequest: Opt(
      "The user's own PEM certificate request (tenantry's addition); absent: a key is made.",
      16384,
    ),
  },
  { description: "A user of the logical cloud.", additionalProperties: true },
);

export const LogicalCloudBody = Type.Object(
  {
    metadata: Type.Optional(Metadata),
    spec: Type.Optional(
      Type.Object(
        {
          namespace: Opt("The namespace made on every cluster (level 1).", 63),
          level: Type.Optional(
            Type.Union([Type.String({ maxLength: 1 }), Type.Integer()], {
              description: '"0" (admin) or "1" (standard, default).',
            }),
          ),
          labels: Type.Optional(
            Type.Record(Type.String(), Type.String(), { description: "Labels the namespace carries." }),
          ),
          user: Type.Optional(UserBody),
          users: Type.Optional(
            Type.Array(UserBody, { description: "More users (tenantry's addition).", maxItems: 64 }),
          ),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { description: "A logical cloud.", additionalProperties: true },
);
export type LogicalCloudBody = Static<typeof LogicalCloudBody>;

const LabelSelectorBody = Type.Object(
  {
    matchLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object({
          key: Str("Label key.", 317),
          operator: Str("In, NotIn, Exists or DoesNotExist.", 16),
          values: Type.Optional(Type.Array(Str("A value.", 63), { maxItems: 64 })),
        }),
        { maxItems: 32 },
      ),
    ),
  },
  { description: "A label selector over the cluster registry (tenantry's addition)." },
);

export const ClusterReferenceBody = Type.Object(
  {
    metadata: Type.Optional(Metadata),
    spec: Type.Optional(
      Type.Object(
        {
          clusterProvider: Opt("The cluster's provider in the registry.", 63),
          cluster: Opt("A registered cluster.", 63),
          clusterSelector: Type.Optional(LabelSelectorBody),
        },
        { additionalProperties: true },
      ),
    ),
  },
  {
    description:
      "A cluster reference: one cluster by name, or (tenantry) every cluster a label selector matches.",
    additionalProperties: true,
  },
);
export type ClusterReferenceBody = Static<typeof ClusterReferenceBody>;

export const UserPermissionBody = Type.Object(
  {
    metadata: Type.Optional(Metadata),
    spec: Type.Optional(
      Type.Object(
        {
          namespace: Opt("Where it applies; empty: cluster-wide.", 63),
          apiGroups: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { maxItems: 64 })),
          resources: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { maxItems: 64 })),
          verbs: Type.Optional(Type.Array(Type.String({ maxLength: 63 }), { maxItems: 64 })),
          users: Type.Optional(Type.Array(Type.String({ maxLength: 63 }), { maxItems: 64 })),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { description: "A user permission.", additionalProperties: true },
);
export type UserPermissionBody = Static<typeof UserPermissionBody>;

export const ClusterQuotaBody = Type.Object(
  {
    metadata: Type.Optional(Metadata),
    spec: Type.Optional(
      Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()]), {
        description: 'ResourceQuota keys to quantities, e.g. `limits.cpu: "8"`, `pods: "50"`.',
      }),
    ),
  },
  { description: "A cluster quota.", additionalProperties: true },
);
export type ClusterQuotaBody = Static<typeof ClusterQuotaBody>;

export const KvPairBody = Type.Object(
  {
    metadata: Type.Optional(Metadata),
    spec: Type.Optional(
      Type.Object(
        { kv: Type.Optional(Type.Array(Type.Record(Type.String(), Type.String()), { maxItems: 64 })) },
        { additionalProperties: true },
      ),
    ),
  },
  { description: "Key-value pairs.", additionalProperties: true },
);
export type KvPairBody = Static<typeof KvPairBody>;

export const InstantiateBody = Type.Object(
  {
    onFailure: Type.Optional(
      Type.String({
        description:
          'When a cluster cannot be configured: "rollback" (default) undoes every cluster; "keep" leaves the others configured, reports that cluster and keeps retrying it.',
        maxLength: 16,
      }),
    ),
  },
  { description: "tenantry's addition to DCM's (empty) instantiate request.", additionalProperties: true },
);

/** An error (RFC 9457): `field` names the part of the request at fault, `limit` the bound it broke. */
export const Problem = ProblemSchema;

export const ProjectParams = Type.Object({ project: Str("The project.", 253) });
export const CloudParams = Type.Object({
  project: Str("The project.", 253),
  lc: Str("The logical cloud.", 253),
});
export const ItemParams = Type.Object({
  project: Str("The project.", 253),
  lc: Str("The logical cloud.", 253),
  name: Str("The item.", 253),
});

export const StatusQuery = Type.Object({
  status: Type.Optional(Str('"ready" (default) or "deployed".', 16)),
  output: Type.Optional(Str('"summary", "all" (default) or "detail".', 16)),
  cluster: Type.Optional(
    Type.Union([Type.String({ maxLength: 200 }), Type.Array(Type.String({ maxLength: 200 }))], {
      description: "Only these clusters: `<provider>+<cluster>`, repeatable.",
    }),
  ),
  resource: Type.Optional(
    Type.Union([Type.String({ maxLength: 253 }), Type.Array(Type.String({ maxLength: 253 }))], {
      description: "Only these resources (by name), repeatable.",
    }),
  ),
  clusters: Type.Optional(Type.String({ description: "List only the clusters.", maxLength: 8 })),
  resources: Type.Optional(Type.String({ description: "List only the resources.", maxLength: 8 })),
});
export type StatusQuery = Static<typeof StatusQuery>;

export const KubeconfigQuery = Type.Object({
  user: Type.Optional(Str("Whose kubeconfig (default the cloud's user).", 63)),
});
