import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON, READY_COLUMN } from "../../tenants/index.js";
import { MonitorRuleSchema } from "./monitor-rule.js";

export const MONITOR_RULE_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "MonitorRule",
  plural: "monitorrules",
  singular: "monitorrule",
  shortNames: ["mrule"],
  schema: MonitorRuleSchema,
  printerColumns: [
    { name: "Object", type: "string", jsonPath: ".spec.object", description: "The kind watched." },
    { name: "Condition", type: "string", jsonPath: ".spec.condition", description: "What fires." },
    { name: "Tenant", type: "string", jsonPath: ".spec.tenant", description: "Only this tenant." },
    { name: "Firing", type: "integer", jsonPath: ".status.firing", description: "Alerts firing now." },
    READY_COLUMN,
    AGE_COLUMN,
  ],
});

export const MONITOR_CRDS: readonly CustomResourceDefinition[] = [MONITOR_RULE_CRD];
