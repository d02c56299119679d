import { type CustomResourceDefinition, customResourceDefinition } from "../../apis/index.js";
import { AGE_COLUMN, CRD_COMMON } from "../../tenants/index.js";
import { UserSchema } from "./user.js";

export const USER_CRD: CustomResourceDefinition = customResourceDefinition({
  ...CRD_COMMON,
  kind: "User",
  plural: "users",
  singular: "user",
  shortNames: ["tusr"],
  schema: UserSchema,
  printerColumns: [
    { name: "Tenant", type: "string", jsonPath: ".spec.tenant", description: "The user's tenant." },
    {
      name: "Admin",
      type: "boolean",
      jsonPath: ".spec.tenantAdmin",
      description: "Whether the user administers their tenant.",
    },
    {
      name: "Disabled",
      type: "boolean",
      jsonPath: ".spec.disabled",
      description: "Whether the user is disabled.",
    },
    {
      name: "Last Login",
      type: "date",
      jsonPath: ".status.lastLogin",
      description: "When the user last logged in.",
    },
    AGE_COLUMN,
    {
      name: "Groups",
      type: "string",
      jsonPath: ".spec.groups",
      description: "Groups of the user.",
      priority: 1,
    },
  ],
});

export const IDENTITY_CRDS: readonly CustomResourceDefinition[] = [USER_CRD];
