import assert from "node:assert/strict";
import { test } from "node:test";
import { Ajv } from "ajv";
import { AdmissionReviewRequestSchema } from "./schema.js";

/** Compiled as Fastify compiles route schemas. */
const validate = new Ajv({ coerceTypes: "array", useDefaults: true, removeAdditional: true }).compile(
  AdmissionReviewRequestSchema,
);

const review = (request: Record<string, unknown>) => ({
  kind: "AdmissionReview",
  apiVersion: "admission.k8s.io/v1",
  request: {
    uid: "705ab4f5-6393-11e8-b7cc-42010a800002",
    kind: { group: "tenantry.dev", version: "v1alpha1", kind: "Tenant" },
    resource: { group: "tenantry.dev", version: "v1alpha1", resource: "tenants" },
    name: "acme",
    operation: "CREATE",
    userInfo: {
      username: "admin",
      groups: ["system:masters", "system:authenticated"],
      extra: { "authentication.kubernetes.io/credential-id": ["X509SHA256=abc"] },
    },
    object: {
      apiVersion: "tenantry.dev/v1alpha1",
      kind: "Tenant",
      metadata: { name: "acme", creationTimestamp: null, managedFields: [{ manager: "kubectl" }] },
      spec: { owners: [{ kind: "User", name: "alice" }] },
    },
    oldObject: null,
    dryRun: false,
    options: { kind: "CreateOptions", apiVersion: "meta.k8s.io/v1", fieldManager: "kubectl-create" },
    ...request,
  },
});

test("what kube-apiserver sends is accepted: nulls for what an operation has not, any object fields", () => {
  assert.equal(validate(review({})), true, JSON.stringify(validate.errors));
  assert.equal(
    validate(review({ operation: "DELETE", object: null, oldObject: { metadata: {} }, options: null })),
    true,
  );
});

test("what is not an AdmissionReview is refused, naming the field", () => {
  assert.equal(validate({ request: { uid: "" } }), false);
  assert.equal(validate(review({ operation: "PATCH" })), false);
  assert.match(JSON.stringify(validate.errors), /operation/);
  assert.equal(
    validate(review({ userInfo: { groups: "system:masters" } })),
    true,
    "one group coerces to a list",
  );
  assert.equal(validate(review({ object: { metadata: { labels: { a: { b: 1 } } } } })), false);
  assert.match(JSON.stringify(validate.errors), /labels/);
});

test("a namespace is any text up to 253 characters: a Namespace being created is named before the API server validates it", () => {
  // The API server's own refusal of "Not_A_Name" must reach the user, not a webhook's 400.
  assert.equal(validate(review({ namespace: "Not_A_Name" })), true, JSON.stringify(validate.errors));
  assert.equal(validate(review({ namespace: "" })), true, JSON.stringify(validate.errors));
  assert.equal(validate(review({ namespace: "x".repeat(254) })), false);
  assert.match(JSON.stringify(validate.errors), /\/request\/namespace/);
});
