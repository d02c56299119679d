import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Type } from "@sinclair/typebox";
import { Quantity, ResourceSchema } from "./core.js";
import { customResourceDefinition, structuralProblems, toOpenApiSchema } from "./crd.js";
import { StringEnum, StringMap } from "./schema.js";

describe("toOpenApiSchema", () => {
  it("turns TypeBox records into additionalProperties and drops TypeBox-only keys", () => {
    const schema = Type.Object(
      { labels: StringMap(Type.String({ description: "value" }), { description: "labels" }) },
      { $id: "Thing", description: "thing" },
    );
    assert.deepEqual(toOpenApiSchema(schema), {
      description: "thing",
      type: "object",
      properties: {
        labels: {
          description: "labels",
          type: "object",
          additionalProperties: { description: "value", type: "string" },
        },
      },
      required: ["labels"],
    });
  });

  it("writes enums as type string + enum and quantities as int-or-string", () => {
    const schema = Type.Object({
      level: StringEnum(["a", "b"], { description: "level", default: "a" }),
      cpu: Quantity("cpu"),
    });
    const out = toOpenApiSchema(schema) as { properties: Record<string, Record<string, unknown>> };
    assert.deepEqual(out.properties.level, {
      description: "level",
      type: "string",
      enum: ["a", "b"],
      default: "a",
    });
    assert.deepEqual(Object.keys(out.properties.cpu ?? {}), [
      "description",
      "minimum",
      "pattern",
      "anyOf",
      "x-kubernetes-int-or-string",
    ]);
    assert.deepEqual(structuralProblems(out), []);
  });

  it("refuses keywords Kubernetes does not accept, naming where they are", () => {
    assert.throws(
      () => toOpenApiSchema(Type.Object({ mode: Type.Literal("x") })),
      /<root>\.mode: keyword "const" is not supported/,
    );
    assert.throws(
      () => toOpenApiSchema(Type.Object({ a: Type.String() }, { additionalProperties: false })),
      /additionalProperties must be a schema/,
    );
    assert.throws(
      () => toOpenApiSchema(Type.Record(Type.String({ pattern: "^x" }), Type.String())),
      /patternProperties are not supported/,
    );
  });
});

describe("structuralProblems", () => {
  it("finds nodes without a type, junctors and mixed properties", () => {
    const problems = structuralProblems({
      type: "object",
      properties: {
        untyped: { description: "no type" },
        choice: { anyOf: [{ type: "string" }, { type: "integer" }] },
        both: {
          type: "object",
          properties: { a: { type: "string" } },
          additionalProperties: { type: "string" },
        },
        list: {
          type: "array",
          items: { type: "object" },
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["id"],
        },
      },
    });
    assert.deepEqual(problems, [
      "openAPIV3Schema.properties[untyped]: type is missing",
      "openAPIV3Schema.properties[choice]: type is missing",
      "openAPIV3Schema.properties[choice]: anyOf is only allowed for int-or-string",
      "openAPIV3Schema.properties[choice].anyOf[0]: type is forbidden inside anyOf",
      "openAPIV3Schema.properties[choice].anyOf[1]: type is forbidden inside anyOf",
      "openAPIV3Schema.properties[both]: properties and additionalProperties are mutually exclusive",
      'openAPIV3Schema.properties[list]: list map key "id" is not a property of the items',
    ]);
  });

  it("allows only name constraints on the root metadata", () => {
    assert.deepEqual(
      structuralProblems({
        type: "object",
        properties: { metadata: { type: "object", description: "meta" } },
      }),
      ["openAPIV3Schema.metadata: only the type and the name and generateName properties may be set"],
    );
  });
});

describe("customResourceDefinition", () => {
  it("builds names, scope, status subresource and printer columns", () => {
    const crd = customResourceDefinition({
      group: "example.dev",
      version: "v1",
      kind: "Widget",
      plural: "widgets",
      singular: "widget",
      shortNames: ["wg"],
      scope: "Namespaced",
      schema: ResourceSchema({
        description: "A widget.",
        spec: Type.Object({ size: Type.Integer({ description: "size" }) }, { description: "spec" }),
        status: Type.Object({}, { description: "status" }),
      }),
      printerColumns: [{ name: "Size", type: "integer", jsonPath: ".spec.size", description: "size" }],
    });
    assert.equal(crd.metadata.name, "widgets.example.dev");
    assert.deepEqual(crd.spec.names, {
      kind: "Widget",
      listKind: "WidgetList",
      plural: "widgets",
      singular: "widget",
      shortNames: ["wg"],
    });
    const [version] = crd.spec.versions;
    assert.deepEqual(version?.subresources, { status: {} });
    assert.equal(version?.additionalPrinterColumns?.[0]?.jsonPath, ".spec.size");
    assert.deepEqual(version?.schema.openAPIV3Schema.required, ["apiVersion", "kind", "metadata", "spec"]);
  });

  it("refuses a schema that is not structural", () => {
    assert.throws(
      () =>
        customResourceDefinition({
          group: "example.dev",
          version: "v1",
          kind: "Widget",
          plural: "widgets",
          singular: "widget",
          scope: "Cluster",
          schema: Type.Object({ spec: Type.Unknown() }),
        }),
      /Widget schema is not structural:\n {2}openAPIV3Schema\.properties\[spec\]: type is missing/,
    );
  });
});
