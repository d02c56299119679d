/**
 * Logical clouds when things go wrong, all clusters answering: two instantiates at once, a
 * namespace that is someone else's, a cluster removed from the registry while configured.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, describe, test } from "node:test";
import { readCluster, registerCluster, removeCluster } from "../../src/clusters/index.js";
import { adminClient, kubeconfigPath } from "../multicluster/support.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { cloudPath, cloudsApi, createCloud, exists, home, removeProject, statusBecomes } from "./support.js";

describe("logical clouds: refusals and removals", () => {
  const project = uniqueName("faults");
  const key = `${uniqueName("fault")}.example.com/pool`;
  const clouds: string[] = [];
  const edge1 = adminClient("edge-1");
  const edge2 = adminClient("edge-2");

  after(async () => {
    await removeProject(project, clouds);
  });

  test("two instantiates at once: one wins, the other is told", async () => {
    const cloud = uniqueName("lc");
    clouds.push(cloud);
    await createCloud(project, cloud, {
      references: [{ metadata: { name: "e2" }, spec: { cluster: "edge-2" } }],
    });
    const answers = await Promise.all([
      cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`),
      cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`),
    ]);
    assert.deepEqual(answers.map((a) => a.status).sort(), [202, 409], answers.map((a) => a.text).join("\n"));
    assert.match(answers.find((a) => a.status === 409)!.body.detail, /already being instantiated/);
    await statusBecomes(project, cloud, (s) =>
      assert.equal(s.deployedStatus, "Instantiated", JSON.stringify(s)),
    );
    assert.equal((await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`)).status, 409);
    assert.equal(
      (await cloudsApi("DELETE", cloudPath(project, cloud))).status,
      409,
      "not deleted while instantiated",
    );
  });

  test("a namespace that exists and is not the cloud's: refused there, rolled back elsewhere, left untouched", async () => {
    const cloud = uniqueName("lc");
    clouds.push(cloud);
    await edge2.core.createNamespace({
      body: { metadata: { name: cloud, labels: { owner: "someone-else" } } },
    });
    try {
      await createCloud(project, cloud, {
        references: [
          { metadata: { name: "e1" }, spec: { cluster: "edge-1" } },
          { metadata: { name: "e2" }, spec: { cluster: "edge-2" } },
        ],
      });
      assert.equal((await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`)).status, 202);
      await statusBecomes(project, cloud, (s) => {
        assert.equal(s.deployedStatus, "InstantiateFailed", JSON.stringify(s));
        assert.match(
          s.message,
          /namespace ".*" already exists in cluster "edge-2" and is not this logical cloud's/,
        );
        for (const c of s.clusters) assert.equal(c.state, "Removed", JSON.stringify(s));
      });
      const ns = await edge2.core.readNamespace({ name: cloud });
      assert.equal(ns.metadata?.labels?.owner, "someone-else");
      assert.equal(ns.metadata?.deletionTimestamp, undefined);
      assert.equal(await exists(edge1, "v1", "Namespace", cloud), false);
    } finally {
      await edge2.core.deleteNamespace({ name: cloud }).catch(() => {});
    }
  });

  test("removing a registered cluster cleans the cloud up there before the registration goes", async () => {
    const extra = uniqueName("extra");
    await registerCluster(home(), {
      name: extra,
      kubeconfig: readFileSync(kubeconfigPath("edge-2"), "utf8"),
      labels: { [`${key}-extra`]: "yes" },
      checkReachable: false,
    });
    const cloud = uniqueName("lc");
    clouds.push(cloud);
    await createCloud(project, cloud, {
      references: [
        {
          metadata: { name: "extra" },
          spec: { clusterSelector: { matchLabels: { [`${key}-extra`]: "yes" } } },
        },
      ],
    });
    assert.equal((await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`)).status, 202);
    await statusBecomes(project, cloud, (s) =>
      assert.equal(s.deployedStatus, "Instantiated", JSON.stringify(s)),
    );
    assert.equal(await exists(edge2, "v1", "Namespace", cloud), true);
    const held = await readCluster(home(), extra);
    assert.ok(held.metadata?.finalizers?.includes("tenantry.dev/logical-clouds"));

    await removeCluster(home(), extra);
    await eventually(async () => assert.rejects(readCluster(home(), extra), /is not registered/), {
      timeoutMs: 90_000,
    });
    assert.equal(
      await exists(edge2, "v1", "Namespace", cloud),
      false,
      "cleaned before the registration went",
    );
    await statusBecomes(project, cloud, (s) => assert.deepEqual(s.clusters, []));
  });
});
