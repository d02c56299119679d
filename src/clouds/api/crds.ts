import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON, READY_COLUMN } from "../../tenants/index.js";
import { LogicalCloudSchema } from "./logical-cloud.js";
import { ProjectSchema } from "./project.js";

export const PROJECT_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "Project",
  plural: "projects",
  singular: "project",
  schema: ProjectSchema,
  printerColumns: [
    {
      name: "Namespace",
      type: "string",
      jsonPath: ".status.namespace",
      description: "Where its logical clouds are.",
    },
    READY_COLUMN,
    AGE_COLUMN,
    {
      name: "Description",
      type: "string",
      jsonPath: ".spec.description",
      description: "What it is for.",
      priority: 1,
    },
  ],
});

export const LOGICAL_CLOUD_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  scope: "Namespaced",
  kind: "LogicalCloud",
  plural: "logicalclouds",
  singular: "logicalcloud",
  shortNames: ["lc"],
  schema: LogicalCloudSchema,
  printerColumns: [
    { name: "Level", type: "string", jsonPath: ".spec.level", description: "0 (admin) or 1 (standard)." },
    {
      name: "Namespace",
      type: "string",
      jsonPath: ".spec.namespace",
      description: "The namespace on every cluster.",
    },
    {
      name: "State",
      type: "string",
      jsonPath: ".status.state",
      description: "The last action (DCM's state).",
    },
    {
      name: "Deployed",
      type: "string",
      jsonPath: ".status.deployedStatus",
      description:
        "Instantiating, Instantiated, InstantiateFailed, Terminating, Terminated, TerminateFailed.",
    },
    READY_COLUMN,
    AGE_COLUMN,
    {
      name: "Message",
      type: "string",
      jsonPath: ".status.message",
      description: "What it is doing.",
      priority: 1,
    },
  ],
});

export const CLOUDS_CRDS: readonly CustomResourceDefinition[] = [PROJECT_CRD, LOGICAL_CLOUD_CRD];
