import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AdmissionRequest } from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { checkCordoned } from "./cordoned.js";
import { tenantryIdentity } from "./identity.js";
import { checkNamespaceDelete, checkNamespaceUpdate } from "./namespaces.js";

const identity = tenantryIdentity("tenantry-controller", "tenantry-system");

function tenant(cordoned: boolean): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name: "acme" },
    spec: { owners: [{ kind: "User", name: "alice" }], cordoned },
  } as Tenant;
}

function request(
  operation: AdmissionRequest["operation"],
  username: string,
  resource = "configmaps",
  groups: string[] = [],
): AdmissionRequest {
  return {
    uid: "1",
    kind: { group: "", version: "v1", kind: "ConfigMap" },
    resource: { group: "", version: "v1", resource },
    namespace: "acme-dev",
    name: "settings",
    operation,
    userInfo: { username, groups },
  };
}

describe("a cordoned tenant", () => {
  test("its users may not create, change or delete anything in its namespaces", () => {
    for (const [operation, verb] of [
      ["CREATE", "created"],
      ["UPDATE", "changed"],
      ["DELETE", "deleted"],
    ] as const) {
      for (const user of ["alice", "bob", "system:serviceaccount:acme-dev:app"]) {
        assert.deepEqual(checkCordoned(request(operation, user), tenant(true), identity), {
          allowed: false,
          code: 403,
          message: `metadata.namespace: tenant "acme" is cordoned (spec.cordoned): nothing in its namespaces may be ${verb} by its users until it is uncordoned`,
        });
      }
    }
  });

  test("tenantry, cluster administrators and the cluster's components go on; events are always written", () => {
    for (const [user, groups] of [
      ["tenantry-controller", []],
      ["admin", ["system:masters"]],
      ["system:serviceaccount:kube-system:replicaset-controller", []],
      ["system:node:node-1", ["system:nodes"]],
      ["system:kube-scheduler", []],
    ] as const) {
      assert.deepEqual(
        checkCordoned(request("UPDATE", user, "configmaps", [...groups]), tenant(true), identity),
        {
          allowed: true,
        },
      );
    }
    assert.deepEqual(checkCordoned(request("CREATE", "alice", "events"), tenant(true), identity), {
      allowed: true,
    });
  });

  test("an uncordoned tenant, or one gone, holds nothing back", () => {
    assert.deepEqual(checkCordoned(request("DELETE", "alice"), tenant(false), identity), { allowed: true });
    assert.deepEqual(checkCordoned(request("DELETE", "alice"), undefined, identity), { allowed: true });
  });

  test("its owners may neither change nor delete its namespaces", () => {
    const namespace = {
      metadata: {
        name: "acme-team",
        labels: { "tenantry.dev/tenant": "acme", "tenantry.dev/namespace-origin": "owner" },
      },
    };
    const changed = { metadata: { ...namespace.metadata, annotations: { note: "x" } } };
    const alice = { username: "alice" };
    assert.equal(
      checkNamespaceUpdate(namespace, changed, alice, tenant(true), identity),
      'metadata.labels[tenantry.dev/tenant]: tenant "acme" is cordoned (spec.cordoned): its namespaces may not be changed by its owners until it is uncordoned',
    );
    assert.equal(
      checkNamespaceDelete(namespace, alice, tenant(true), identity),
      'metadata.labels[tenantry.dev/tenant]: tenant "acme" is cordoned (spec.cordoned): its namespaces may not be deleted by its owners until it is uncordoned',
    );
    assert.equal(checkNamespaceUpdate(namespace, changed, alice, tenant(false), identity), undefined);
    assert.equal(checkNamespaceDelete(namespace, alice, tenant(false), identity), undefined);
  });
});
