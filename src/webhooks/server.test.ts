import assert from "node:assert/strict";
import { test } from "node:test";
import type { AdmissionReviewRequest } from "./schema.js";
import { malformedReview } from "./server.js";

const namespaces = {
  rules: [
    {
      apiGroups: [""],
      apiVersions: ["v1"],
      operations: ["CREATE", "UPDATE", "DELETE"],
      resources: ["namespaces"],
    },
  ],
};
const review = (fields: Partial<AdmissionReviewRequest["request"]>): AdmissionReviewRequest["request"] => ({
  uid: "u",
  kind: { group: "", version: "v1", kind: "Namespace" },
  resource: { group: "", version: "v1", resource: "namespaces" },
  operation: "CREATE",
  userInfo: { username: "alice" },
  ...fields,
});

test("an operation the webhook does not intercept is refused naming request.operation", () => {
  // The fuzzer's CONNECT with a null oldObject crashed the namespace webhook's UPDATE path.
  const message = malformedReview(namespaces, review({ operation: "CONNECT", object: {}, oldObject: null }));
  assert.equal(
    message,
    "request.operation: CONNECT is not intercepted by this webhook (CREATE, DELETE, UPDATE)",
  );
  assert.equal(
    malformedReview({ rules: [{ operations: ["*"] }] }, review({ operation: "CONNECT", object: {} })),
    undefined,
  );
});

test("the objects each operation carries are required, naming the field", () => {
  assert.equal(malformedReview(namespaces, review({ object: null })), "request.object: required for CREATE");
  assert.equal(
    malformedReview(namespaces, review({ operation: "UPDATE", object: {}, oldObject: null })),
    "request.oldObject: required for UPDATE",
  );
  assert.equal(malformedReview(namespaces, review({ operation: "DELETE", oldObject: {} })), undefined);
  assert.equal(malformedReview(namespaces, review({ object: {} })), undefined);
});
