/**
 * NamespaceOffloading (in the namespace to offload: where its pods may run and how the remote
 * namespaces are named) and NamespaceMap (one per peer: which local namespaces that peer must
 * hold, and what it holds). The NamespaceMap status is the source of truth about remote namespaces.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DnsLabel,
  NodeSelector,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
  StringMap,
} from "../../apis/index.js";

/** Every namespace holds at most one NamespaceOffloading, and it has this name. */
export const NAMESPACE_OFFLOADING_NAME = "offloading";

export const MAPPING_STRATEGIES = ["DefaultName", "EnforceSameName", "SelectedName"] as const;
export type NamespaceMappingStrategy = (typeof MAPPING_STRATEGIES)[number];
export const POD_OFFLOADING_STRATEGIES = ["LocalAndRemote", "Local", "Remote"] as const;
export type PodOffloadingStrategy = (typeof POD_OFFLOADING_STRATEGIES)[number];
export const OFFLOADING_PHASES = [
  "Ready",
  "NoClusterSelected",
  "InProgress",
  "SomeFailed",
  "AllFailed",
  "Terminating",
] as const;
export type OffloadingPhase = (typeof OFFLOADING_PHASES)[number];
export const MAPPING_PHASES = ["Accepted", "CreationLoopBackOff", "Terminating"] as const;
export type MappingPhase = (typeof MAPPING_PHASES)[number];

export const NamespaceOffloadingSpecSchema = Type.Object(
  {
    namespaceMappingStrategy: Type.Optional(
      StringEnum(MAPPING_STRATEGIES, {
        description:
          "How remote namespaces are named: `DefaultName` (default) the local name followed by this cluster's id; `EnforceSameName` the local name; `SelectedName` the name in `remoteNamespaceName`. Cannot change after creation.",
        default: "DefaultName",
        "x-kubernetes-validations": [
          { rule: "self == oldSelf", message: "namespaceMappingStrategy cannot change after creation" },
        ],
      }),
    ),
    remoteNamespaceName: Type.Optional(
      DnsLabel({
        description: "Name of the remote namespaces with `SelectedName`. Cannot change after creation.",
        maxLength: 63,
        "x-kubernetes-validations": [
          { rule: "self == oldSelf", message: "remoteNamespaceName cannot change after creation" },
        ],
      }),
    ),
    podOffloadingStrategy: Type.Optional(
      StringEnum(POD_OFFLOADING_STRATEGIES, {
        description:
          "Where the namespace's pods may run: `LocalAndRemote` (default) on local nodes and on the selected clusters' virtual nodes; `Local` only on local nodes; `Remote` only on the selected clusters.",
        default: "LocalAndRemote",
      }),
    ),
    clusterSelector: Type.Optional(
      NodeSelector(
        "Which peered clusters hold a replica of the namespace: node selector terms over the virtual nodes' labels (the providers' cluster labels). Empty selects every peered cluster.",
      ),
    ),
  },
  {
    description: "Where the namespace is offloaded and how.",
    "x-kubernetes-validations": [
      {
        rule: "has(self.namespaceMappingStrategy) && self.namespaceMappingStrategy == 'SelectedName' ? has(self.remoteNamespaceName) : !has(self.remoteNamespaceName)",
        message:
          "remoteNamespaceName is required with namespaceMappingStrategy SelectedName and not allowed otherwise",
        fieldPath: ".remoteNamespaceName",
      },
      {
        rule: "has(self.remoteNamespaceName) == has(oldSelf.remoteNamespaceName)",
        message: "remoteNamespaceName cannot be added or removed after creation",
        fieldPath: ".remoteNamespaceName",
      },
    ],
  },
);
export type NamespaceOffloadingSpec = Static<typeof NamespaceOffloadingSpecSchema>;

const RemoteNamespaceConditionSchema = Type.Object(
  {
    type: StringEnum(["Ready", "OffloadingRequired"], {
      description:
        "`Ready`: the remote namespace exists and is healthy; `OffloadingRequired`: the cluster is selected and must hold a replica.",
    }),
    status: StringEnum(["True", "False", "Unknown"], { description: "True, False or Unknown." }),
    lastTransitionTime: Type.Optional(
      Type.String({ description: "When the status last changed.", format: "date-time" }),
    ),
    reason: Type.Optional(Type.String({ description: "One CamelCase word.", maxLength: 1024 })),
    message: Type.Optional(Type.String({ description: "What happened, for people.", maxLength: 32768 })),
  },
  { description: "A condition of the replica in one remote cluster." },
);
export type RemoteNamespaceCondition = Static<typeof RemoteNamespaceConditionSchema>;

export const NamespaceOffloadingStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    offloadingPhase: Type.Optional(
      StringEnum(OFFLOADING_PHASES, {
        description:
          "`Ready` every selected cluster holds its replica; `NoClusterSelected` no peered cluster matches (or the spec cannot be met); `InProgress` replicas are being created; `SomeFailed` / `AllFailed` some / every replica could not be created or is unhealthy; `Terminating` the replicas are being removed.",
      }),
    ),
    remoteNamespaceName: Type.Optional(
      Type.String({ description: "Name of the namespace in the remote clusters.", maxLength: 253 }),
    ),
    remoteNamespacesConditions: Type.Optional(
      StringMap(
        Type.Array(RemoteNamespaceConditionSchema, {
          description: "Ready and OffloadingRequired for the replica in that cluster.",
          maxItems: 2,
        }),
        { description: "Per peered cluster (by name): the replica's conditions." },
      ),
    ),
    conditions: Type.Optional(
      ConditionList(
        "`Ready`: every selected cluster holds a healthy replica; the message says which do not.",
      ),
    ),
  },
  { description: "Observed state of the offloading, gathered from the NamespaceMaps." },
);
export type NamespaceOffloadingStatus = Static<typeof NamespaceOffloadingStatusSchema>;

export const NamespaceOffloadingSchema = ResourceSchema({
  description:
    "Offloads the namespace it sits in to peered clusters chosen by their labels: replicas of the namespace there, pods scheduled by the chosen strategy.",
  name: {
    description: `Always \`${NAMESPACE_OFFLOADING_NAME}\`: one per namespace.`,
    pattern: `^${NAMESPACE_OFFLOADING_NAME}$`,
  },
  spec: NamespaceOffloadingSpecSchema,
  status: NamespaceOffloadingStatusSchema,
});
export type NamespaceOffloading = Static<typeof NamespaceOffloadingSchema>;

const CurrentMappingSchema = Type.Object(
  {
    remoteNamespace: Type.String({
      description: "Name of the namespace in the remote cluster.",
      maxLength: 253,
    }),
    phase: StringEnum(MAPPING_PHASES, {
      description:
        "`Accepted` the remote namespace exists and is healthy; `CreationLoopBackOff` it could not be created (or is gone) and creation is retried; `Terminating` it is being deleted.",
    }),
    message: Type.Optional(Type.String({ description: "Why it is not Accepted.", maxLength: 4096 })),
    lastTransitionTime: Type.Optional(
      Type.String({ description: "When the phase last changed.", format: "date-time" }),
    ),
  },
  { description: "The replica of one local namespace in the remote cluster." },
);
export type CurrentMapping = Static<typeof CurrentMappingSchema>;

export const NamespaceMapSpecSchema = Type.Object(
  {
    desiredMapping: Type.Optional(
      StringMap(DnsLabel({ description: "Remote namespace name.", maxLength: 63 }), {
        description:
          "Local namespace → remote namespace: the replicas the peer must hold. Written by the offloading controller.",
        maxProperties: 10000,
      }),
    ),
  },
  { description: "Which local namespaces this peer must replicate." },
);
export type NamespaceMapSpec = Static<typeof NamespaceMapSpecSchema>;

export const NamespaceMapStatusSchema = Type.Object(
  {
    currentMapping: Type.Optional(
      StringMap(CurrentMappingSchema, {
        description: "Local namespace → its replica in the peer, as last observed.",
        maxProperties: 10000,
      }),
    ),
  },
  { description: "The replicas the peer holds. Written by the namespace-map controller." },
);
export type NamespaceMapStatus = Static<typeof NamespaceMapStatusSchema>;

export const NamespaceMapSchema = ResourceSchema({
  description:
    "The namespaces one peered cluster replicates for this cluster: desired (spec) and current (status). Named after the Peering.",
  spec: NamespaceMapSpecSchema,
  status: NamespaceMapStatusSchema,
});
export type NamespaceMap = Static<typeof NamespaceMapSchema>;
