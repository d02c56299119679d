/**
 * TypeBox schema → apiextensions.k8s.io/v1 CustomResourceDefinition. The TypeBox schema stays the
 * single source of truth: TypeScript types come from `Static<>`, the API server validates with the
 * structural schema generated here, and the same structural schema drives local validation
 * (validate.ts), so all three agree.
 */
import type { TSchema } from "@sinclair/typebox";

/** A JSON schema node in the wire format apiextensions expects (`x-kubernetes-*` keys and all). */
export type JSONSchemaProps = { [keyword: string]: unknown };

/**
 * Keywords kept in the generated schema, in the order they are written. Anything else in a
 * TypeBox schema is a mistake to surface at generation time, not a field to drop silently:
 * kube-apiserver would reject or ignore it.
 */
const KEYWORD_ORDER = [
  "description",
  "type",
  "format",
  "title",
  "enum",
  "default",
  "example",
  "nullable",
  "minimum",
  "exclusiveMinimum",
  "maximum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "anyOf",
  "allOf",
  "oneOf",
  "not",
  "x-kubernetes-embedded-resource",
  "x-kubernetes-preserve-unknown-fields",
  "x-kubernetes-int-or-string",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
  "x-kubernetes-map-type",
  "x-kubernetes-validations",
] as const;
const KEPT = new Set<string>(KEYWORD_ORDER);

/** TypeBox annotations with no meaning to Kubernetes. */
const DROPPED = new Set(["$id", "$schema"]);

/** What TypeBox emits for `Type.Record(Type.String(), V)`. */
const ANY_KEY_PATTERN = "^(.*)$";

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function cloneJson(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/**
 * Converts a TypeBox schema into the OpenAPI v3 schema apiextensions accepts: symbols and `$id`
 * go, `Type.Record` maps become `additionalProperties`, keywords Kubernetes does not know throw.
 * The result is plain JSON with a stable key order, so generated manifests diff cleanly.
 */
export function toOpenApiSchema(schema: TSchema, path = "<root>"): JSONSchemaProps {
  const source = schema as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    if (!KEPT.has(key) && !DROPPED.has(key) && key !== "patternProperties") {
      throw new Error(`${path}: keyword "${key}" is not supported in a Kubernetes structural schema`);
    }
  }
  const out: JSONSchemaProps = {};
  for (const key of KEYWORD_ORDER) {
    const value = key === "additionalProperties" ? additionalPropertiesOf(source, path) : source[key];
    if (value === undefined) continue;
    switch (key) {
      case "properties": {
        if (!isPlainObject(value)) throw new Error(`${path}: properties must be an object`);
        const entries = Object.entries(value);
        if (entries.length === 0) continue;
        out.properties = Object.fromEntries(
          entries.map(([name, child]) => [name, toOpenApiSchema(child as TSchema, `${path}.${name}`)]),
        );
        break;
      }
      case "additionalProperties":
      case "items":
      case "not":
        out[key] = toOpenApiSchema(value as TSchema, `${path}.${key}`);
        break;
      case "anyOf":
      case "allOf":
      case "oneOf":
        out[key] = (value as TSchema[]).map((child, i) => toOpenApiSchema(child, `${path}.${key}[${i}]`));
        break;
      case "exclusiveMinimum":
      case "exclusiveMaximum":
        // JSON Schema 2019 (TypeBox) uses a number; OpenAPI v3.0 (Kubernetes) a boolean beside minimum/maximum.
        if (typeof value !== "boolean")
          throw new Error(`${path}: ${key} must be a boolean in Kubernetes schemas`);
        out[key] = value;
        break;
      default:
        out[key] = cloneJson(value);
    }
  }
  return out;
}

function additionalPropertiesOf(source: Record<string, unknown>, path: string): unknown {
  const patternProperties = source.patternProperties;
  if (patternProperties !== undefined) {
    const entries = isPlainObject(patternProperties) ? Object.entries(patternProperties) : [];
    const [first] = entries;
    if (entries.length !== 1 || !first || first[0] !== ANY_KEY_PATTERN) {
      throw new Error(`${path}: patternProperties are not supported; use a string-keyed map`);
    }
    return first[1];
  }
  const additional = source.additionalProperties;
  if (typeof additional === "boolean") {
    // Structural schemas forbid `additionalProperties: false`; unknown fields are pruned instead.
    throw new Error(`${path}: additionalProperties must be a schema, not ${additional}`);
  }
  return additional;
}

const INT_OR_STRING_ANY_OF = JSON.stringify([{ type: "integer" }, { type: "string" }]);
const METADATA_ALLOWED = new Set(["name", "generateName"]);
/** Keywords that only make sense on a node with a type; forbidden inside anyOf/allOf/oneOf/not. */
const GENERIC_KEYWORDS = [
  "type",
  "description",
  "default",
  "additionalProperties",
  "nullable",
  "properties",
  "items",
];

/**
 * Lists every way `schema` breaks the rules of a Kubernetes structural schema (empty when it is
 * structural): a type on every node, no junctors except the int-or-string form, maps are
 * `additionalProperties` only, list-map keys exist and are required, root metadata constrains
 * nothing but name.
 */
export function structuralProblems(schema: JSONSchemaProps): string[] {
  const problems: string[] = [];
  visit(schema, "openAPIV3Schema", true);
  return problems;

  function visit(node: JSONSchemaProps, path: string, root = false): void {
    for (const key of Object.keys(node)) {
      if (!KEPT.has(key)) problems.push(`${path}: unsupported keyword "${key}"`);
    }
    const intOrString = node["x-kubernetes-int-or-string"] === true;
    if (intOrString) {
      if (node.type !== undefined) problems.push(`${path}: int-or-string must not have a type`);
      if (JSON.stringify(node.anyOf) !== INT_OR_STRING_ANY_OF) {
        problems.push(`${path}: int-or-string must be anyOf [{type: integer}, {type: string}]`);
      }
    } else {
      if (typeof node.type !== "string" || node.type === "") problems.push(`${path}: type is missing`);
      for (const junctor of ["anyOf", "allOf", "oneOf", "not"]) {
        if (node[junctor] !== undefined)
          problems.push(`${path}: ${junctor} is only allowed for int-or-string`);
      }
    }
    for (const junctor of ["anyOf", "allOf", "oneOf"]) {
      const branches = (node[junctor] as JSONSchemaProps[] | undefined) ?? [];
      branches.forEach((branch, i) => {
        const allowed = intOrString && junctor === "anyOf" ? ["type"] : [];
        for (const key of GENERIC_KEYWORDS) {
          if (branch[key] !== undefined && !allowed.includes(key)) {
            problems.push(`${path}.${junctor}[${i}]: ${key} is forbidden inside ${junctor}`);
          }
        }
      });
    }
    if (node.properties !== undefined && node.additionalProperties !== undefined) {
      problems.push(`${path}: properties and additionalProperties are mutually exclusive`);
    }
    if (
      (node.properties !== undefined || node.additionalProperties !== undefined) &&
      node.type !== "object"
    ) {
      problems.push(`${path}: properties need type object`);
    }
    if (node.items !== undefined && node.type !== "array") problems.push(`${path}: items need type array`);
    if (node.type === "array" && node.items === undefined) problems.push(`${path}: array without items`);
    if (node["x-kubernetes-embedded-resource"] === true && node.type !== "object") {
      problems.push(`${path}: an embedded resource must be of type object`);
    }
    if (node["x-kubernetes-list-type"] === "map") {
      const items = (node.items ?? {}) as JSONSchemaProps;
      const itemProperties = (items.properties ?? {}) as Record<string, JSONSchemaProps>;
      const required = (items.required ?? []) as string[];
      for (const key of (node["x-kubernetes-list-map-keys"] as string[] | undefined) ?? []) {
        const property = itemProperties[key];
        if (!property) problems.push(`${path}: list map key "${key}" is not a property of the items`);
        else if (!required.includes(key) && property.default === undefined) {
          problems.push(`${path}: list map key "${key}" must be required or have a default`);
        }
      }
    }
    const properties = (node.properties ?? {}) as Record<string, JSONSchemaProps>;
    for (const [name, child] of Object.entries(properties)) {
      if (root && name === "metadata") {
        const restricted = Object.keys((child.properties ?? {}) as object).filter(
          (p) => !METADATA_ALLOWED.has(p),
        );
        const extra = Object.keys(child).filter((k) => k !== "type" && k !== "properties");
        if (restricted.length || extra.length) {
          problems.push(
            `${path}.metadata: only the type and the name and generateName properties may be set`,
          );
        }
        if (child.type !== "object") problems.push(`${path}.metadata: type must be object`);
        continue;
      }
      visit(child, `${path}.properties[${name}]`);
    }
    if (isPlainObject(node.additionalProperties)) {
      visit(node.additionalProperties, `${path}.additionalProperties`);
    }
    if (isPlainObject(node.items)) visit(node.items, `${path}.items`);
  }
}

export interface PrinterColumn {
  /** Column heading; kubectl prints it upper-cased. */
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  /** Simple JSONPath into the object, e.g. `.status.namespaceCount`. */
  jsonPath: string;
  description: string;
  /** 0 for the default view, 1 or more for `-o wide` only. */
  priority?: number;
  format?: string;
}

export interface CustomResourceDefinitionOptions {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames?: readonly string[];
  categories?: readonly string[];
  scope: "Cluster" | "Namespaced";
  /** The TypeBox schema of the whole object (see `ResourceSchema` in core.ts). */
  schema: TSchema;
  printerColumns?: readonly PrinterColumn[];
  /** Serve `status` as a subresource (default true): status writes bump no generation. */
  statusSubresource?: boolean;
  labels?: Readonly<Record<string, string>>;
}

/** apiextensions.k8s.io/v1 CustomResourceDefinition in wire format. */
export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames?: string[];
      categories?: string[];
    };
    scope: "Cluster" | "Namespaced";
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      subresources?: { status?: Record<string, never> };
      additionalPrinterColumns?: PrinterColumn[];
      schema: { openAPIV3Schema: JSONSchemaProps };
    }[];
  };
}

/** Builds a CRD from a TypeBox schema; throws if the schema is not structural. */
export function customResourceDefinition(options: CustomResourceDefinitionOptions): CustomResourceDefinition {
  const openAPIV3Schema = toOpenApiSchema(options.schema, options.kind);
  const problems = structuralProblems(openAPIV3Schema);
  if (problems.length) {
    throw new Error(`${options.kind} schema is not structural:\n  ${problems.join("\n  ")}`);
  }
  const printerColumns = options.printerColumns?.map((column) => ({
    name: column.name,
    type: column.type,
    jsonPath: column.jsonPath,
    description: column.description,
    ...(column.priority ? { priority: column.priority } : {}),
    ...(column.format ? { format: column.format } : {}),
  }));
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${options.plural}.${options.group}`,
      ...(options.labels ? { labels: { ...options.labels } } : {}),
    },
    spec: {
      group: options.group,
      names: {
        kind: options.kind,
        listKind: `${options.kind}List`,
        plural: options.plural,
        singular: options.singular,
        ...(options.shortNames?.length ? { shortNames: [...options.shortNames] } : {}),
        ...(options.categories?.length ? { categories: [...options.categories] } : {}),
      },
      scope: options.scope,
      versions: [
        {
          name: options.version,
          served: true,
          storage: true,
          ...(options.statusSubresource === false ? {} : { subresources: { status: {} } }),
          ...(printerColumns?.length ? { additionalPrinterColumns: printerColumns } : {}),
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}
