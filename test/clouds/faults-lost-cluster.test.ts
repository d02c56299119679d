/**
 * Logical clouds when a cluster is lost mid-instantiate: rolled back by default, kept and retried
 * on request (and `stop`ped), converging when it is back.
 *
 * The lost cluster is edge-1 registered a second time through a TCP relay: closing or
 * partitioning the relay makes it unreachable for logical clouds only, while everyone else still
 * reaches edge-1.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { readCluster, registerCluster, removeCluster } from "../../src/clusters/index.js";
import {
  adminClient,
  kubeconfigPath,
  type Relay,
  relayedKubeconfig,
  tempDir,
} from "../multicluster/support.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { cloudPath, cloudsApi, createCloud, exists, home, removeProject, statusBecomes } from "./support.js";

describe("logical clouds: a cluster lost mid-instantiate", () => {
  const project = uniqueName("faults");
  const key = `${uniqueName("fault")}.example.com/pool`;
  const lossy = uniqueName("lossy");
  const clouds: string[] = [];
  const edge1 = adminClient("edge-1");
  const edge2 = adminClient("edge-2");
  let relay: Relay;

  before(async () => {
    const through = await relayedKubeconfig(
      kubeconfigPath("edge-1"),
      tempDir("faults"),
      "edge-1-relay.kubeconfig",
    );
    relay = through.relay;
    await registerCluster(home(), {
      name: lossy,
      kubeconfig: readFileSync(through.kubeconfig, "utf8"),
      labels: { [key]: "a" },
      checkReachable: false,
    });
  });

  after(async () => {
    await relay.open();
    await removeProject(project, clouds);
    await removeCluster(home(), lossy).catch(() => {});
    await eventually(async () => assert.rejects(readCluster(home(), lossy)), { timeoutMs: 60_000 }).catch(
      () => {},
    );
    await relay.close();
  });

  /** A cloud over the lossy cluster and edge-2 (by name), in a namespace of its own. */
  async function cloudOverLossyAndEdge2(): Promise<string> {
    const cloud = uniqueName("lc");
    clouds.push(cloud);
    await createCloud(project, cloud, {
      references: [
        { metadata: { name: "pool" }, spec: { clusterSelector: { matchLabels: { [key]: "a" } } } },
        { metadata: { name: "e2" }, spec: { cluster: "edge-2" } },
      ],
    });
    return cloud;
  }

  test("a cluster lost mid-instantiate: rolled back everywhere; once it is back, instantiating again converges", async () => {
    const cloud = await cloudOverLossyAndEdge2();
    relay.partition();
    const started = await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`);
    assert.equal(started.status, 202, started.text);
    const failed = await statusBecomes(
      project,
      cloud,
      (s) => {
        assert.equal(s.deployedStatus, "InstantiateFailed", JSON.stringify(s));
        assert.match(s.message, new RegExp(`cluster "${lossy}"`));
        const e2 = s.clusters.find((c: { cluster: string }) => c.cluster === "edge-2");
        assert.equal(e2.state, "Removed", "edge-2 is rolled back");
      },
      120_000,
    );
    assert.match(failed.message, /rolled back/);
    assert.equal(await exists(edge2, "v1", "Namespace", cloud), false);
    const again = await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`);
    assert.equal(again.status, 409, "not while the lost cluster is still being rolled back");

    await relay.open();
    await statusBecomes(
      project,
      cloud,
      (s) => {
        for (const c of s.clusters) assert.equal(c.state, "Removed", JSON.stringify(s));
      },
      120_000,
    );
    const retried = await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`);
    assert.equal(retried.status, 202, retried.text);
    await statusBecomes(
      project,
      cloud,
      (s) => {
        assert.equal(s.deployedStatus, "Instantiated", JSON.stringify(s));
        assert.deepEqual(
          s.clusters.map((c: { state: string }) => c.state),
          ["Ready", "Ready"],
        );
      },
      120_000,
    );
    assert.equal(await exists(edge1, "v1", "Namespace", cloud), true);
    assert.equal(await exists(edge2, "v1", "Namespace", cloud), true);
  });

  test("onFailure keep: the others stay configured, the lost cluster is reported and converges when it is back", async () => {
    const cloud = await cloudOverLossyAndEdge2();
    await relay.close();
    try {
      const started = await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`, {
        body: { onFailure: "keep" },
      });
      assert.equal(started.status, 202, started.text);
      const failed = await statusBecomes(
        project,
        cloud,
        (s) => {
          assert.equal(s.deployedStatus, "InstantiateFailed", JSON.stringify(s));
          const lost = s.clusters.find((c: { cluster: string }) => c.cluster === lossy);
          assert.equal(lost.state, "Failed");
          assert.equal(lost.reason, "Unreachable");
          assert.equal(lost.connectivity, "Retrying");
          assert.equal(s.clusters.find((c: { cluster: string }) => c.cluster === "edge-2").state, "Ready");
        },
        120_000,
      );
      assert.equal(failed.readyStatus, undefined);
      assert.equal(await exists(edge2, "v1", "Namespace", cloud), true, "edge-2 stays configured");
      const summary = await cloudsApi("GET", `${cloudPath(project, cloud)}/status`);
      assert.equal(summary.body.status, "NotReady", "never reported ready before every cluster is");
      assert.equal((await cloudsApi("POST", `${cloudPath(project, cloud)}/stop`)).status, 200);
      await statusBecomes(project, cloud, (s) => {
        assert.equal(s.state, "InstantiateStopped", JSON.stringify(s));
        assert.match(s.message, /retries stopped/);
      });
    } finally {
      await relay.open();
    }
    // Retrying picks up where it stopped: edge-2 is left as it is, the lost cluster is configured.
    const retried = await cloudsApi("POST", `${cloudPath(project, cloud)}/instantiate`, {
      body: { onFailure: "keep" },
    });
    assert.equal(retried.status, 202, retried.text);
    await statusBecomes(
      project,
      cloud,
      (s) => {
        assert.equal(s.deployedStatus, "Instantiated", JSON.stringify(s));
      },
      120_000,
    );
    assert.equal(await exists(edge1, "v1", "Namespace", cloud), true);
  });
});
