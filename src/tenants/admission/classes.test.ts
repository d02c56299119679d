import assert from "node:assert/strict";
import { test } from "node:test";
import type { AdmissionRequest } from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { checkClasses, classAllowed, describeAllowedClasses } from "./classes.js";

const tenant = {
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "Tenant",
  metadata: { name: "acme" },
  spec: {
    owners: [{ kind: "User", name: "alice" }],
    allowed: { storageClasses: { names: ["standard"] }, ingressClasses: { regex: "^public-" } },
  },
} as Tenant;

function request(resource: string, object: unknown, oldObject?: unknown): AdmissionRequest {
  return {
    uid: "1",
    kind: { group: "", version: "v1", kind: "X" },
    resource: { group: resource === "ingresses" ? "networking.k8s.io" : "", version: "v1", resource },
    namespace: "acme-dev",
    operation: oldObject ? "UPDATE" : "CREATE",
    userInfo: { username: "alice" },
    object: object as Record<string, unknown>,
    ...(oldObject ? { oldObject: oldObject as Record<string, unknown> } : {}),
  };
}

test("unset allows every class; names and regex allow theirs; set but empty allows none", () => {
  assert.equal(classAllowed(undefined, "x"), true);
  assert.equal(classAllowed({ names: ["a"], regex: "^gold-" }, "a"), true);
  assert.equal(classAllowed({ names: ["a"], regex: "^gold-" }, "gold-1"), true);
  assert.equal(classAllowed({ names: ["a"], regex: "^gold-" }, "silver"), false);
  assert.equal(classAllowed({}, "a"), false);
  assert.equal(classAllowed({ regex: "([" }, "a"), false);
  assert.equal(describeAllowedClasses({}), "none");
});

test("claims need an allowed storage class; changing nothing about it is not judged again", () => {
  assert.equal(
    checkClasses(request("persistentvolumeclaims", { spec: { storageClassName: "standard" } }), tenant),
    undefined,
  );
  assert.equal(
    checkClasses(request("persistentvolumeclaims", { spec: { storageClassName: "fast" } }), tenant),
    'spec.storageClassName: storage class "fast" is not allowed in tenant "acme" (spec.allowed.storageClasses: names "standard")',
  );
  assert.equal(
    checkClasses(request("persistentvolumeclaims", { spec: {} }), tenant),
    'spec.storageClassName: a storage class is required in tenant "acme" (spec.allowed.storageClasses: names "standard")',
  );
  const legacy = { spec: { storageClassName: "fast" }, metadata: { labels: { a: "b" } } };
  assert.equal(
    checkClasses(request("persistentvolumeclaims", legacy, { spec: { storageClassName: "fast" } }), tenant),
    undefined,
  );
});

test("ingresses need an allowed class, by field or by the legacy annotation", () => {
  assert.equal(
    checkClasses(request("ingresses", { spec: { ingressClassName: "public-nginx" } }), tenant),
    undefined,
  );
  assert.equal(
    checkClasses(request("ingresses", { spec: { ingressClassName: "internal" } }), tenant),
    'spec.ingressClassName: ingress class "internal" is not allowed in tenant "acme" (spec.allowed.ingressClasses: names matching ^public-)',
  );
  assert.equal(
    checkClasses(
      request("ingresses", {
        metadata: { annotations: { "kubernetes.io/ingress.class": "internal" } },
        spec: {},
      }),
      tenant,
    ),
    'metadata.annotations[kubernetes.io/ingress.class]: ingress class "internal" is not allowed in tenant "acme" (spec.allowed.ingressClasses: names matching ^public-)',
  );
});
