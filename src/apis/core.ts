/**
 * Schemas of Kubernetes core types that tenantry's custom resources embed (quantities, resource
 * lists, conditions, selectors, tolerations, RBAC rules). They mirror the upstream types' fields,
 * names and limits, so a field reads the same in a tenantry object as in a Pod or ResourceQuota.
 */
import type { V1ObjectMeta } from "@kubernetes/client-node";
import {
  type Static,
  type TObject,
  type TOptional,
  type TProperties,
  type TSchema,
  type TString,
  type TUnsafe,
  Type,
} from "@sinclair/typebox";
import {
  celString,
  DNS1123_SUBDOMAIN,
  type FieldOptions,
  IntOrString,
  ListMap,
  StringEnum,
  StringMap,
  type ValidationRule,
} from "./schema.js";

/**
 * A non-negative quantity as tenantry can compute with it: Kubernetes' suffixes, and a decimal
 * exponent of at most two digits (Kubernetes' own exponent is a whole number; a larger one names
 * nothing a quota could mean and would make every admission do arithmetic on huge numbers).
 */
export const QUANTITY_PATTERN =
  "^\\+?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?[0-9]{1,2}))?$";

/** Resource names as ResourceQuota accepts them: `cpu`, `requests.memory`, `count/deployments.apps`, `requests.dummy/dummyResource`. */
export const RESOURCE_NAME_PATTERN =
  "^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9](/([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";

/** resource.Quantity without a sign: an amount can never be negative. */
export function Quantity(description: string): TUnsafe<number | string> {
  return IntOrString({ description, pattern: QUANTITY_PATTERN, minimum: 0 });
}

const MAX_RESOURCES = 64;
const MAX_RESOURCE_NAME = 253;

/**
 * A ResourceList (`hard`, `used`, LimitRange `max` …): resource name → quantity. Resource names
 * are checked by a CEL rule unless `checkNames` is false: lists written only by controllers (in
 * status) skip it, since the API server bounds the total cost of a schema's rules.
 */
export function ResourceList(description: string, { checkNames = true }: { checkNames?: boolean } = {}) {
  return StringMap(
    Quantity(
      "Amount of the resource: a Kubernetes quantity such as `500m`, `2`, `4Gi`, or an integer for counts.",
    ),
    {
      description,
      maxProperties: MAX_RESOURCES,
      ...(checkNames
        ? {
            "x-kubernetes-validations": [
              {
                rule: `self.all(name, size(name) <= ${MAX_RESOURCE_NAME} && name.matches(${celString(RESOURCE_NAME_PATTERN)}))`,
                message:
                  "resource names must look like `cpu`, `requests.memory`, `count/deployments.apps` or `requests.example.com/gpu`",
              },
            ],
          }
        : {}),
    },
  );
}
export type ResourceList = Record<string, number | string>;

export const CONDITION_TYPE_PATTERN =
  "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
export const CONDITION_REASON_PATTERN = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/** `status.observedGeneration`: the metadata.generation a status was written for. */
export function ObservedGeneration() {
  return Type.Optional(
    Type.Integer({
      description: "metadata.generation this status describes.",
      format: "int64",
      minimum: 0,
    }),
  );
}

/** metav1.Condition, with the API server's own limits. */
export const ConditionSchema = Type.Object(
  {
    type: Type.String({
      description: "Type of condition in CamelCase, e.g. `Ready`.",
      minLength: 1,
      maxLength: 316,
      pattern: CONDITION_TYPE_PATTERN,
    }),
    status: StringEnum(["True", "False", "Unknown"], {
      description: "Status of the condition: `True`, `False` or `Unknown`.",
    }),
    observedGeneration: Type.Optional(
      Type.Integer({
        description:
          "metadata.generation the condition was computed from; older than metadata.generation means the condition is out of date.",
        format: "int64",
        minimum: 0,
      }),
    ),
    lastTransitionTime: Type.String({
      description: "When the condition last changed from one status to another (RFC 3339).",
      format: "date-time",
    }),
    reason: Type.String({
      description: "Programmatic identifier of the cause of the last transition, in CamelCase.",
      minLength: 1,
      maxLength: 1024,
      pattern: CONDITION_REASON_PATTERN,
    }),
    message: Type.String({
      description: "Human-readable details of the transition; may be empty.",
      maxLength: 32768,
    }),
  },
  { description: "Condition describes one aspect of the object's current state." },
);
export type Condition = Static<typeof ConditionSchema>;

export function ConditionList(description: string) {
  return ListMap(ConditionSchema, ["type"], { description, maxItems: 16 });
}

function selectorRequirementRules(): ValidationRule[] {
  return [
    {
      rule: "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",
      message: "values must be non-empty for In and NotIn and empty for Exists and DoesNotExist",
      fieldPath: ".values",
    },
  ];
}

const LABEL_KEY_MAX = 317;
const LABEL_VALUE_MAX = 63;
/** Label keys: an optional DNS-subdomain prefix and `/`, then a name. */
export const LABEL_KEY_PATTERN = `^(${DNS1123_SUBDOMAIN.slice(1, -1)}/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`;
/** Label values: empty or alphanumerics with `-`, `_`, `.` inside, at most 63 characters. */
export const LABEL_VALUE_PATTERN = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$";

export function LabelValue(description: string): TString {
  return Type.String({ description, maxLength: LABEL_VALUE_MAX, pattern: LABEL_VALUE_PATTERN });
}

/** A map of labels (label key → value), as in metadata.labels or a nodeSelector. */
export function LabelMap(description: string, rules: ValidationRule[] = []) {
  return StringMap(LabelValue("Label value (at most 63 characters)."), {
    description,
    maxProperties: 64,
    "x-kubernetes-validations": [
      {
        rule: `self.all(key, size(key) <= ${LABEL_KEY_MAX} && key.matches(${celString(LABEL_KEY_PATTERN)}))`,
        message:
          "label keys must be an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters",
      },
      ...rules,
    ],
  });
}

/** metav1.LabelSelector. */
export function LabelSelector(description: string) {
  return Type.Object(
    {
      matchLabels: Type.Optional(
        LabelMap("Labels the object must carry, all of them (`key: value` pairs, ANDed)."),
      ),
      matchExpressions: Type.Optional(
        Type.Array(
          Type.Object(
            {
              key: Type.String({
                description: "Label key the requirement applies to.",
                minLength: 1,
                maxLength: 317,
              }),
              operator: StringEnum(["In", "NotIn", "Exists", "DoesNotExist"], {
                description: "How the label's value relates to `values`: In, NotIn, Exists or DoesNotExist.",
              }),
              values: Type.Optional(
                Type.Array(LabelValue("A label value."), {
                  description:
                    "Values for In and NotIn (non-empty); must be empty for Exists and DoesNotExist.",
                  maxItems: 64,
                }),
              ),
            },
            {
              description: "A label requirement: key, operator and values.",
              "x-kubernetes-validations": selectorRequirementRules(),
            },
          ),
          { description: "Label requirements, all of them (ANDed).", maxItems: 32 },
        ),
      ),
    },
    { description, "x-kubernetes-map-type": "atomic" },
  );
}
export type LabelSelector = Static<ReturnType<typeof LabelSelector>>;

/** core/v1 NodeSelectorRequirement: a label (or field) key, an operator and values. */
const NodeSelectorRequirementSchema = Type.Object(
  {
    key: Type.String({
      description: "Node label key (or field name) the requirement applies to.",
      minLength: 1,
      maxLength: 317,
    }),
    operator: StringEnum(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"], {
      description: "How the node's value relates to `values`: In, NotIn, Exists, DoesNotExist, Gt or Lt.",
    }),
    values: Type.Optional(
      Type.Array(Type.String({ description: "A value.", maxLength: 63 }), {
        description:
          "Values for In and NotIn (non-empty), one integer for Gt and Lt, none for Exists and DoesNotExist.",
        maxItems: 64,
      }),
    ),
  },
  {
    description: "A node requirement: key, operator and values.",
    "x-kubernetes-validations": [
      {
        rule: "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : self.operator in ['Gt', 'Lt'] ? has(self.values) && size(self.values) == 1 : !has(self.values) || size(self.values) == 0",
        message:
          "values must be non-empty for In and NotIn, one value for Gt and Lt, and empty for Exists and DoesNotExist",
        fieldPath: ".values",
      },
    ],
  },
);
export type NodeSelectorRequirement = Static<typeof NodeSelectorRequirementSchema>;

/** core/v1 NodeSelectorTerm: requirements over node labels and fields, all of them (ANDed). */
export const NodeSelectorTermSchema = Type.Object(
  {
    matchExpressions: Type.Optional(
      Type.Array(NodeSelectorRequirementSchema, {
        description: "Requirements over node labels, all of them (ANDed).",
        maxItems: 32,
      }),
    ),
    matchFields: Type.Optional(
      Type.Array(NodeSelectorRequirementSchema, {
        description: "Requirements over node fields (only `metadata.name`), all of them (ANDed).",
        maxItems: 8,
      }),
    ),
  },
  { description: "A node selector term: its requirements are ANDed.", "x-kubernetes-map-type": "atomic" },
);
export type NodeSelectorTerm = Static<typeof NodeSelectorTermSchema>;

/** core/v1 NodeSelector, as in a pod's required node affinity: any one term (ORed) may match. */
export function NodeSelector(description: string) {
  return Type.Object(
    {
      nodeSelectorTerms: Type.Array(NodeSelectorTermSchema, {
        description: "Node selector terms, any one of them (ORed).",
        minItems: 1,
        maxItems: 32,
      }),
    },
    { description, "x-kubernetes-map-type": "atomic" },
  );
}
export type NodeSelector = Static<ReturnType<typeof NodeSelector>>;

/** core/v1 Toleration, as in a pod spec. */
export const TolerationSchema = Type.Object(
  {
    key: Type.Optional(
      Type.String({
        description: "Taint key the toleration applies to; empty with operator Exists tolerates every taint.",
        maxLength: 317,
      }),
    ),
    operator: Type.Optional(
      StringEnum(["Exists", "Equal"], {
        description: "`Equal` (default) matches the taint's value; `Exists` matches any value.",
      }),
    ),
    value: Type.Optional(
      Type.String({ description: "Taint value to match with operator Equal.", maxLength: 63 }),
    ),
    effect: Type.Optional(
      StringEnum(["NoSchedule", "PreferNoSchedule", "NoExecute"], {
        description: "Taint effect to match; empty matches every effect.",
      }),
    ),
    tolerationSeconds: Type.Optional(
      Type.Integer({
        description:
          "For NoExecute: how long the pod stays bound after the taint appears; unset means forever.",
        format: "int64",
      }),
    ),
  },
  {
    description: "A toleration added to every pod of the tenant (same fields as in a pod spec).",
    "x-kubernetes-validations": [
      {
        rule: "!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",
        message: "value must be empty when operator is Exists",
        fieldPath: ".value",
      },
      {
        rule: "(has(self.key) && self.key != '') || (has(self.operator) && self.operator == 'Exists')",
        message: "operator must be Exists when key is empty",
        fieldPath: ".operator",
      },
    ],
  },
);
export type Toleration = Static<typeof TolerationSchema>;

function NameList(description: string, itemDescription: string, maxLength = 253) {
  return Type.Array(Type.String({ description: itemDescription, maxLength }), {
    description,
    minItems: 1,
    maxItems: 64,
  });
}

/** rbac/v1 PolicyRule for namespaced resources (no nonResourceURLs). */
export const PolicyRuleSchema = Type.Object(
  {
    apiGroups: NameList(
      'API groups the rule covers; `""` is the core group, `*` every group.',
      "An API group name.",
    ),
    resources: NameList(
      "Resources the rule covers, e.g. `pods`, `deployments`, `pods/log`; `*` means every resource.",
      "A resource or resource/subresource.",
    ),
    verbs: NameList(
      "Verbs the rule allows, e.g. `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`; `*` means all.",
      "A verb.",
      63,
    ),
    resourceNames: Type.Optional(
      Type.Array(Type.String({ description: "An object name.", maxLength: 253 }), {
        description: "Restricts the rule to objects with these names; empty means any name.",
        maxItems: 64,
      }),
    ),
  },
  { description: "A permission, as in an RBAC Role's rules: API groups × resources × verbs." },
);
export type PolicyRule = Static<typeof PolicyRuleSchema>;

/** core/v1 LimitRangeItem. */
export const LimitRangeItemSchema = Type.Object(
  {
    type: StringEnum(["Container", "Pod", "PersistentVolumeClaim"], {
      description: "Kind of object the limits apply to: Container, Pod or PersistentVolumeClaim.",
    }),
    max: Type.Optional(ResourceList("Maximum usage of each resource for one object of this type.")),
    min: Type.Optional(ResourceList("Minimum usage of each resource for one object of this type.")),
    default: Type.Optional(
      ResourceList("Default limits for containers that set none (type Container only)."),
    ),
    defaultRequest: Type.Optional(
      ResourceList("Default requests for containers that set none (type Container only)."),
    ),
    maxLimitRequestRatio: Type.Optional(
      ResourceList("Maximum ratio of limit to request for each resource (limit ÷ request)."),
    ),
  },
  { description: "Limits for one kind of object, as in a LimitRange's `spec.limits`." },
);
export type LimitRangeItem = Static<typeof LimitRangeItemSchema>;

export const RESOURCE_QUOTA_SCOPES = [
  "Terminating",
  "NotTerminating",
  "BestEffort",
  "NotBestEffort",
  "PriorityClass",
  "CrossNamespacePodAffinity",
  "VolumeAttributesClass",
] as const;

export function QuotaScopes(description: string) {
  return Type.Array(StringEnum(RESOURCE_QUOTA_SCOPES, { description: "A ResourceQuota scope." }), {
    description,
    maxItems: RESOURCE_QUOTA_SCOPES.length,
    "x-kubernetes-list-type": "set",
  });
}

/** core/v1 ScopeSelector. */
export function ScopeSelector(description: string) {
  return Type.Object(
    {
      matchExpressions: Type.Array(
        Type.Object(
          {
            scopeName: StringEnum(RESOURCE_QUOTA_SCOPES, {
              description: "Scope the requirement applies to, e.g. `PriorityClass`.",
            }),
            operator: StringEnum(["In", "NotIn", "Exists", "DoesNotExist"], {
              description: "How the scope's value relates to `values`: In, NotIn, Exists or DoesNotExist.",
            }),
            values: Type.Optional(
              Type.Array(
                Type.String({ description: "A value, e.g. a priority class name.", maxLength: 253 }),
                {
                  description:
                    "Values for In and NotIn (non-empty); must be empty for Exists and DoesNotExist.",
                  maxItems: 64,
                },
              ),
            ),
          },
          {
            description: "A scope requirement: scope name, operator and values.",
            "x-kubernetes-validations": selectorRequirementRules(),
          },
        ),
        { description: "Scope requirements, all of them (ANDed).", minItems: 1, maxItems: 16 },
      ),
    },
    { description, "x-kubernetes-map-type": "atomic" },
  );
}

/**
 * Root schema of a custom resource: apiVersion, kind, metadata (only `metadata.name` may be
 * constrained, as apiextensions allows), spec and status. `rules` sit on the root, where CEL may
 * read `self.metadata.name`.
 */
export function ResourceSchema<Spec extends TSchema, Status extends TSchema>(options: {
  description: string;
  name?: FieldOptions & { maxLength?: number; pattern?: string };
  spec: Spec;
  status: Status;
  rules?: ValidationRule[];
}) {
  const metadataProperties: TProperties = options.name
    ? { name: Type.Optional(Type.String(options.name)) }
    : {};
  // The API server owns metadata's schema: even a description here is refused.
  const metadata = Type.Unsafe<V1ObjectMeta>(Type.Object(metadataProperties));
  return Type.Object(
    {
      apiVersion: Type.String({ description: "Versioned schema of this object: `<group>/<version>`." }),
      kind: Type.String({ description: "Kind of this object." }),
      metadata,
      spec: options.spec,
      status: Type.Optional(options.status),
    },
    {
      description: options.description,
      ...(options.rules ? { "x-kubernetes-validations": options.rules } : {}),
    },
  ) as TObject<{
    apiVersion: TString;
    kind: TString;
    metadata: TUnsafe<V1ObjectMeta>;
    spec: Spec;
    status: TOptional<Status>;
  }>;
}
