import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON, READY_COLUMN } from "../../tenants/index.js";
import { PeeringSchema } from "./peering.js";

export const PEERING_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "Peering",
  plural: "peerings",
  singular: "peering",
  shortNames: ["peer"],
  schema: PeeringSchema,
  printerColumns: [
    {
      name: "Remote ID",
      type: "string",
      jsonPath: ".spec.remoteClusterId",
      description: "Identity of the provider cluster.",
    },
    READY_COLUMN,
    {
      name: "Healthy",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Healthy")].status',
      description: "Whether the provider answered the last probe.",
    },
    {
      name: "Capacity",
      type: "string",
      jsonPath: ".status.capacitySummary",
      description: "Capacity the provider grants.",
    },
    {
      name: "Heartbeat",
      type: "date",
      jsonPath: ".status.lastHeartbeat",
      description: "When the provider last answered.",
    },
    AGE_COLUMN,
    {
      name: "Labels",
      type: "string",
      jsonPath: ".status.labelSummary",
      description: "The provider's cluster labels.",
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

export const MULTICLUSTER_CRDS: readonly CustomResourceDefinition[] = [PEERING_CRD];
