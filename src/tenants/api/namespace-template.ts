// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${name}` is the template placeholder syntax, not a mistaken template literal.
/**
 * NamespaceTemplate: Kubernetes objects rendered into every tenant namespace that references the
 * template, with placeholders filled in per tenant and namespace.
 */
import type { V1ObjectMeta } from "@kubernetes/client-node";
import { type Static, Type } from "@sinclair/typebox";
import {
  ConditionList,
  DNS1123_SUBDOMAIN,
  ListMap,
  ObservedGeneration,
  ResourceSchema,
} from "../../apis/index.js";

/** Placeholders every template may use, whatever it declares. */
export const BUILTIN_TEMPLATE_PARAMETERS = ["tenant", "namespace"] as const;

/** Parameter names, usable as `${name}` placeholders. */
export const TEMPLATE_PARAMETER_PATTERN = "^[A-Za-z_][A-Za-z0-9_]*$";

const ParameterSchema = Type.Object(
  {
    name: Type.String({
      description:
        "Parameter name, used as `${name}` in the objects. `tenant` and `namespace` are built in and cannot be declared.",
      minLength: 1,
      maxLength: 63,
      pattern: TEMPLATE_PARAMETER_PATTERN,
    }),
    default: Type.Optional(
      Type.String({
        description:
          "Value used when a tenant's template reference gives none; without a default the value is required.",
        maxLength: 4096,
      }),
    ),
    description: Type.Optional(
      Type.String({
        description: "What the parameter is for, for the people filling it in.",
        maxLength: 1024,
      }),
    ),
  },
  {
    description: "A parameter the template's objects use as `${name}`.",
    "x-kubernetes-validations": [
      {
        rule: `!(self.name in [${BUILTIN_TEMPLATE_PARAMETERS.map((p) => `'${p}'`).join(", ")}])`,
        message: "tenant and namespace are built-in parameters and cannot be declared",
        fieldPath: ".name",
      },
    ],
  },
);
export type TemplateParameter = Static<typeof ParameterSchema>;

/** An object of a template: any namespaced Kubernetes object. */
export interface TemplateObject {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta;
  [field: string]: unknown;
}

const TemplateObjectSchema = Type.Unsafe<TemplateObject>(
  Type.Object(
    {
      apiVersion: Type.String({
        description: "API version of the object, e.g. `rbac.authorization.k8s.io/v1`.",
      }),
      kind: Type.String({ description: "Kind of the object, e.g. `RoleBinding`." }),
      metadata: Type.Object(
        {},
        {
          description:
            "Object metadata, validated like any object's: placeholders may appear in the name and in annotations but not in labels. The namespace is always the tenant namespace, and tenantry adds the tenant's labels itself.",
        },
      ),
    },
    {
      description:
        "A namespaced Kubernetes object, stored as written. `${tenant}`, `${namespace}` and the declared parameters are replaced in metadata.name, annotations and every string outside metadata.",
      "x-kubernetes-embedded-resource": true,
      "x-kubernetes-preserve-unknown-fields": true,
    },
  ),
);

export const NamespaceTemplateSpecSchema = Type.Object(
  {
    parameters: Type.Optional(
      ListMap(ParameterSchema, ["name"], {
        description: "Parameters the objects use besides the built-in `${tenant}` and `${namespace}`.",
        maxItems: 32,
      }),
    ),
    objects: Type.Array(TemplateObjectSchema, {
      description:
        "Objects created in each namespace using the template (RoleBinding, NetworkPolicy, ResourceQuota, LimitRange, ConfigMap, …). Changing them updates every such namespace.",
      minItems: 1,
      maxItems: 64,
    }),
  },
  { description: "Desired state of the template." },
);
export type NamespaceTemplateSpec = Static<typeof NamespaceTemplateSpecSchema>;

export const NamespaceTemplateStatusSchema = Type.Object(
  {
    observedGeneration: ObservedGeneration(),
    conditions: Type.Optional(
      ConditionList(
        "Current state: `Ready` is True when every namespace using the template has its current objects.",
      ),
    ),
    namespaceCount: Type.Optional(
      Type.Integer({
        description: "Number of namespaces the template is rendered into.",
        format: "int32",
        minimum: 0,
      }),
    ),
  },
  { description: "Observed state of the template, written by the tenant controller." },
);
export type NamespaceTemplateStatus = Static<typeof NamespaceTemplateStatusSchema>;

export const NamespaceTemplateSchema = ResourceSchema({
  description:
    "A NamespaceTemplate lists objects created in every tenant namespace that references it, with `${tenant}`, `${namespace}` and declared parameters filled in.",
  name: { description: "Template name.", maxLength: 253, pattern: DNS1123_SUBDOMAIN },
  spec: NamespaceTemplateSpecSchema,
  status: NamespaceTemplateStatusSchema,
});
export type NamespaceTemplate = Static<typeof NamespaceTemplateSchema>;
