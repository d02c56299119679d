import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AdmissionRequest } from "../../webhooks/index.js";
import { multiclusterServicesChecks } from "./admission.js";

const [imports, slices, derived] = multiclusterServicesChecks(async () => "tenantry-controller");

function request(username: string, groups: string[] = [], subResource?: string): AdmissionRequest {
  return {
    uid: "1",
    kind: { group: "multicluster.x-k8s.io", version: "v1alpha1", kind: "ServiceImport" },
    resource: { group: "multicluster.x-k8s.io", version: "v1alpha1", resource: "serviceimports" },
    name: "web",
    namespace: "team-a",
    operation: "CREATE",
    userInfo: { username, groups },
    ...(subResource ? { subResource } : {}),
  };
}

describe("multi-cluster services admission", () => {
  test("a tenant user may not write imports, MCS-labelled slices or derived Services", async () => {
    for (const check of [imports!, slices!, derived!]) {
      const decision = await check.handle(request("alice", ["system:authenticated"]));
      assert.equal(decision.allowed, false, check.name);
      if (!decision.allowed)
        assert.match(decision.message, /only tenantry's multi-cluster services controller/);
    }
  });

  test("the message names the field and the object", async () => {
    const decision = await slices!.handle(request("alice"));
    assert.ok(!decision.allowed);
    assert.match(
      decision.message,
      /^metadata\.labels\[multicluster\.kubernetes\.io\/service-name\]: .*"web" in namespace "team-a"/,
    );
  });

  test("tenantry, a consumer's peering identity, cluster administrators and the garbage collector may", async () => {
    for (const [username, groups] of [
      ["tenantry-controller", []],
      ["tenantry-peer:0f3c", []],
      ["admin", ["system:masters"]],
      ["system:serviceaccount:kube-system:generic-garbage-collector", []],
    ] as const) {
      assert.equal((await imports!.handle(request(username, [...groups]))).allowed, true, username);
    }
  });

  test("a service account of a tenant's is a tenant user like any other", async () => {
    const decision = await imports!.handle(request("system:serviceaccount:team-a:default"));
    assert.equal(decision.allowed, false);
  });

  test("slices are only sent when labelled; the check is its own entry with that objectSelector", () => {
    assert.deepEqual(slices!.objectSelector, {
      matchExpressions: [{ key: "multicluster.kubernetes.io/service-name", operator: "Exists" }],
    });
  });
});
