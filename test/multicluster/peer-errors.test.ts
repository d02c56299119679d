import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { adminClient, exists, kubeconfigPath, tenantry } from "./support.js";

/** edge-2 as consumer and edge-1 as provider: a pair no other test peers (edge-2 consumes home elsewhere). */
const consumer = adminClient("edge-2");
const provider = adminClient("edge-1");

async function nothingCreated(): Promise<void> {
  // Only this pair's: edge-2 consumes home in the peer certificates test.
  assert.equal(
    await exists(consumer, TENANTS_API_VERSION, "Peering", "edge-1"),
    false,
    "no Peering edge-1 in edge-2",
  );
  assert.equal(await exists(consumer, "v1", "Secret", "tenantry-peer-edge-1", "tenantry-system"), false);
  assert.equal(await exists(consumer, "v1", "Node", "tenantry-edge-1"), false);
  assert.equal(await exists(provider, TENANTS_API_VERSION, "Tenant", "peer-edge-2"), false);
  assert.equal(
    await exists(provider, "v1", "ConfigMap", "tenantry-network-peer-edge-2", "tenantry-system"),
    false,
    "no gateway exchange ConfigMap",
  );
  for (const kind of ["Role", "RoleBinding"]) {
    assert.equal(
      await exists(provider, "rbac.authorization.k8s.io/v1", kind, "tenantry-peer-edge-2", "tenantry-system"),
      false,
      kind,
    );
  }
  for (const kind of ["ClusterRole", "ClusterRoleBinding"]) {
    assert.equal(
      await exists(provider, "rbac.authorization.k8s.io/v1", kind, "tenantry-peer-edge-2"),
      false,
      kind,
    );
  }
}

const pair = ["--consumer", "edge-2", "--provider", "edge-1"];

describe("tenantry peer refuses bad input and creates nothing", () => {
  const cases: [string, string[], RegExp][] = [
    [
      "a cluster with itself, by name",
      ["--consumer", "edge-2", "--provider", "edge-2"],
      /--consumer and --provider are both "edge-2": a cluster cannot peer with itself/,
    ],
    [
      "a cluster with itself, by name and by kubeconfig",
      ["--consumer", "edge-2", "--provider", kubeconfigPath("edge-2")],
      /--consumer and --provider are the same cluster \(https:\/\/127\.0\.0\.1:\d+\): a cluster cannot peer with itself/,
    ],
    [
      "an unknown cluster name",
      ["--consumer", "edge-2", "--provider", "edge-9"],
      /--provider edge-9: no cluster named "edge-9" in .* \(known: [^)]*edge-1[^)]*\); pass a kubeconfig path instead/,
    ],
    [
      "a missing kubeconfig file",
      ["--consumer", "edge-2", "--provider", "./no/such.kubeconfig"],
      /--provider \.\/no\/such\.kubeconfig: no such kubeconfig file/,
    ],
    ["no provider", ["--consumer", "edge-2"], /--provider is required/],
    [
      "--namespaces 0",
      [...pair, "--namespaces", "0"],
      /--namespaces must be a whole number from 1 to 10000, got "0"/,
    ],
    [
      "--namespaces 2.5",
      [...pair, "--namespaces", "2.5"],
      /--namespaces must be a whole number from 1 to 10000, got "2\.5"/,
    ],
    ["--cpu lots", [...pair, "--cpu", "lots"], /--cpu: "lots" is not a Kubernetes quantity/],
    ["--memory 16GB", [...pair, "--memory", "16GB"], /--memory: "16GB" is not a Kubernetes quantity/],
    ["--memory 0", [...pair, "--memory", "0"], /--memory must be more than 0, got "0"/],
    ["--pods 1.5", [...pair, "--pods", "1.5"], /--pods must be a whole number, got "1\.5"/],
    ["--timeout soon", [...pair, "--timeout", "soon"], /--timeout must be like 30s, 2m or 1h, got "soon"/],
  ];
  for (const [name, args, message] of cases) {
    test(name, async () => {
      const result = await tenantry(["peer", ...args]);
      assert.equal(result.code, 2, `${result.stdout}${result.stderr}`);
      assert.match(result.stderr, message);
      assert.equal(result.stderr.trim().split("\n").length, 1, result.stderr);
      await nothingCreated();
    });
  }
});

describe("a peering that fails half-way is rolled back and the error names the cluster", () => {
  const blocker = "tenantry:owners:peer-edge-2";

  after(async () => {
    await provider.objects
      .delete({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRoleBinding",
        metadata: { name: blocker },
      })
      .catch(() => {});
  });

  test("the provider's tenant cannot get its RBAC: the provider is named and its objects are deleted", async () => {
    // A binding of that name with another role: the tenant controller cannot apply its own (roleRef is immutable).
    await provider.objects.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: blocker },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "view" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "nobody" }],
    } as never);
    const result = await tenantry(["peer", ...pair, "--timeout", "5s"]);
    assert.equal(result.code, 1, result.stdout);
    assert.match(
      result.stderr,
      /^error: provider cluster "edge-1": Tenant peer-edge-2 not Ready within 5s \(Ready=False ReconcileFailed: .*cannot change roleRef\)/m,
    );
    assert.match(
      result.stderr,
      /rolled back: ConfigMap tenantry-system\/tenantry-network-peer-edge-2 in provider "edge-1", ClusterRoleBinding tenantry-peer-edge-2 in provider "edge-1", ClusterRole tenantry-peer-edge-2 in provider "edge-1", RoleBinding tenantry-system\/tenantry-peer-edge-2 in provider "edge-1", Role tenantry-system\/tenantry-peer-edge-2 in provider "edge-1", Tenant peer-edge-2 in provider "edge-1"/,
    );
    await nothingCreated();
  });

  test("an earlier peering's leftovers are named, and nothing is touched", async () => {
    await consumer.objects.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "tenantry-peer-edge-1", namespace: "tenantry-system" },
      stringData: { kubeconfig: "stale" },
    } as never);
    try {
      const result = await tenantry(["peer", ...pair]);
      assert.equal(result.code, 2, result.stdout);
      assert.match(
        result.stderr,
        /consumer cluster "edge-2" already has Secret tenantry-system\/tenantry-peer-edge-1: an earlier peering was not removed; run tenantry unpeer first/,
      );
      assert.equal(await exists(provider, TENANTS_API_VERSION, "Tenant", "peer-edge-2"), false);
    } finally {
      await consumer.core.deleteNamespacedSecret({
        name: "tenantry-peer-edge-1",
        namespace: "tenantry-system",
      });
    }
  });
});
