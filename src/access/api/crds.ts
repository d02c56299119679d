import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON } from "../../tenants/index.js";
import { AccessGrantSchema } from "./access-grant.js";

export const ACCESS_GRANT_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  scope: "Namespaced",
  kind: "AccessGrant",
  plural: "accessgrants",
  singular: "accessgrant",
  shortNames: ["grant"],
  schema: AccessGrantSchema,
  printerColumns: [
    {
      name: "Grantees",
      type: "string",
      jsonPath: ".spec.grantees[*].name",
      description: "Who receives the access.",
    },
    {
      name: "Resources",
      type: "string",
      jsonPath: ".spec.rules[*].resources",
      description: "Resources the grant covers.",
    },
    {
      name: "Expires",
      type: "date",
      jsonPath: ".spec.expiresAt",
      description: "When the grant stops applying.",
    },
    AGE_COLUMN,
  ],
});

export const ACCESS_CRDS: readonly CustomResourceDefinition[] = [ACCESS_GRANT_CRD];
