import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON, READY_COLUMN } from "../../tenants/index.js";
import { ClusterSchema } from "./cluster.js";

export const CLUSTER_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "Cluster",
  plural: "clusters",
  singular: "cluster",
  shortNames: ["tcl"],
  schema: ClusterSchema,
  printerColumns: [
    {
      name: "Provider",
      type: "string",
      jsonPath: ".spec.provider",
      description: "The cluster provider it is filed under.",
    },
    READY_COLUMN,
    {
      name: "Version",
      type: "string",
      jsonPath: ".status.version",
      description: "kube-apiserver's version.",
    },
    { name: "Nodes", type: "integer", jsonPath: ".status.nodes", description: "Number of nodes." },
    {
      name: "Capacity",
      type: "string",
      jsonPath: ".status.capacitySummary",
      description: "Allocatable resources summed over the nodes.",
    },
    {
      name: "Heartbeat",
      type: "date",
      jsonPath: ".status.lastHeartbeat",
      description: "When the cluster last answered a probe.",
    },
    AGE_COLUMN,
    {
      name: "Server",
      type: "string",
      jsonPath: ".status.server",
      description: "API server URL.",
      priority: 1,
    },
    {
      name: "Reason",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      description: "Reason of the Ready condition.",
      priority: 1,
    },
  ],
});

export const CLUSTERS_CRDS: readonly CustomResourceDefinition[] = [CLUSTER_CRD];
