import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON, READY_COLUMN } from "../../tenants/index.js";
import { RuntimeSchema } from "./runtime.js";
import { RuntimeServiceSchema } from "./runtime-service.js";

export const RUNTIME_SERVICE_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "RuntimeService",
  plural: "runtimeservices",
  singular: "runtimeservice",
  shortNames: ["rtsvc"],
  schema: RuntimeServiceSchema,
  printerColumns: [
    {
      name: "Plugin",
      type: "string",
      jsonPath: ".spec.plugin.builtin",
      description: "Built-in plugin, if any.",
    },
    { name: "Mode", type: "string", jsonPath: ".spec.namespaceMode", description: "Namespace mode." },
    { name: "Cluster", type: "string", jsonPath: ".spec.cluster.name", description: "Runtimes cluster." },
    READY_COLUMN,
    AGE_COLUMN,
  ],
});

export const RUNTIME_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  scope: "Namespaced",
  kind: "Runtime",
  plural: "runtimes",
  singular: "runtime",
  shortNames: ["rt"],
  schema: RuntimeSchema,
  printerColumns: [
    { name: "User", type: "string", jsonPath: ".spec.user", description: "The runtime's user." },
    { name: "Service", type: "string", jsonPath: ".spec.service", description: "The service." },
    { name: "Instance", type: "string", jsonPath: ".spec.instance", description: "The instance." },
    { name: "Phase", type: "string", jsonPath: ".status.phase", description: "Where it is in its life." },
    AGE_COLUMN,
    { name: "Reason", type: "string", jsonPath: ".status.reason", description: "Why.", priority: 1 },
    {
      name: "Cluster",
      type: "string",
      jsonPath: ".status.cluster",
      description: "Where it runs.",
      priority: 1,
    },
    {
      name: "Last Activity",
      type: "date",
      jsonPath: ".status.lastActivity",
      description: "Last request through the proxy.",
      priority: 1,
    },
  ],
});

export const RUNTIMES_CRDS: readonly CustomResourceDefinition[] = [RUNTIME_SERVICE_CRD, RUNTIME_CRD];
