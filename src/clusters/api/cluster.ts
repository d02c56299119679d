/**
 * A registered cluster: one cluster-scoped object per Kubernetes cluster tenantry may configure.
 * Its labels are the object's own `metadata.labels` (so `kubectl get clusters -l …` and label
 * selectors work on them directly); its credentials are a kubeconfig in a Secret; its status is
 * what the registry's probe last saw.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DNS1123_LABEL,
  DnsLabel,
  DnsSubdomain,
  ObservedGeneration,
  ResourceList,
  ResourceSchema,
} from "../../apis/index.js";

/** Registered cluster names are DNS labels: they end up in label values, Secret and context names. */
export const MAX_REGISTERED_CLUSTER_NAME = 63;
/** What a cluster is filed under when no provider is named (DCM's `clusterProvider`). */
export const DEFAULT_CLUSTER_PROVIDER = "tenantry";
/** Key of the kubeconfig in a registered cluster's Secret. */
export const CLUSTER_KUBECONFIG_KEY = "kubeconfig";

export const ClusterSpecSchema = Type.Object(
  {
    provider: Type.Optional(
      DnsLabel({
        description:
          "The cluster provider this cluster is filed under (DCM's `clusterProvider`); default `tenantry`. A logical cloud's cluster reference may name it.",
      }),
    ),
    description: Type.Optional(
      Type.String({ description: "What the cluster is for, in a sentence.", maxLength: 1024 }),
    ),
    kubeconfigSecretRef: Type.Object(
      {
        name: DnsSubdomain({
          description: "Name of a Secret in tenantry's namespace (tenantry-system) holding key `kubeconfig`.",
        }),
      },
      {
        description:
          "Where the credentials are: a self-contained kubeconfig whose current context administers the cluster.",
      },
    ),
  },
  { description: "Where the cluster is and how to reach it; its labels are the object's metadata.labels." },
);
export type ClusterSpec = Static<typeof ClusterSpecSchema>;

export const UserCaSchema = Type.Object(
  {
    subject: Type.String({ description: "Subject of the first CA certificate.", maxLength: 1024 }),
    notAfter: Type.String({ description: "When that certificate expires.", format: "date-time" }),
    sha256: Type.String({
      description: "SHA-256 fingerprint of that certificate (hex, colon-separated).",
      maxLength: 128,
    }),
    pem: Type.String({
      description:
        "The CA bundle kube-apiserver trusts for client certificates (kube-system/extension-apiserver-authentication `client-ca-file`): the users' certificates the cluster signs chain to it.",
      maxLength: 65536,
    }),
  },
  { description: "The certificate authority that signs the cluster's users." },
);
export type UserCa = Static<typeof UserCaSchema>;

export const ClusterStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    conditions: Type.Optional(
      ConditionList(
        "`Ready`: the cluster answered the last probe (`/readyz` with its registered credentials).",
      ),
    ),
    server: Type.Optional(Type.String({ description: "The API server URL.", maxLength: 2048 })),
    version: Type.Optional(
      Type.String({ description: "kube-apiserver's version (`/version` gitVersion).", maxLength: 128 }),
    ),
    clusterId: Type.Optional(
      Type.String({
        description:
          "The cluster's tenantry identity (ConfigMap tenantry-system/tenantry-cluster-identity), when tenantry runs there: how peerings find this entry.",
        maxLength: 64,
      }),
    ),
    nodes: Type.Optional(Type.Integer({ description: "Number of nodes.", format: "int32", minimum: 0 })),
    capacity: Type.Optional(
      ResourceList("Allocatable resources summed over the nodes (cpu, memory, pods).", { checkNames: false }),
    ),
    capacitySummary: Type.Optional(
      Type.String({
        description: "The capacity on one line, e.g. `cpu=24, memory=96Gi, pods=330`.",
        maxLength: 1024,
      }),
    ),
    userCa: Type.Optional(UserCaSchema),
    lastProbeTime: Type.Optional(
      Type.String({
        description: "When the cluster was last probed (written at most every heartbeat).",
        format: "date-time",
      }),
    ),
    lastHeartbeat: Type.Optional(
      Type.String({ description: "When the cluster last answered a probe.", format: "date-time" }),
    ),
  },
  { description: "What the registry's probe last saw of the cluster." },
);
export type ClusterStatus = Static<typeof ClusterStatusSchema>;

export const ClusterSchema = ResourceSchema({
  description:
    "A registered cluster: labels (metadata.labels), credentials in a Secret, health, capacity, version and user CA. Logical clouds and peerings take cluster identity and labels from here.",
  name: {
    description: "The cluster's name in the registry.",
    maxLength: MAX_REGISTERED_CLUSTER_NAME,
    pattern: DNS1123_LABEL,
  },
  spec: ClusterSpecSchema,
  status: ClusterStatusSchema,
});
export type Cluster = Static<typeof ClusterSchema>;
