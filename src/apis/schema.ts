/**
 * TypeBox building blocks for schemas that must also be valid Kubernetes structural schemas.
 *
 * TypeBox's own enum, literal and record types compile to `const`/`patternProperties`, which
 * apiextensions does not accept, and TypeBox has no int-or-string. The kinds below produce the
 * exact JSON that kube-apiserver expects and are registered with TypeBox so that `Value.Check`
 * agrees with the API server.
 */
import {
  FormatRegistry,
  Kind,
  type SchemaOptions,
  type TArray,
  type TRecord,
  type TSchema,
  type TString,
  type TUnsafe,
  Type,
  TypeRegistry,
} from "@sinclair/typebox";

/** Options every field takes: the description becomes `kubectl explain` text, so it is required. */
export interface FieldOptions extends SchemaOptions {
  description: string;
}

/** One `x-kubernetes-validations` entry: a CEL rule the API server evaluates on every write. */
export interface ValidationRule {
  rule: string;
  message?: string;
  messageExpression?: string;
  /** `FieldValueInvalid` (default), `FieldValueForbidden`, `FieldValueRequired` or `FieldValueDuplicate`. */
  reason?: "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueRequired" | "FieldValueDuplicate";
  /** JSONPath relative to the schema node the rule sits on, so the error names the offending field. */
  fieldPath?: string;
  optionalOldSelf?: boolean;
}

// RFC 3339 as used by metav1.Time; TypeBox refuses values whose format it does not know.
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
if (!FormatRegistry.Has("date-time")) {
  FormatRegistry.Set("date-time", (value) => RFC3339.test(value) && !Number.isNaN(Date.parse(value)));
}

const STRING_ENUM = "KubeStringEnum";
const INT_OR_STRING = "KubeIntOrString";

if (!TypeRegistry.Has(STRING_ENUM)) {
  TypeRegistry.Set<{ enum: string[] }>(
    STRING_ENUM,
    (schema, value) => typeof value === "string" && schema.enum.includes(value),
  );
}
if (!TypeRegistry.Has(INT_OR_STRING)) {
  TypeRegistry.Set<{ pattern?: string; minimum?: number }>(INT_OR_STRING, (schema, value) => {
    if (typeof value === "number") {
      return Number.isInteger(value) && (schema.minimum === undefined || value >= schema.minimum);
    }
    return (
      typeof value === "string" && (schema.pattern === undefined || new RegExp(schema.pattern).test(value))
    );
  });
}

/** A string limited to `values`, emitted as `type: string` + `enum` (what `kubectl explain` lists). */
export function StringEnum<const T extends readonly string[]>(
  values: T,
  options: FieldOptions,
): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, [Kind]: STRING_ENUM, type: "string", enum: [...values] });
}

/**
 * Kubernetes' int-or-string (`x-kubernetes-int-or-string`), in the only form a structural schema
 * allows: `anyOf: [{type: integer}, {type: string}]` with value validations beside it. `pattern`
 * applies to the string form, `minimum` to the integer form.
 */
export function IntOrString(
  options: FieldOptions & { pattern?: string; minimum?: number },
): TUnsafe<number | string> {
  return Type.Unsafe<number | string>({
    ...options,
    [Kind]: INT_OR_STRING,
    anyOf: [{ type: "integer" }, { type: "string" }],
    "x-kubernetes-int-or-string": true,
  });
}

/** A map with string keys (labels, resource lists); emitted as `additionalProperties`. */
export function StringMap<V extends TSchema>(
  value: V,
  options: FieldOptions & { maxProperties?: number; "x-kubernetes-validations"?: ValidationRule[] },
): TRecord<TString, V> {
  return Type.Record(Type.String(), value, options);
}

/**
 * A list whose items are identified by `keys` (`x-kubernetes-list-type: map`): the API server
 * refuses duplicates and server-side apply merges items by key instead of replacing the list.
 */
export function ListMap<T extends TSchema>(
  items: T,
  keys: readonly string[],
  options: FieldOptions & {
    minItems?: number;
    maxItems: number;
    "x-kubernetes-validations"?: ValidationRule[];
  },
): TArray<T> {
  return Type.Array(items, {
    ...options,
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": [...keys],
  });
}

/**
 * A list written whole by one writer (`x-kubernetes-list-type: atomic`): the API server tracks it
 * as one field, so a write costs it the same whatever the list holds. For status lists that only
 * tenantry writes and that change on every write (quota reservations, usage per namespace).
 */
export function AtomicList<T extends TSchema>(
  items: T,
  options: FieldOptions & { maxItems: number },
): TArray<T> {
  return Type.Array(items, { ...options, "x-kubernetes-list-type": "atomic" });
}

/** A list of unique scalars (`x-kubernetes-list-type: set`). */
export function ListSet<T extends TSchema>(
  items: T,
  options: FieldOptions & {
    minItems?: number;
    maxItems: number;
    default?: unknown[];
    "x-kubernetes-validations"?: ValidationRule[];
  },
): TArray<T> {
  return Type.Array(items, { ...options, "x-kubernetes-list-type": "set" });
}

/** A CEL string literal holding `text` (regexes keep their backslashes). */
export function celString(text: string): string {
  return `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

/** Lower-case RFC 1123 label: namespace names, tenant names, label-like identifiers. */
export const DNS1123_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";
/** Lower-case RFC 1123 subdomain: names of most cluster objects (classes, templates). */
export const DNS1123_SUBDOMAIN = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

export function DnsLabel(options: FieldOptions & { maxLength?: number }): TString {
  return Type.String({ minLength: 1, maxLength: 63, pattern: DNS1123_LABEL, ...options });
}

export function DnsSubdomain(options: FieldOptions): TString {
  return Type.String({ minLength: 1, maxLength: 253, pattern: DNS1123_SUBDOMAIN, ...options });
}
