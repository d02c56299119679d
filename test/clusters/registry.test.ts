/** The cluster registry on the home cluster: the embedded clusters, their health and facts, and peerings' labels. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Cluster } from "../../src/clusters/index.js";
import { findCondition, isNotFound } from "../../src/kube/index.js";
import { virtualNodeName } from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { adminClient, kubeconfigPath, readNode, tenantryOn } from "../multicluster/support.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { tenantryCli } from "../support/kubectl.js";

const home = adminClient("home");
const cli = (...args: string[]) => tenantryCli(["cluster", ...args, "--kubeconfig", kubeconfigPath("home")]);

async function readCluster(name: string): Promise<Cluster | undefined> {
  try {
    return (await home.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "Cluster",
      metadata: { name },
    })) as Cluster;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

describe("cluster registry", () => {
  test("holds the embedded clusters with health, version, capacity, user CA and tenantry identity", async () => {
    for (const name of testEnvironment().clusters.map((c) => c.name)) {
      const cluster = await eventually(async () => {
        const c = await readCluster(name);
        assert.equal(
          findCondition(c?.status?.conditions, "Ready")?.status,
          "True",
          JSON.stringify(c?.status),
        );
        assert.equal(c?.status?.clusterId, tenantryOn(name).clusterId);
        return c!;
      });
      assert.match(cluster.status?.version ?? "", /^v1\.\d+\.\d+/);
      assert.ok((cluster.status?.nodes ?? 0) >= 1);
      assert.ok(
        cluster.status?.capacity?.cpu && cluster.status.capacity.memory && cluster.status.capacity.pods,
      );
      assert.match(cluster.status?.userCa?.pem ?? "", /BEGIN CERTIFICATE/);
      assert.ok(Date.parse(cluster.status?.userCa?.notAfter ?? "") > Date.now());
      assert.ok(
        cluster.metadata?.labels?.["topology.kubernetes.io/region"],
        `${name} keeps its region label`,
      );
    }
  });

  test("peerings take a registered provider's labels from the registry: its virtual node follows a relabel", async () => {
    const key = `${uniqueName("lbl")}.example.com/zone`;
    const labelled = await cli("label", "edge-1", `${key}=blue`);
    assert.equal(labelled.code, 0, labelled.stderr);
    try {
      await eventually(async () => {
        const node = await readNode(home, virtualNodeName("edge-1"));
        assert.equal(node?.metadata?.labels?.[key], "blue");
        assert.equal(node?.metadata?.labels?.["tenantry.dev/type"], "virtual-node", "its own labels stay");
      });
    } finally {
      const unlabelled = await cli("label", "edge-1", `${key}-`);
      assert.equal(unlabelled.code, 0, unlabelled.stderr);
    }
    await eventually(async () => {
      const node = await readNode(home, virtualNodeName("edge-1"));
      assert.equal(node?.metadata?.labels?.[key], undefined);
      assert.equal(node?.metadata?.labels?.["topology.kubernetes.io/region"], "eu-south");
    });
  });
});
