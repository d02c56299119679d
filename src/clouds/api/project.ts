/**
 * A project (DCM's top-level grouping): who administers it, and the namespace on the registry's
 * cluster that holds its logical clouds, so that RBAC there says who may manage them.
 */
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DNS1123_LABEL,
  ObservedGeneration,
  ResourceSchema,
  StringEnum,
} from "../../apis/index.js";

/** `tenantry-project-<name>` must stay a namespace name (a DNS label). */
export const MAX_PROJECT_NAME = 46;
export const PROJECT_NAMESPACE_PREFIX = "tenantry-project-";

export function projectNamespace(project: string): string {
  return `${PROJECT_NAMESPACE_PREFIX}${project}`;
}

const Text = (description: string, maxLength: number) =>
  Type.Optional(Type.String({ description, maxLength }));

export const ProjectAdminSchema = Type.Object(
  {
    kind: StringEnum(["User", "Group"], { description: "`User` or `Group`." }),
    name: Type.String({
      description: "User or group name as the cluster authenticates it.",
      minLength: 1,
      maxLength: 256,
    }),
  },
  { description: "Someone who may manage the project's logical clouds." },
);
export type ProjectAdmin = Static<typeof ProjectAdminSchema>;

export const ProjectSpecSchema = Type.Object(
  {
    description: Text("What the project is for.", 1024),
    userData1: Text("Free-form data kept for the caller (DCM's userData1).", 512),
    userData2: Text("Free-form data kept for the caller (DCM's userData2).", 512),
    admins: Type.Optional(
      Type.Array(ProjectAdminSchema, {
        description:
          "Who may manage the project's logical clouds: bound to ClusterRole tenantry:logical-clouds-admin in the project's namespace.",
        maxItems: 64,
      }),
    ),
  },
  { description: "The project's description and administrators." },
);
export type ProjectSpec = Static<typeof ProjectSpecSchema>;

export const ProjectStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    namespace: Type.Optional(
      Type.String({ description: "The namespace holding the project's logical clouds.", maxLength: 63 }),
    ),
    conditions: Type.Optional(
      ConditionList("`Ready`: the namespace and its administrators' binding are in place."),
    ),
  },
  { description: "Observed state of the project." },
);

export const ProjectSchema = ResourceSchema({
  description: "A project: a group of logical clouds and who administers them (DCM's project).",
  name: { description: "The project's name.", maxLength: MAX_PROJECT_NAME, pattern: DNS1123_LABEL },
  spec: ProjectSpecSchema,
  status: ProjectStatusSchema,
});
export type Project = Static<typeof ProjectSchema>;
