/**
 * A logical cloud (DCM's, ICN logical cloud): one slice — namespace, quota, users' certificates and
 * permissions — on every cluster its references select, created, changed, checked and removed as
 * one thing. Lives in its project's namespace. The spec holds what DCM keeps as separate
 * sub-resources (cluster references, user permissions, cluster quotas, key-value pairs) and the
 * lifecycle action the API last asked for; the status holds what happened on each cluster.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  AtomicList,
  ConditionList,
  DNS1123_LABEL,
  DNS1123_SUBDOMAIN,
  LabelMap,
  LabelSelector,
  ListMap,
  ObservedGeneration,
  ResourceList,
  ResourceSchema,
  StringEnum,
  StringMap,
} from "../../apis/index.js";

export const MAX_LOGICAL_CLOUD_NAME = 128;
export const MAX_USER_NAME = 63;
/** Users' names: the certificate's CN, an RBAC subject and part of a Secret key. */
export const USER_NAME_PATTERN = "^[A-Za-z0-9]([-._A-Za-z0-9]*[A-Za-z0-9])?$";
export const LEVELS = ["0", "1"] as const;
export type Level = (typeof LEVELS)[number];
export const LIFECYCLE_ACTIONS = ["Instantiate", "Update", "Terminate"] as const;
export type LifecycleAction = (typeof LIFECYCLE_ACTIONS)[number];
export const FAILURE_POLICIES = ["Rollback", "Keep"] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];
/** DCM's logical cloud states (the last action, as DCM's status reports it). */
export const CLOUD_STATES = [
  "Created",
  "Instantiated",
  "Updated",
  "Terminated",
  "InstantiateStopped",
  "TerminateStopped",
] as const;
export type CloudState = (typeof CLOUD_STATES)[number];
/** DCM's deployment states. */
export const DEPLOYED_STATES = [
  "Instantiating",
  "Instantiated",
  "InstantiateFailed",
  "Terminating",
  "Terminated",
  "TerminateFailed",
] as const;
export type DeployedState = (typeof DEPLOYED_STATES)[number];
/** A cluster's part in the logical cloud. */
export const CLUSTER_STATES = ["Pending", "Applying", "Ready", "Failed", "Removing", "Removed"] as const;
export type ClusterState = (typeof CLUSTER_STATES)[number];
/** DCM's connectivity vocabulary. */
export const CONNECTIVITY = ["Unknown", "Available", "Retrying"] as const;
export type Connectivity = (typeof CONNECTIVITY)[number];
/** DCM's resource vocabulary. */
export const RESOURCE_STATES = ["Pending", "Applied", "Failed", "Deleted"] as const;
export type ResourceState = (typeof RESOURCE_STATES)[number];

const SubName = (description: string) =>
  Type.String({ description, minLength: 1, maxLength: 63, pattern: DNS1123_LABEL });
const Text = (description: string, maxLength: number) =>
  Type.Optional(Type.String({ description, maxLength }));

export const UserSchema = Type.Object(
  {
    userName: Type.String({
      description: "The user's name: the CN of their certificates and the subject of their bindings.",
      minLength: 1,
      maxLength: MAX_USER_NAME,
      pattern: USER_NAME_PATTERN,
    }),
    type: Type.Optional(
      StringEnum(["certificate"], {
        description: "How the user authenticates: `certificate` (the only kind).",
      }),
    ),
    certificateRequest: Type.Optional(
      Type.String({
        description:
          "The user's own PEM certificate request (CN the user name): each cluster signs it and tenantry never holds the key. Absent: tenantry makes a key.",
        maxLength: 16384,
      }),
    ),
  },
  { description: "A user of the logical cloud." },
);
export type LogicalCloudUser = Static<typeof UserSchema>;

export const ClusterReferenceSchema = Type.Object(
  {
    name: SubName("The reference's name (DCM's metadata.name)."),
    clusterProvider: Type.Optional(
      Type.String({
        description: "The registered cluster's provider, when named.",
        maxLength: 63,
        pattern: DNS1123_LABEL,
      }),
    ),
    cluster: Type.Optional(
      Type.String({ description: "A registered cluster, by name.", maxLength: 63, pattern: DNS1123_LABEL }),
    ),
    clusterSelector: Type.Optional(
      LabelSelector(
        "Every registered cluster whose labels match (tenantry's addition): clusters registered or labelled later join, unlabelled ones leave.",
      ),
    ),
  },
  {
    description:
      "Which clusters the logical cloud spans: one by name (DCM) or all matching a label selector.",
    "x-kubernetes-validations": [
      {
        rule: "has(self.cluster) != has(self.clusterSelector)",
        message: "name either a cluster or a clusterSelector, not both",
      },
    ],
  },
);
export type ClusterReference = Static<typeof ClusterReferenceSchema>;

const NameList = (description: string, maxLength: number) =>
  Type.Array(Type.String({ description: "An entry.", maxLength }), { description, maxItems: 64 });

export const UserPermissionSchema = Type.Object(
  {
    name: SubName("The permission's name: its Role (or ClusterRole) and binding are named after it."),
    namespace: Type.Optional(
      Type.String({
        description:
          "Namespace it applies in (usually the logical cloud's); empty: cluster-wide (a ClusterRole: a privileged cloud).",
        maxLength: 63,
      }),
    ),
    apiGroups: NameList('API groups; `""` the core group, `*` every group.', 253),
    resources: NameList("Resources, e.g. `pods`, `deployments`, `pods/log`; `*` every resource.", 253),
    verbs: NameList("Verbs: get, list, watch, create, update, patch, delete, deletecollection, or `*`.", 63),
    users: Type.Optional(
      NameList(
        "The users it is granted to; absent: every user of the logical cloud (tenantry's addition).",
        MAX_USER_NAME,
      ),
    ),
  },
  { description: "A permission the logical cloud's users get on every cluster." },
);
export type UserPermission = Static<typeof UserPermissionSchema>;

export const ClusterQuotaSchema = Type.Object(
  {
    name: SubName("The quota's name: the ResourceQuota on every cluster is named after it."),
    hard: ResourceList(
      "Hard limits, as in a ResourceQuota: `limits.cpu`, `requests.memory`, `pods`, `count/deployments.apps`, …",
    ),
  },
  { description: "A ResourceQuota the logical cloud's namespace gets on every cluster." },
);
export type ClusterQuota = Static<typeof ClusterQuotaSchema>;

export const KvPairSchema = Type.Object(
  {
    name: SubName("The key-value pair set's name."),
    kv: Type.Array(
      StringMap(Type.String({ description: "A value.", maxLength: 4096 }), {
        description: "One key and its value.",
        maxProperties: 16,
      }),
      { description: "Keys and values, kept for the caller (DCM's kv-pairs).", maxItems: 64 },
    ),
  },
  { description: "Key-value pairs kept with the logical cloud (DCM's kv-pairs)." },
);
export type KvPair = Static<typeof KvPairSchema>;

export const LifecycleSchema = Type.Object(
  {
    action: StringEnum(LIFECYCLE_ACTIONS, {
      description: "The last action asked for: Instantiate, Update or Terminate.",
    }),
    instance: Type.String({
      description:
        "Identifies that request: a new one starts a new attempt, the same one is never run twice.",
      minLength: 1,
      maxLength: 64,
    }),
    onFailure: Type.Optional(
      StringEnum(FAILURE_POLICIES, {
        description:
          "When a cluster cannot be configured during instantiation: `Rollback` (default) undoes every cluster; `Keep` leaves the others configured, reports that one and keeps retrying it.",
      }),
    ),
    retriesStopped: Type.Optional(
      Type.Boolean({ description: "Set by `stop`: clusters that failed are not retried any more." }),
    ),
    requestedAt: Type.String({ description: "When the action was asked for.", format: "date-time" }),
    requestedBy: Text("Who asked for it.", 256),
  },
  { description: "The lifecycle action the API last asked for." },
);
export type Lifecycle = Static<typeof LifecycleSchema>;

export const LogicalCloudSpecSchema = Type.Object(
  {
    description: Text("What the logical cloud is for.", 1024),
    userData1: Text("Free-form data kept for the caller.", 512),
    userData2: Text("Free-form data kept for the caller.", 512),
    level: Type.Optional(
      StringEnum(LEVELS, {
        description:
          "`1` (default, standard): a namespace, quota, users and permissions per cluster. `0` (admin): nothing is created; its kubeconfig holds each cluster's own credentials.",
      }),
    ),
    namespace: Type.Optional(
      Type.String({
        description: "The namespace made on every cluster (level 1).",
        maxLength: 63,
        pattern: DNS1123_LABEL,
      }),
    ),
    labels: Type.Optional(LabelMap("Labels the namespace carries on every cluster.")),
    user: Type.Optional(UserSchema),
    users: Type.Optional(
      ListMap(UserSchema, ["userName"], {
        description: "More users (tenantry's addition: DCM has one).",
        maxItems: 64,
      }),
    ),
    clusterReferences: Type.Optional(
      ListMap(ClusterReferenceSchema, ["name"], { description: "The clusters it spans.", maxItems: 64 }),
    ),
    userPermissions: Type.Optional(
      ListMap(UserPermissionSchema, ["name"], { description: "What its users may do.", maxItems: 64 }),
    ),
    clusterQuotas: Type.Optional(
      ListMap(ClusterQuotaSchema, ["name"], {
        description: "Its namespace's quotas on every cluster; none: the documented defaults.",
        maxItems: 16,
      }),
    ),
    kvPairs: Type.Optional(
      ListMap(KvPairSchema, ["name"], { description: "Key-value pairs kept for the caller.", maxItems: 64 }),
    ),
    lifecycle: Type.Optional(LifecycleSchema),
  },
  { description: "What the logical cloud is, and the action last asked of it." },
);
export type LogicalCloudSpec = Static<typeof LogicalCloudSpecSchema>;

export const ResourceRefSchema = Type.Object(
  {
    apiVersion: Type.String({ description: "API version.", maxLength: 128 }),
    kind: Type.String({ description: "Kind.", maxLength: 64 }),
    name: Type.String({ description: "Name.", maxLength: 253 }),
    namespace: Type.Optional(
      Type.String({ description: "Namespace, for namespaced objects.", maxLength: 63 }),
    ),
    state: StringEnum(RESOURCE_STATES, { description: "Pending, Applied, Failed or Deleted." }),
  },
  { description: "An object the logical cloud made in the cluster." },
);
export type ResourceRef = Static<typeof ResourceRefSchema>;

export const CertificateRefSchema = Type.Object(
  {
    user: Type.String({ description: "The user.", maxLength: MAX_USER_NAME }),
    notAfter: Type.String({
      description: "When the certificate the cluster signed expires.",
      format: "date-time",
    }),
  },
  { description: "A user's certificate signed by the cluster." },
);

export const ClusterEntrySchema = Type.Object(
  {
    cluster: Type.String({ description: "The registered cluster.", maxLength: 63 }),
    clusterProvider: Type.String({ description: "Its provider.", maxLength: 63 }),
    references: Type.Optional(
      Type.Array(Type.String({ description: "A reference name.", maxLength: 63 }), {
        description: "The cluster references that select it (none: it is being cleaned up).",
        maxItems: 64,
      }),
    ),
    state: StringEnum(CLUSTER_STATES, {
      description: "Pending, Applying, Ready, Failed (see reason), Removing or Removed.",
    }),
    connectivity: StringEnum(CONNECTIVITY, { description: "Unknown, Available or Retrying (DCM's)." }),
    reason: Text("Why it is not Ready, in CamelCase.", 128),
    message: Text("What happened, naming the object or request that failed.", 2048),
    since: Type.Optional(Type.String({ description: "When the state last changed.", format: "date-time" })),
    applyMs: Type.Optional(
      Type.Integer({
        description: "How long configuring it took the last time, in milliseconds.",
        format: "int64",
        minimum: 0,
      }),
    ),
    resources: Type.Optional(
      AtomicList(ResourceRefSchema, { description: "The objects made there.", maxItems: 256 }),
    ),
    certificates: Type.Optional(
      AtomicList(CertificateRefSchema, { description: "The users' certificates it signed.", maxItems: 64 }),
    ),
  },
  { description: "The logical cloud on one cluster." },
);
export type ClusterEntry = Static<typeof ClusterEntrySchema>;

export const ActionRecordSchema = Type.Object(
  {
    action: Type.Optional(
      StringEnum(LIFECYCLE_ACTIONS, { description: "What was asked: Instantiate, Update or Terminate." }),
    ),
    state: StringEnum(CLOUD_STATES, {
      description:
        "The logical cloud's state the action led to: the state it asks for only once every cluster got there (until then, and after a failure, the state before).",
    }),
    deployedStatus: Type.Optional(
      StringEnum(DEPLOYED_STATES, {
        description: "Where the action got: Instantiating, Instantiated, InstantiateFailed, Terminating, …",
      }),
    ),
    instance: Type.String({ description: "The action's instance.", maxLength: 64 }),
    time: Type.String({ description: "When it was taken up.", format: "date-time" }),
    revision: Type.Integer({ description: "metadata.generation then.", format: "int64", minimum: 0 }),
  },
  { description: "One lifecycle action (DCM's states.actions)." },
);
export type ActionRecord = Static<typeof ActionRecordSchema>;

export const LogicalCloudStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    state: Type.Optional(
      StringEnum(CLOUD_STATES, {
        description:
          "DCM's logical cloud state: the last action's once every cluster got there (Instantiated when every selected cluster is Ready, Terminated when every cluster is Removed), until then the one before; InstantiateStopped or TerminateStopped once retries are stopped.",
      }),
    ),
    deployedStatus: Type.Optional(
      StringEnum(DEPLOYED_STATES, {
        description:
          "Instantiating, Instantiated (every selected cluster is Ready, never before), InstantiateFailed, Terminating, Terminated or TerminateFailed.",
      }),
    ),
    instance: Text("The lifecycle instance this status is about.", 64),
    settledInstance: Text(
      "The instance that reached every cluster (after which a failing cluster is retried, never rolled back).",
      64,
    ),
    rolledBackInstance: Text("The instance that was rolled back.", 64),
    failure: Text("Why the instance that was rolled back failed, naming the clusters.", 2048),
    message: Text("What the logical cloud is doing or why it failed, naming clusters.", 4096),
    actions: Type.Optional(
      AtomicList(ActionRecordSchema, {
        description: "The last lifecycle actions, oldest first.",
        maxItems: 32,
      }),
    ),
    clusters: Type.Optional(
      AtomicList(ClusterEntrySchema, { description: "The logical cloud on each cluster.", maxItems: 256 }),
    ),
    credentialsSecret: Type.Optional(
      Type.String({
        description: "The Secret (in this namespace) holding the users' keys and certificates.",
        maxLength: 253,
        pattern: DNS1123_SUBDOMAIN,
      }),
    ),
    conditions: Type.Optional(ConditionList("`Ready`: every selected cluster is configured.")),
  },
  { description: "What the logical cloud controller last did, per cluster." },
);
export type LogicalCloudStatus = Static<typeof LogicalCloudStatusSchema>;

export const LogicalCloudSchema = ResourceSchema({
  description:
    "A logical cloud: a namespace, quota, users' certificates and permissions on every cluster its references select (DCM's logical cloud).",
  name: {
    description: "The logical cloud's name.",
    maxLength: MAX_LOGICAL_CLOUD_NAME,
    pattern: DNS1123_SUBDOMAIN,
  },
  spec: LogicalCloudSpecSchema,
  status: LogicalCloudStatusSchema,
});
export type LogicalCloud = Static<typeof LogicalCloudSchema>;
