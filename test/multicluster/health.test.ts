import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { parse, stringify } from "yaml";
import { freePort } from "../../src/localcluster/index.js";
import { eventually } from "../support/eventually.js";
import {
  adminClient,
  kubeconfigPath,
  nodeReady,
  readNode,
  readPeering,
  tempDir,
  tenantry,
  writeTemp,
} from "./support.js";

/**
 * A TCP relay in front of edge-2's kube-apiserver: closing it makes edge-2 unreachable for the
 * peering that goes through it, while every other test keeps using edge-2 directly.
 */
class Relay {
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  async open(): Promise<void> {
    if (this.server) return;
    this.server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(this.port, "127.0.0.1", () => resolve());
    });
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe("the virtual node follows the provider's health", () => {
  const dir = tempDir("health");
  let relay: Relay;
  let providerConfig: string;
  const consumer = adminClient("edge-1");
  const nodeName = "tenantry-edge-2";

  before(async () => {
    const admin = parse(readFileSync(kubeconfigPath("edge-2"), "utf8")) as {
      clusters: { cluster: { server: string } }[];
    };
    const upstream = new URL(admin.clusters[0]!.cluster.server);
    relay = new Relay(await freePort(), { host: upstream.hostname, port: Number(upstream.port) });
    await relay.open();
    // edge-2's admin kubeconfig, through the relay (the API server's certificate names 127.0.0.1, whatever the port).
    for (const entry of admin.clusters) entry.cluster.server = `https://127.0.0.1:${relay.port}`;
    providerConfig = writeTemp(dir, "edge-2-via-relay.kubeconfig", stringify(admin));
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
    const down = await eventually(
      async () => {
        const ready = nodeReady(await readNode(consumer, nodeName));
        assert.equal(ready?.status, "False");
        return ready!;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
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
    await eventually(
      async () => assert.equal(nodeReady(await readNode(consumer, nodeName))?.status, "True"),
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    const upSeconds = (Date.now() - openedAt) / 1000;
    process.stderr.write(`virtual node Ready=True ${upSeconds.toFixed(1)}s after edge-2 was back\n`);
    assert.ok(upSeconds < 10, `took ${upSeconds}s`);
    await eventually(async () => {
      const back = await readPeering(consumer, "edge-2");
      assert.equal(back?.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    });
  });
});
