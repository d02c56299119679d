/**
 * ReplicatedDeployment (Liqo thesis, chapter 7): one Deployment template replicated once per
 * combination of values that `generationLabels` take over the selected virtual nodes, each replica
 * pinned to the virtual nodes of its combination. The status summarises every replica.
 */
import type { V1DeploymentSpec } from "@kubernetes/client-node";
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  celString,
  LABEL_KEY_PATTERN,
  LabelMap,
  LabelSelector,
  ListMap,
  ListSet,
  NodeSelector,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
  StringMap,
} from "../../apis/index.js";

/** On every replica Deployment (and its pods): the ReplicatedDeployment it belongs to. */
export const REPLICATED_DEPLOYMENT_LABEL = "tenantry.dev/replicated-deployment";
/** On every replica Deployment, in its selector and on its pods: the hash of its combination. */
export const REPLICA_LABEL = "tenantry.dev/replica";
/** Length of the combination hash that suffixes replica names. */
export const REPLICA_HASH_LENGTH = 10;
/** Longest ReplicatedDeployment name: `<name>-<hash>` must stay a 63-character DNS label. */
export const MAX_REPLICATED_DEPLOYMENT_NAME = 63 - 1 - REPLICA_HASH_LENGTH;
export const MAX_GENERATION_LABELS = 8;
/** Who keeps a replica's pods: a Deployment in this cluster, or a ReplicaSet in each provider. */
export const POD_MANAGEMENT = ["Consumer", "Provider"] as const;
/** Most replicas one ReplicatedDeployment lists in its status. */
export const MAX_LISTED_REPLICAS = 1000;

const RESERVED_SELECTOR_KEY = celString(REPLICA_LABEL);

/**
 * apps/v1 DeploymentSpec, stored as written (the API server validates each replica Deployment in
 * full); `selector` and the pod template's labels are declared so that their agreement is checked here.
 */
const DeploymentSpecSchema = Type.Unsafe<V1DeploymentSpec>(
  Type.Object(
    {
      selector: LabelSelector(
        "Label selector of the pods, as in a Deployment; must match `template.metadata.labels`. tenantry adds `tenantry.dev/replica` to each replica's selector.",
      ),
      template: Type.Object(
        {
          metadata: Type.Object(
            {
              labels: LabelMap("Labels of the pods; the selector must match them."),
            },
            {
              description: "Metadata of the pods: labels (required) and annotations.",
              "x-kubernetes-preserve-unknown-fields": true,
            },
          ),
        },
        {
          description:
            "Pod template, as in a Deployment. tenantry adds to each replica's pods a required node affinity to the virtual nodes of its combination (intersected with the template's own).",
          "x-kubernetes-preserve-unknown-fields": true,
        },
      ),
    },
    {
      description:
        "Spec of every replica Deployment (apps/v1 DeploymentSpec: replicas, selector, template, strategy, …).",
      "x-kubernetes-preserve-unknown-fields": true,
      "x-kubernetes-validations": [
        {
          rule: "(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",
          message: "selector must not be empty: give matchLabels or matchExpressions",
          fieldPath: ".selector",
        },
        {
          rule: "!has(self.selector.matchLabels) || self.selector.matchLabels.all(k, k in self.template.metadata.labels && self.template.metadata.labels[k] == self.selector.matchLabels[k])",
          message: "selector.matchLabels must all appear, with the same values, in template.metadata.labels",
          fieldPath: ".selector.matchLabels",
        },
        {
          rule: `(!has(self.selector.matchLabels) || !(${RESERVED_SELECTOR_KEY} in self.selector.matchLabels)) && (!has(self.selector.matchExpressions) || self.selector.matchExpressions.all(r, r.key != ${RESERVED_SELECTOR_KEY}))`,
          message: `selector must not use ${REPLICA_LABEL}: tenantry sets it on each replica`,
          fieldPath: ".selector",
        },
      ],
    },
  ),
);

export const ReplicatedDeploymentSpecSchema = Type.Object(
  {
    template: Type.Object(
      {
        metadata: Type.Optional(
          Type.Object(
            {
              labels: Type.Optional(LabelMap("Labels of every replica Deployment.")),
              annotations: Type.Optional(
                StringMap(Type.String({ description: "Annotation value." }), {
                  description: "Annotations of every replica Deployment.",
                  maxProperties: 64,
                }),
              ),
            },
            { description: "Labels and annotations of every replica Deployment." },
          ),
        ),
        spec: DeploymentSpecSchema,
      },
      { description: "The Deployment to replicate." },
    ),
    generationLabels: Type.Optional(
      ListSet(
        Type.String({
          description: "A virtual-node label key, e.g. `topology.kubernetes.io/region`.",
          minLength: 1,
          maxLength: 317,
          pattern: LABEL_KEY_PATTERN,
        }),
        {
          description:
            "Virtual-node label keys: one replica per combination of their values over the selected virtual nodes (nodes lacking one of them get none). Empty: one replica per virtual node. Changing them creates the new replicas before removing the old ones.",
          maxItems: MAX_GENERATION_LABELS,
        },
      ),
    ),
    podManagement: Type.Optional(
      StringEnum(POD_MANAGEMENT, {
        description:
          "Who keeps each replica's pods. `Consumer` (default): a Deployment in this cluster whose pods are reflected into the providers; a provider cut off from this cluster keeps the pods it has but replaces none. `Provider`: an apps/v1 ReplicaSet in each provider's replica namespace, whose controller there keeps the declared number of pods even while the provider is cut off from this cluster; changes made meanwhile reach it when the link returns. Switching from Consumer to Provider removes the Deployment once the ReplicaSets are Available.",
      }),
    ),
    selectedClusters: Type.Optional(
      NodeSelector(
        "Which virtual nodes (peered clusters) may hold a replica, on top of the namespace's NamespaceOffloading clusterSelector: node selector terms over their labels. Absent: every cluster the namespace is offloaded to.",
      ),
    ),
  },
  { description: "The Deployment to replicate and where." },
);
export type ReplicatedDeploymentSpec = Static<typeof ReplicatedDeploymentSpecSchema>;

const DeploymentConditionSchema = Type.Object(
  {
    type: Type.String({ description: "`Available`, `Progressing` or `ReplicaFailure`.", maxLength: 316 }),
    status: Type.String({ description: "True, False or Unknown.", maxLength: 16 }),
    reason: Type.Optional(Type.String({ description: "One CamelCase word.", maxLength: 1024 })),
    message: Type.Optional(Type.String({ description: "What happened, for people.", maxLength: 32768 })),
    lastUpdateTime: Type.Optional(
      Type.String({ description: "When the condition was last updated.", format: "date-time" }),
    ),
    lastTransitionTime: Type.Optional(
      Type.String({ description: "When the status last changed.", format: "date-time" }),
    ),
  },
  {
    description:
      "The Deployment's last condition that tells its state: its most recently updated failing one (Available or Progressing False, ReplicaFailure True), else Available.",
  },
);
export type DeploymentConditionSummary = Static<typeof DeploymentConditionSchema>;

const ReplicaStatusSchema = Type.Object(
  {
    name: Type.String({
      description:
        "Name of the replica Deployment (same namespace); with podManagement Provider, the name its ReplicaSets in the providers start with.",
      maxLength: 63,
    }),
    generationLabelsValues: Type.Optional(
      StringMap(Type.String({ description: "Label value." }), {
        description: "The combination: each generation label's value. Empty with node granularity.",
      }),
    ),
    virtualNodes: Type.Optional(
      Type.Array(Type.String({ description: "A virtual node name.", maxLength: 253 }), {
        description: "The virtual nodes of the combination, where the replica's pods may run.",
        maxItems: MAX_LISTED_REPLICAS,
      }),
    ),
    replicas: Type.Optional(
      Type.Integer({ description: "Pods the Deployment wants.", format: "int32", minimum: 0 }),
    ),
    readyReplicas: Type.Optional(
      Type.Integer({ description: "Ready pods of the Deployment.", format: "int32", minimum: 0 }),
    ),
    available: Type.Boolean({
      description: "Whether the Deployment exists, has seen its latest spec and reports Available=True.",
    }),
    obsolete: Type.Optional(
      Type.Boolean({
        description:
          "The combination no longer exists; the replica is removed once every current replica is Available.",
      }),
    ),
    lastCondition: Type.Optional(DeploymentConditionSchema),
    error: Type.Optional(
      Type.String({ description: "Why the replica could not be created or updated.", maxLength: 4096 }),
    ),
  },
  { description: "One replica Deployment." },
);
export type ReplicaStatus = Static<typeof ReplicaStatusSchema>;

export const ReplicatedDeploymentStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    conditions: Type.Optional(
      ConditionList(
        "`Ready`: every replica exists and is Available (reasons when not: NamespaceNotOffloaded, LocalOnlyOffloading, NoClusterSelected, InvalidSpec, ReplicaFailed, ReplicasNotAvailable).",
      ),
    ),
    deploymentCount: Type.Optional(
      Type.Integer({
        description: "Replica Deployments wanted (one per combination).",
        format: "int32",
        minimum: 0,
      }),
    ),
    availableDeploymentCount: Type.Optional(
      Type.Integer({
        description: "Wanted replica Deployments that are Available.",
        format: "int32",
        minimum: 0,
      }),
    ),
    deployments: Type.Optional(
      ListMap(ReplicaStatusSchema, ["name"], {
        description: "Every replica Deployment: its combination, virtual nodes and last condition.",
        maxItems: MAX_LISTED_REPLICAS,
      }),
    ),
  },
  { description: "Observed state of the replicas, written by the replication controller." },
);
export type ReplicatedDeploymentStatus = Static<typeof ReplicatedDeploymentStatusSchema>;

export const ReplicatedDeploymentSchema = ResourceSchema({
  description:
    "A Deployment replicated over peered clusters: one replica Deployment per combination of the generation labels' values over the selected virtual nodes, each pinned to its nodes.",
  name: {
    description: `Name of the ReplicatedDeployment; replicas are \`<name>-<hash>\`, hence at most ${MAX_REPLICATED_DEPLOYMENT_NAME} characters.`,
    maxLength: MAX_REPLICATED_DEPLOYMENT_NAME,
    pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
  },
  spec: ReplicatedDeploymentSpecSchema,
  status: ReplicatedDeploymentStatusSchema,
});
export type ReplicatedDeployment = Static<typeof ReplicatedDeploymentSchema>;
