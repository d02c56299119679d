import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LogicalCloud } from "./api/logical-cloud.js";
import {
  cloudUsers,
  deleteRefusal,
  deployedStatusOf,
  desiredObjects,
  hasNamespacePermission,
  LOGICAL_CLOUD_UID_LABEL,
  permissionObjectName,
} from "./plan.js";
import { DEFAULT_QUOTA } from "./validation.js";

function cloud(spec: Partial<LogicalCloud["spec"]>): LogicalCloud {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "LogicalCloud",
    metadata: { name: "lc1", namespace: "tenantry-project-p", uid: "uid-1" },
    spec: { namespace: "lc1-ns", user: { userName: "user-1" }, ...spec },
  };
}

describe("desiredObjects", () => {
  it("gives a cloud without quotas the documented defaults and container defaults, all labelled with its uid", () => {
    const objects = desiredObjects(cloud({ labels: { team: "finance" } }), "p");
    const kinds = objects.map((o) => `${o.kind}/${o.metadata?.name}`);
    assert.deepEqual(kinds, [
      "Namespace/lc1-ns",
      "ResourceQuota/tenantry-default",
      "LimitRange/tenantry-defaults",
    ]);
    for (const o of objects) assert.equal(o.metadata?.labels?.[LOGICAL_CLOUD_UID_LABEL], "uid-1");
    assert.equal(objects[0]!.metadata?.labels?.team, "finance");
    assert.deepEqual((objects[1] as { spec: { hard: unknown } }).spec.hard, DEFAULT_QUOTA);
    assert.deepEqual((objects[2] as { spec: { limits: { default: unknown }[] } }).spec.limits[0]!.default, {
      cpu: "500m",
      memory: "512Mi",
    });
  });

  it("makes one quota per cluster quota, a Role and binding per namespaced permission, a ClusterRole for a cluster-wide one", () => {
    const objects = desiredObjects(
      cloud({
        users: [{ userName: "user-2" }],
        clusterQuotas: [{ name: "small", hard: { pods: "5" } }],
        userPermissions: [
          {
            name: "edit",
            namespace: "lc1-ns",
            apiGroups: [""],
            resources: ["pods"],
            verbs: ["get", "create"],
          },
          { name: "nodes", apiGroups: [""], resources: ["nodes"], verbs: ["list"], users: ["user-2"] },
        ],
      }),
      "p",
    );
    const kinds = objects.map((o) => `${o.kind}/${o.metadata?.namespace ?? ""}/${o.metadata?.name}`);
    const role = permissionObjectName("p", "lc1", "edit");
    const clusterRole = permissionObjectName("p", "lc1", "nodes");
    assert.deepEqual(kinds, [
      "Namespace//lc1-ns",
      "ResourceQuota/lc1-ns/small",
      `Role/lc1-ns/${role}`,
      `RoleBinding/lc1-ns/${role}`,
      `ClusterRole//${clusterRole}`,
      `ClusterRoleBinding//${clusterRole}`,
    ]);
    const binding = objects[3] as { subjects: { name: string }[] };
    assert.deepEqual(
      binding.subjects.map((s) => s.name),
      ["user-1", "user-2"],
    );
    const clusterBinding = objects[5] as { subjects: { name: string }[] };
    assert.deepEqual(
      clusterBinding.subjects.map((s) => s.name),
      ["user-2"],
    );
  });

  it("knows whether some permission applies in the cloud's namespace, and lists each user once", () => {
    assert.equal(hasNamespacePermission(cloud({})), false);
    assert.equal(
      hasNamespacePermission(
        cloud({
          userPermissions: [
            { name: "x", namespace: "lc1-ns", apiGroups: [""], resources: ["*"], verbs: ["*"] },
          ],
        }),
      ),
      true,
    );
    assert.deepEqual(
      cloudUsers(cloud({ users: [{ userName: "user-1" }, { userName: "u3" }] })).map((u) => u.userName),
      ["user-1", "u3"],
    );
  });
});

describe("deployedStatusOf and deleteRefusal: what the API says and allows, from the status", () => {
  const lifecycle = (action: "Instantiate" | "Terminate", instance: string) => ({
    action,
    instance,
    requestedAt: "2026-01-01T00:00:00Z",
  });
  const entry = (cluster: string, state: "Ready" | "Removing" | "Removed") => ({
    cluster,
    clusterProvider: "",
    state,
    connectivity: "Available" as const,
  });

  it("an action the controller has not taken up yet is in progress, not what the previous one reached", () => {
    const c = cloud({ lifecycle: lifecycle("Terminate", "t1") });
    c.status = { instance: "i1", deployedStatus: "Instantiated", clusters: [entry("edge-1", "Ready")] };
    assert.equal(deployedStatusOf(c), "Terminating");
    assert.match(deleteRefusal(c)!.detail, /not taken up yet/);
    assert.equal(deleteRefusal(c)!.soon, true);
  });

  it("terminating with a cluster still Removing: refused, naming the cluster, to be asked again soon", () => {
    const c = cloud({ lifecycle: lifecycle("Terminate", "t1") });
    c.status = {
      instance: "t1",
      deployedStatus: "Terminating",
      clusters: [entry("edge-1", "Removed"), entry("edge-2", "Removing")],
    };
    const refusal = deleteRefusal(c);
    assert.match(refusal!.detail, /still being removed from "edge-2" \(Removing\)/);
    assert.equal(refusal!.soon, true);
  });

  it("terminated, never instantiated, or rolled back everywhere: may be deleted", () => {
    const terminated = cloud({ lifecycle: lifecycle("Terminate", "t1") });
    terminated.status = {
      instance: "t1",
      deployedStatus: "Terminated",
      clusters: [entry("edge-1", "Removed")],
    };
    assert.equal(deleteRefusal(terminated), undefined);
    assert.equal(deleteRefusal(cloud({})), undefined);
    const rolledBack = cloud({ lifecycle: lifecycle("Instantiate", "i1") });
    rolledBack.status = {
      instance: "i1",
      deployedStatus: "InstantiateFailed",
      rolledBackInstance: "i1",
      clusters: [entry("edge-1", "Removed")],
    };
    assert.equal(deleteRefusal(rolledBack), undefined);
    rolledBack.status.clusters = [entry("edge-1", "Removing")];
    assert.match(deleteRefusal(rolledBack)!.detail, /still being removed/);
  });

  it("instantiated: refused until terminated, and asking again will not do", () => {
    const c = cloud({ lifecycle: lifecycle("Instantiate", "i1") });
    c.status = { instance: "i1", deployedStatus: "Instantiated", clusters: [entry("edge-1", "Ready")] };
    assert.match(deleteRefusal(c)!.detail, /is Instantiated: terminate it first/);
    assert.equal(deleteRefusal(c)!.soon, false);
  });
});
