import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Type } from "@sinclair/typebox";
import { QUANTITY_PATTERN, ResourceList } from "./core.js";
import { toOpenApiSchema } from "./crd.js";
import { ListMap, ListSet, StringEnum } from "./schema.js";
import { fieldPath, formatViolations, SchemaValidator } from "./validate.js";

const schema = toOpenApiSchema(
  Type.Object({
    spec: Type.Object({
      items: ListMap(
        Type.Object({
          id: Type.String({ description: "id" }),
          mode: StringEnum(["on", "off"], { description: "m" }),
        }),
        ["id"],
        { description: "items", maxItems: 3 },
      ),
      tags: Type.Optional(ListSet(Type.String({ description: "tag" }), { description: "tags", maxItems: 5 })),
      hard: Type.Optional(ResourceList("hard")),
      byIndex: Type.Optional(Type.Record(Type.String(), Type.Integer({ minimum: 0 }))),
    }),
  }),
);
const validator = new SchemaValidator<unknown>(schema);

describe("fieldPath", () => {
  it("prints list indexes in brackets and properties and map keys with dots, as kube-apiserver does", () => {
    assert.equal(fieldPath(schema, "/spec/items/0/mode"), "spec.items[0].mode");
    assert.equal(
      fieldPath(schema, "/spec/hard/requests.dummy~1dummyResource"),
      "spec.hard.requests.dummy/dummyResource",
    );
    assert.equal(fieldPath(schema, "/spec/byIndex/0"), "spec.byIndex.0");
    assert.equal(fieldPath(schema, ""), "");
  });
});

describe("SchemaValidator", () => {
  it("accepts a valid value", () => {
    const value = { spec: { items: [{ id: "a", mode: "on" }], hard: { cpu: "500m", pods: 10 } } };
    assert.deepEqual(validator.violations(value), []);
    assert.equal(validator.is(value), true);
  });

  it("names every offending field with a Kubernetes-style message", () => {
    const violations = validator.violations({
      spec: { items: [{ id: "a", mode: "maybe" }, { mode: "on" }], hard: { cpu: "lots", pods: -1 } },
    });
    assert.equal(
      formatViolations(violations),
      [
        `spec.hard.cpu: Invalid value: "lots": should match '${QUANTITY_PATTERN}'`,
        "spec.hard.pods: Invalid value: -1: should be greater than or equal to 0",
        'spec.items[0].mode: Unsupported value: "maybe": supported values: "on", "off"',
        "spec.items[1].id: Required value",
      ].join("\n"),
    );
  });

  it("refuses quantities tenantry could not compute with: fractional or huge exponents", () => {
    for (const cpu of ["1e1.5", "1e999999999", "2e+100"]) {
      assert.equal(
        formatViolations(validator.violations({ spec: { items: [], hard: { cpu } } })),
        `spec.hard.cpu: Invalid value: "${cpu}": should match '${QUANTITY_PATTERN}'`,
      );
    }
    for (const cpu of ["2e3", "1E-2", "500m", "1.5Gi", "+4"]) {
      assert.deepEqual(validator.violations({ spec: { items: [], hard: { cpu } } }), [], cpu);
    }
  });

  it("refuses duplicate keys in list maps and duplicate set members", () => {
    assert.deepEqual(
      validator.violations({
        spec: {
          items: [
            { id: "a", mode: "on" },
            { id: "a", mode: "off" },
          ],
        },
      }),
      [{ field: "spec.items[1]", message: 'Duplicate value: id="a"' }],
    );
    assert.deepEqual(validator.violations({ spec: { items: [], tags: ["x", "y", "x"] } }), [
      { field: "spec.tags[2]", message: 'Duplicate value: "x"' },
    ]);
  });

  it("reports limits with the limit", () => {
    const four = [1, 2, 3, 4].map((i) => ({ id: String(i), mode: "on" }));
    assert.deepEqual(validator.violations({ spec: { items: four } }), [
      { field: "spec.items", message: "Too many: 4: must have at most 3 items" },
    ]);
  });
});
