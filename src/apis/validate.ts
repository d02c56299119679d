/**
 * Local validation against the same structural schema the API server enforces, with errors that
 * name the field the way kube-apiserver does (`spec.owners[0].kind`). Used where input must be
 * refused before it reaches the cluster (CLI, REST APIs, admission). CEL rules
 * (`x-kubernetes-validations`) only run in the API server.
 */
import { Ajv, type ErrorObject, type SchemaValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import type { CustomResourceDefinition, JSONSchemaProps } from "./crd.js";

export interface FieldViolation {
  /** Field path as kube-apiserver prints it, e.g. `spec.namespaces[0].name` or `spec.quota.hard.cpu`. */
  field: string;
  message: string;
}

function createAjv(): Ajv {
  // strictTypes is off because int-or-string puts `pattern` beside `anyOf` instead of under a type.
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false });
  // ajv-formats is CommonJS; under NodeNext its plugin is the module's `default` property.
  addFormats.default(ajv);
  for (const keyword of [
    "x-kubernetes-embedded-resource",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
  ]) {
    ajv.addKeyword({ keyword });
  }
  ajv.addKeyword({
    keyword: "x-kubernetes-list-type",
    schemaType: "string",
    errors: true,
    validate: listTypeValidator,
  });
  return ajv;
}

/** Refuses duplicates in `x-kubernetes-list-type: set` and `map` lists, as the API server does. */
const listTypeValidator: SchemaValidateFunction = (listKind: string, data: unknown, parentSchema) => {
  if (!Array.isArray(data) || listKind === "atomic") return true;
  const keys = (parentSchema?.["x-kubernetes-list-map-keys"] as string[] | undefined) ?? [];
  const identify = (item: unknown) =>
    listKind === "map" ? keys.map((key) => (item as Record<string, unknown> | undefined)?.[key]) : item;
  const seen = new Set<string>();
  for (const [index, item] of data.entries()) {
    const identity = JSON.stringify(identify(item));
    if (seen.has(identity)) {
      const shown =
        listKind === "map"
          ? keys.map((key, i) => `${key}=${JSON.stringify((identify(item) as unknown[])[i])}`).join(", ")
          : JSON.stringify(item);
      listTypeValidator.errors = [
        { keyword: "x-kubernetes-list-type", message: `Duplicate value: ${shown}`, params: { index } },
      ];
      return false;
    }
    seen.add(identity);
  }
  return true;
};

let shared: Ajv | undefined;

/**
 * Converts a JSON pointer into `schema`'s data to the field path kube-apiserver prints for custom
 * resources: properties and map keys join with dots, list indexes go in brackets
 * (`spec.quota.hard.cpu`, `spec.owners[0].kind`). The schema, not the data, tells a map key `"0"`
 * from a list index 0.
 */
export function fieldPath(schema: JSONSchemaProps, pointer: string): string {
  let node: JSONSchemaProps | undefined = schema;
  let path = "";
  const segments = pointer === "" ? [] : pointer.slice(1).split("/");
  for (const raw of segments) {
    const segment = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    const properties = node?.properties as Record<string, JSONSchemaProps> | undefined;
    if (node?.type === "array") {
      path += `[${segment}]`;
      node = node.items as JSONSchemaProps | undefined;
    } else if (properties?.[segment]) {
      path += path ? `.${segment}` : segment;
      node = properties[segment];
    } else if (node?.additionalProperties) {
      path += path ? `.${segment}` : segment;
      node = node.additionalProperties as JSONSchemaProps;
    } else {
      path += path ? `.${segment}` : segment;
      node = undefined;
    }
  }
  return path;
}

function quote(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(JSON.stringify(value));
}

function violationOf(schema: JSONSchemaProps, error: ErrorObject, data: unknown): FieldViolation {
  let pointer = error.instancePath;
  const params = error.params as Record<string, unknown>;
  if (error.keyword === "required")
    pointer += `/${String(params.missingProperty).replace(/~/g, "~0").replace(/\//g, "~1")}`;
  if (error.keyword === "x-kubernetes-list-type") pointer += `/${params.index}`;
  const field = fieldPath(schema, pointer) || "<root>";
  const value = valueAt(data, error.instancePath);
  switch (error.keyword) {
    case "required":
      return { field, message: "Required value" };
    case "enum":
      return {
        field,
        message: `Unsupported value: ${quote(value)}: supported values: ${(params.allowedValues as unknown[]).map(quote).join(", ")}`,
      };
    case "maxLength":
      return { field, message: `Too long: may not be more than ${params.limit} bytes` };
    case "minLength":
      return {
        field,
        message: `Invalid value: ${quote(value)}: should be at least ${params.limit} chars long`,
      };
    case "maxItems":
      return {
        field,
        message: `Too many: ${(value as unknown[]).length}: must have at most ${params.limit} items`,
      };
    case "minItems":
      return {
        field,
        message: `Invalid value: ${(value as unknown[]).length}: should have at least ${params.limit} items`,
      };
    case "maxProperties":
      return { field, message: `Too many: must have at most ${params.limit} items` };
    case "pattern":
      return { field, message: `Invalid value: ${quote(value)}: should match '${params.pattern}'` };
    case "minimum":
    case "maximum":
      return {
        field,
        message: `Invalid value: ${quote(value)}: should be ${params.comparison === ">=" ? "greater" : "less"} than or equal to ${params.limit}`,
      };
    case "type":
      return { field, message: `Invalid value: ${quote(value)}: must be of type ${params.type}` };
    case "anyOf":
      return { field, message: `Invalid value: ${quote(value)}: must be an integer or a string` };
    default:
      return { field, message: error.message ?? `invalid (${error.keyword})` };
  }
}

function valueAt(data: unknown, pointer: string): unknown {
  let value = data;
  for (const raw of pointer === "" ? [] : pointer.slice(1).split("/")) {
    const segment = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    value = (value as Record<string, unknown> | undefined)?.[segment];
  }
  return value;
}

/** Validates values against one structural schema, e.g. a CRD's `openAPIV3Schema`. */
export class SchemaValidator<T> {
  private readonly check: ReturnType<Ajv["compile"]>;

  constructor(readonly schema: JSONSchemaProps) {
    shared ??= createAjv();
    this.check = shared.compile(schema);
  }

  /** Every violation, sorted by field; empty when `value` is valid. */
  violations(value: unknown): FieldViolation[] {
    if (this.check(value)) return [];
    const errors = (this.check.errors ?? []).filter(
      // The branches of an int-or-string explain nothing beyond the anyOf failure itself.
      (error) => !error.schemaPath.includes("/anyOf/"),
    );
    const seen = new Set<string>();
    const violations: FieldViolation[] = [];
    for (const error of errors) {
      const violation = violationOf(this.schema, error, value);
      const key = `${violation.field}\u0000${violation.message}`;
      if (!seen.has(key)) {
        seen.add(key);
        violations.push(violation);
      }
    }
    // Code-point order: stable across locales.
    return violations.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
  }

  is(value: unknown): value is T {
    return this.check(value) as boolean;
  }
}

/** One line per violation, `field: message`, as kube-apiserver lists them. */
export function formatViolations(violations: readonly FieldViolation[]): string {
  return violations.map((v) => `${v.field}: ${v.message}`).join("\n");
}

/**
 * The schema violations of a whole object against a CRD's (first version's) schema, with
 * Kubernetes field paths; compiled on first use. CEL rules are the API server's.
 */
export function crdValidator<T = unknown>(
  crd: CustomResourceDefinition,
): (value: unknown) => FieldViolation[] {
  let compiled: SchemaValidator<T> | undefined;
  return (value) => {
    const [version] = crd.spec.versions;
    if (!version) throw new Error(`${crd.metadata.name} has no version`);
    compiled ??= new SchemaValidator<T>(version.schema.openAPIV3Schema);
    return compiled.violations(value);
  };
}
