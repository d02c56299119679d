import { type CustomResourceDefinition, crdValidator, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON, READY_COLUMN, USER_LABEL } from "../../tenants/index.js";
import { type NodeProvider, NodeProviderSchema } from "./node-provider.js";
import { type WorkerNode, WorkerNodeSchema } from "./worker-node.js";

/** A label key in a JSONPath: its dots escaped. */
const labelPath = (key: string) => `.metadata.labels.${key.replaceAll(".", "\\.")}`;

/**
 * `kubectl get workernodes -o wide` prints exactly CloudVeneto CaaS's columns: NAME PHASE OWNER POLICY
 * PROVIDER VM FLAVOR VM STATUS VM IPV4 AGE (the three VM columns only with -o wide).
 */
export const WORKER_NODE_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "WorkerNode",
  plural: "workernodes",
  singular: "workernode",
  shortNames: ["wn"],
  schema: WorkerNodeSchema,
  printerColumns: [
    {
      name: "Phase",
      type: "string",
      jsonPath: ".status.phase",
      description: "Where the node is in its life.",
    },
    {
      name: "Owner",
      type: "string",
      jsonPath: labelPath(USER_LABEL),
      description: "The node's owner, as their user label.",
    },
    { name: "Policy", type: "string", jsonPath: ".spec.policy", description: "private or shared." },
    { name: "Provider", type: "string", jsonPath: ".spec.provider", description: "The NodeProvider." },
    {
      name: "VM Flavor",
      type: "string",
      jsonPath: ".spec.flavor",
      description: "The machine's flavor.",
      priority: 1,
    },
    {
      name: "VM Status",
      type: "string",
      jsonPath: ".status.machine.status",
      description: "The machine's status, as the provider says it.",
      priority: 1,
    },
    {
      name: "VM IPv4",
      type: "string",
      jsonPath: ".status.machine.ipv4",
      description: "The machine's IPv4 address.",
      priority: 1,
    },
    AGE_COLUMN,
  ],
});

export const NODE_PROVIDER_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "NodeProvider",
  plural: "nodeproviders",
  singular: "nodeprovider",
  shortNames: ["nprov"],
  schema: NodeProviderSchema,
  printerColumns: [
    { name: "Type", type: "string", jsonPath: ".spec.type", description: "simulated or openstack." },
    { name: "Flavors", type: "string", jsonPath: ".status.flavorSummary", description: "What it offers." },
    READY_COLUMN,
    AGE_COLUMN,
    {
      name: "Reason",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      description: "Reason of the Ready condition.",
      priority: 1,
    },
  ],
});

export const NODES_CRDS: readonly CustomResourceDefinition[] = [NODE_PROVIDER_CRD, WORKER_NODE_CRD];

/** Schema violations with Kubernetes field paths (CEL rules are the API server's). */
export const validateWorkerNode = crdValidator<WorkerNode>(WORKER_NODE_CRD);
export const validateNodeProvider = crdValidator<NodeProvider>(NODE_PROVIDER_CRD);
