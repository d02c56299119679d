import assert from "node:assert/strict";
import { test } from "node:test";
import type { AdmissionRequest } from "../../webhooks/index.js";
import { tenantryIdentity } from "./identity.js";
import { checkManagedObject } from "./managed-objects.js";

const identity = tenantryIdentity("tenantry-admin", "tenantry-system");
const managed = {
  metadata: {
    name: "tenantry-isolation",
    namespace: "acme-dev",
    labels: { "app.kubernetes.io/managed-by": "tenantry", "tenantry.dev/tenant": "acme" },
  },
  spec: { podSelector: {} },
};

function request(
  operation: "UPDATE" | "DELETE",
  username: string,
  object?: Record<string, unknown>,
  groups: string[] = [],
): AdmissionRequest {
  return {
    uid: "1",
    kind: { group: "networking.k8s.io", version: "v1", kind: "NetworkPolicy" },
    resource: { group: "networking.k8s.io", version: "v1", resource: "networkpolicies" },
    name: "tenantry-isolation",
    namespace: "acme-dev",
    operation,
    userInfo: { username, groups },
    oldObject: managed,
    ...(object ? { object } : {}),
  };
}

test("tenant users can neither delete nor change what tenantry manages, nor take it over by unlabelling", () => {
  assert.deepEqual(checkManagedObject(request("DELETE", "alice"), identity), {
    allowed: false,
    code: 403,
    message:
      'metadata.labels[app.kubernetes.io/managed-by]: NetworkPolicy "tenantry-isolation" in namespace "acme-dev" is managed by tenantry; only tenantry may delete it',
  });
  const changed = { ...managed, spec: { podSelector: { matchLabels: { a: "b" } } } };
  assert.deepEqual(checkManagedObject(request("UPDATE", "alice", changed), identity), {
    allowed: false,
    code: 403,
    message:
      'metadata.labels[app.kubernetes.io/managed-by]: NetworkPolicy "tenantry-isolation" in namespace "acme-dev" is managed by tenantry; only tenantry may change it',
  });
  const unlabelled = {
    ...managed,
    metadata: { ...managed.metadata, labels: { "tenantry.dev/tenant": "acme" } },
  };
  assert.deepEqual(checkManagedObject(request("UPDATE", "alice", unlabelled), identity), {
    allowed: false,
    code: 403,
    message:
      'metadata.labels[app.kubernetes.io/managed-by]: NetworkPolicy "tenantry-isolation" in namespace "acme-dev" is managed by tenantry; the label cannot be removed or changed',
  });
});

test("tenantry, cluster administrators and deletion cascades go through", () => {
  assert.deepEqual(checkManagedObject(request("UPDATE", "tenantry-admin", managed), identity), {
    allowed: true,
  });
  assert.deepEqual(checkManagedObject(request("DELETE", "root", undefined, ["system:masters"]), identity), {
    allowed: true,
  });
  for (const username of [
    "system:serviceaccount:kube-system:generic-garbage-collector",
    "system:serviceaccount:kube-system:namespace-controller",
  ]) {
    assert.deepEqual(checkManagedObject(request("DELETE", username), identity), { allowed: true });
  }
});

test("objects that were not tenantry's are not its concern", () => {
  const own = { ...request("DELETE", "alice"), oldObject: { metadata: { name: "mine", labels: {} } } };
  assert.deepEqual(checkManagedObject(own, identity), { allowed: true });
});
