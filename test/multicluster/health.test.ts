import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eventually } from "../support/eventually.js";
import {
  adminClient,
  kubeconfigPath,
  nodeReady,
  nodeReadyBecomes,
  type Relay,
  readNode,
  readPeering,
  relayedKubeconfig,
  tempDir,
  tenantry,
} from "./support.js";

describe("the virtual node follows the provider's health", () => {
  const dir = tempDir("health");
  let relay: Relay;
  let providerConfig: string;
  const consumer = adminClient("edge-1");
  const nodeName = "tenantry-edge-2";

  before(async () => {
    // Closing the relay makes edge-2 unreachable for this peering only: every other test keeps using edge-2.
    ({ relay, kubeconfig: providerConfig } = await relayedKubeconfig(
      kubeconfigPath("edge-2"),
      dir,
      "edge-2-via-relay.kubeconfig",
    ));
    const result = await tenantry([
      "peer",
      "--consumer",
      "edge-1",
      "--provider",
      providerConfig,
      "--namespaces",
      "1",
      "--cpu",
      "2",
      "--memory",
      "4Gi",
      "--pods",
      "10",
    ]);
    assert.equal(result.code, 0, result.stderr);
  });

  after(async () => {
    await relay.open().catch(() => {});
    await tenantry(["unpeer", "--consumer", "edge-1", "--provider", providerConfig]);
    await relay.close();
  });

  test("Ready=False with a reason within the probe interval when the provider is unreachable, Ready again when it is back", async () => {
    assert.equal(nodeReady(await readNode(consumer, nodeName))?.status, "True");

    await relay.close();
    const closedAt = Date.now();
    const down = await nodeReadyBecomes(consumer, nodeName, "False", 20_000);
    const downSeconds = (Date.now() - closedAt) / 1000;
    process.stderr.write(
      `virtual node Ready=False ${downSeconds.toFixed(1)}s after edge-2 became unreachable\n`,
    );
    // Probes run every 5 s and time out after 3 s.
    assert.ok(downSeconds < 10, `took ${downSeconds}s`);
    assert.equal(down.reason, "PeerUnreachable");
    assert.match(down.message ?? "", /\/readyz: .*(ECONNREFUSED|ECONNRESET|socket hang up|no answer within)/);
    // The Peering's status is written right after the node's.
    await eventually(async () => {
      const peering = await readPeering(consumer, "edge-2");
      const healthy = peering?.status?.conditions?.find((c) => c.type === "Healthy");
      assert.equal(healthy?.status, "False");
      assert.equal(healthy?.reason, "ProbeFailed");
      assert.equal(peering?.status?.conditions?.find((c) => c.type === "Ready")?.reason, "PeerUnreachable");
    });

    // The node stays, reported by its own heartbeat: not Unknown, not deleted.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const still = nodeReady(await readNode(consumer, nodeName));
    assert.equal(still?.status, "False");
    assert.equal(still?.reason, "PeerUnreachable");

    await relay.open();
    const openedAt = Date.now();
    await nodeReadyBecomes(consumer, nodeName, "True", 20_000);
    const upSeconds = (Date.now() - openedAt) / 1000;
    process.stderr.write(`virtual node Ready=True ${upSeconds.toFixed(1)}s after edge-2 was back\n`);
    assert.ok(upSeconds < 10, `took ${upSeconds}s`);
    await eventually(async () => {
      const back = await readPeering(consumer, "edge-2");
      assert.equal(back?.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    });
  });
});
