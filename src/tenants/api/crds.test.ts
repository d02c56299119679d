import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type JSONSchemaProps, structuralProblems } from "../../apis/index.js";
import { NAMESPACE_TEMPLATE_CRD, TENANT_CRD, TENANT_RESOURCE_QUOTA_CRD, TENANTS_CRDS } from "./crds.js";

function schemaOf(crd: (typeof TENANTS_CRDS)[number]): JSONSchemaProps {
  return crd.spec.versions[0]!.schema.openAPIV3Schema;
}

/** Calls `visit` on every schema node with the path of the field it describes. */
function walk(
  node: JSONSchemaProps,
  path: string,
  visit: (node: JSONSchemaProps, path: string) => void,
): void {
  visit(node, path);
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, JSONSchemaProps>)) {
    walk(child, `${path}.${name}`, visit);
  }
  if (node.additionalProperties) walk(node.additionalProperties as JSONSchemaProps, `${path}.*`, visit);
  if (node.items) walk(node.items as JSONSchemaProps, `${path}[]`, visit);
}

describe("tenants CRDs", () => {
  it("are cluster-scoped tenantry.dev/v1alpha1 kinds with short names and a status subresource", () => {
    assert.deepEqual(
      TENANTS_CRDS.map((crd) => [crd.metadata.name, crd.spec.scope, crd.spec.names.shortNames]),
      [
        ["tenants.tenantry.dev", "Cluster", ["tnt"]],
        ["namespacetemplates.tenantry.dev", "Cluster", ["nstpl"]],
        ["tenantresourcequotas.tenantry.dev", "Cluster", ["trq"]],
      ],
    );
    for (const crd of TENANTS_CRDS) {
      assert.equal(crd.spec.versions.length, 1);
      assert.equal(crd.spec.versions[0]?.name, "v1alpha1");
      assert.deepEqual(crd.spec.versions[0]?.subresources, { status: {} });
    }
  });

  it("have structural schemas", () => {
    for (const crd of TENANTS_CRDS)
      assert.deepEqual(structuralProblems(schemaOf(crd)), [], crd.metadata.name);
  });

  it("describe every field, for kubectl explain", () => {
    for (const crd of TENANTS_CRDS) {
      const undescribed: string[] = [];
      walk(schemaOf(crd), crd.spec.names.kind, (node, path) => {
        // The API server owns metadata's schema and refuses a description there.
        const isRootMetadata = path === `${crd.spec.names.kind}.metadata`;
        if (!isRootMetadata && typeof node.description !== "string") undescribed.push(path);
      });
      assert.deepEqual(undescribed, [], crd.metadata.name);
    }
  });

  it("bound every string, list and map that CEL rules read, so the API server can cost them", () => {
    for (const crd of TENANTS_CRDS) {
      walk(schemaOf(crd), crd.spec.names.kind, (node, path) => {
        if (node.type === "array" && path.includes(".spec.")) {
          assert.equal(typeof node.maxItems, "number", `${path} needs maxItems`);
        }
        if (node.type === "object" && node.additionalProperties && path.includes(".spec.")) {
          assert.equal(typeof node.maxProperties, "number", `${path} needs maxProperties`);
        }
      });
    }
  });

  it("print owners, namespaces, quota, readiness and age for tenants", () => {
    const columns = (crd: (typeof TENANTS_CRDS)[number]) =>
      (crd.spec.versions[0]?.additionalPrinterColumns ?? [])
        .filter((c) => !c.priority)
        .map((c) => `${c.name} ${c.jsonPath}`);
    assert.deepEqual(columns(TENANT_CRD), [
      "Owners .status.ownerSummary",
      "Namespaces .status.namespaceCount",
      "Quota .status.usage.summary",
      'Ready .status.conditions[?(@.type=="Ready")].status',
      "Age .metadata.creationTimestamp",
    ]);
    assert.deepEqual(columns(TENANT_RESOURCE_QUOTA_CRD), [
      "Tenant .spec.tenant",
      "Usage .status.summary",
      "Age .metadata.creationTimestamp",
    ]);
    assert.deepEqual(columns(NAMESPACE_TEMPLATE_CRD), [
      "Namespaces .status.namespaceCount",
      'Ready .status.conditions[?(@.type=="Ready")].status',
      "Age .metadata.creationTimestamp",
    ]);
  });

  it("store template objects as embedded resources with unknown fields preserved", () => {
    const objects = (schemaOf(NAMESPACE_TEMPLATE_CRD).properties as Record<string, JSONSchemaProps>).spec!;
    const items = ((objects.properties as Record<string, JSONSchemaProps>).objects!.items ??
      {}) as JSONSchemaProps;
    assert.equal(items["x-kubernetes-embedded-resource"], true);
    assert.equal(items["x-kubernetes-preserve-unknown-fields"], true);
  });
});
