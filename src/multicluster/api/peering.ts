/**
 * Peering: this cluster (the consumer) may use a share of another cluster (the provider). The
 * provider gave it a tenant of its own, bounded in namespaces and resources, and signed a client
 * certificate for it; the consumer shows the provider as one virtual node.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DnsLabel,
  DnsSubdomain,
  LabelMap,
  ObservedGeneration,
  ResourceList,
  ResourceSchema,
} from "../../apis/index.js";

/** Longest remote cluster name: the virtual node `tenantry-<name>` and tenant `peer-<name>` must stay DNS labels. */
export const MAX_CLUSTER_NAME = 50;

export const PeeringSpecSchema = Type.Object(
  {
    remoteClusterId: Type.String({
      description:
        "Identity of the provider cluster (its tenantry-cluster-identity ConfigMap), checked at every connection.",
      minLength: 1,
      maxLength: 64,
      pattern: "^[A-Za-z0-9][-A-Za-z0-9_.]*$",
    }),
    remoteClusterName: DnsLabel({
      description:
        "Name the provider cluster's administrator gave it; the virtual node is `tenantry-<name>`.",
      maxLength: MAX_CLUSTER_NAME,
    }),
    labels: Type.Optional(
      LabelMap(
        "The provider's cluster labels (region, provider, security policy, hardware), exchanged at peering and carried by the virtual node.",
      ),
    ),
    kubeconfigSecretRef: Type.Object(
      {
        name: DnsSubdomain({
          description: "Name of a Secret in tenantry's namespace (tenantry-system) holding key `kubeconfig`.",
        }),
      },
      {
        description:
          "Where the credentials for the provider are: a kubeconfig whose client certificate the provider signed for this cluster only.",
      },
    ),
    namespaceQuota: Type.Integer({
      description:
        "How many namespaces this cluster may create in the provider (its tenant's namespaceQuota).",
      format: "int32",
      minimum: 1,
      maximum: 10000,
    }),
    resources: ResourceList(
      "Capacity the provider grants (its tenant's quota), e.g. `cpu: 8`, `memory: 16Gi`, `pods: 100`; the virtual node's capacity and allocatable.",
    ),
  },
  { description: "The provider cluster and what it grants." },
);
export type PeeringSpec = Static<typeof PeeringSpecSchema>;

export const PeeringStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    conditions: Type.Optional(
      ConditionList(
        "`Ready`: the virtual node is in place and the provider answers as the cluster it claims to be; `Healthy`: the last probe of the provider's /readyz succeeded.",
      ),
    ),
    lastHeartbeat: Type.Optional(
      Type.String({ description: "When the provider last answered a probe.", format: "date-time" }),
    ),
    virtualNode: Type.Optional(
      Type.String({ description: "Name of the virtual node standing for the provider.", maxLength: 63 }),
    ),
    credentialsExpireAt: Type.Optional(
      Type.String({
        description: "When the client certificate for the provider expires.",
        format: "date-time",
      }),
    ),
    capacitySummary: Type.Optional(
      Type.String({
        description: "The granted capacity on one line, e.g. `cpu=8, memory=16Gi, pods=100`.",
        maxLength: 1024,
      }),
    ),
    labelSummary: Type.Optional(
      Type.String({ description: "The provider's labels on one line.", maxLength: 4096 }),
    ),
  },
  { description: "Observed state of the peering, written by the peering controller." },
);
export type PeeringStatus = Static<typeof PeeringStatusSchema>;

export const PeeringSchema = ResourceSchema({
  description:
    "A peering with a provider cluster: credentials for a tenant of this cluster's own there, and the virtual node that stands for it here.",
  name: {
    description: "The provider's cluster name.",
    maxLength: MAX_CLUSTER_NAME,
    pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
  },
  spec: PeeringSpecSchema,
  status: PeeringStatusSchema,
});
export type Peering = Static<typeof PeeringSchema>;
