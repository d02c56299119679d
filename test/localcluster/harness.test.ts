import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { UserError } from "../../src/common/index.js";
import { ClusterHarness, type ClusterState, isPortFree, LocalCluster } from "../../src/localcluster/index.js";
import { testEnvironment } from "../support/clusters.js";

function coreFor(state: ClusterState): CoreV1Api {
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  return kc.makeApiClient(CoreV1Api);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe("a second harness beside the shared test clusters", () => {
  let dir: string;
  let harness: ClusterHarness;
  let state: ClusterState;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tenantry-harness-"));
    harness = new ClusterHarness({ dir, log: () => {} });
    [state] = (await harness.up([
      { name: "solo", nodes: 1, extraApiserverFlags: ["--service-node-port-range=30000-30010"] },
    ])) as [ClusterState];
  });
  after(async () => {
    await harness.reset().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  test("uses ports of its own, never those of another harness", async () => {
    const shared = testEnvironment().clusters.map((c) => new URL(c.server).port);
    assert.ok(!shared.includes(String(state.ports.apiserver)));
    const status = await harness.status(["solo"]);
    assert.equal(status[0]?.state, "running");
  });

  test("passes extra kube-apiserver flags", async () => {
    await assert.rejects(
      coreFor(state).createNamespacedService({
        namespace: "default",
        body: {
          metadata: { name: "np" },
          spec: { type: "NodePort", ports: [{ port: 80, nodePort: 30500 }], selector: { app: "x" } },
        },
      }),
      (err: { body?: string }) => /valid range.*30000-30010/.test(String(err.body)),
    );
  });

  test("up on a running cluster changes nothing", async () => {
    const [again] = await harness.up([{ name: "solo", nodes: 1 }]);
    assert.deepEqual(
      again?.processes.map((p) => p.pid),
      state.processes.map((p) => p.pid),
    );
  });

  test("cleans up after a crash and starts again on the same data", async () => {
    const core = coreFor(state);
    await core.createNamespace({ body: { metadata: { name: "survivor" } } });
    // Simulate a crash: the API server dies, the rest keeps running, state.json stays behind.
    const apiserver = state.processes.find((p) => p.component === "kube-apiserver")!;
    process.kill(apiserver.pid, "SIGKILL");
    const degraded = await harness.status(["solo"]);
    assert.equal(degraded[0]?.state, "degraded");
    // A stale harness lock left by a crashed command (pid that no longer exists) must not block.
    writeFileSync(join(dir, ".lock"), JSON.stringify({ pid: 2 ** 22 + 12345, purpose: "crashed" }));

    const oldPids = state.processes.map((p) => p.pid);
    [state] = (await harness.up([{ name: "solo", nodes: 1 }])) as [ClusterState];
    for (const pid of oldPids) assert.ok(!alive(pid), `old process ${pid} still running`);
    const namespace = await coreFor(state).readNamespace({ name: "survivor" });
    assert.equal(namespace.metadata?.name, "survivor");
  });

  test("down leaves no process and no listening port behind", async () => {
    const pids = state.processes.map((p) => p.pid);
    await harness.down(["solo"]);
    for (const pid of pids) assert.ok(!alive(pid), `process ${pid} still running`);
    for (const port of Object.values(state.ports))
      assert.ok(await isPortFree(port), `port ${port} still taken`);
    const status = await harness.status(["solo"]);
    assert.equal(status[0]?.state, "stopped");
  });
});

describe("bad input", () => {
  let dir: string;
  let blocker: Server;
  let blockedPort: number;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tenantry-bad-"));
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    blockedPort = (blocker.address() as { port: number }).port;
  });
  after(async () => {
    blocker.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("a port already taken is refused with one line, and nothing is left running", async () => {
    const harness = new ClusterHarness({ dir, log: () => {} });
    await assert.rejects(harness.up([{ name: "taken", apiserverPort: blockedPort }]), (err: Error) => {
      assert.ok(err instanceof UserError);
      assert.equal(
        err.message,
        `cluster "taken" kube-apiserver: port ${blockedPort} on 127.0.0.1 is already in use; choose another port or leave it out to pick a free one`,
      );
      return true;
    });
    const statuses = await harness.status();
    assert.ok(statuses.every((s) => s.processes.length === 0 && s.state === "stopped"));
  });

  test("an unknown cluster name names the known ones", async () => {
    const harness = new ClusterHarness({ dir, log: () => {} });
    await assert.rejects(harness.status(["nope"]), /no cluster named "nope" in .*/);
    await assert.rejects(harness.down(["nope"]), UserError);
    await assert.rejects(harness.reset(["nope"]), UserError);
  });

  test("an invalid cluster name or node count is refused before anything starts", () => {
    assert.throws(() => new LocalCluster({ name: "Bad_Name" }, dir), /cluster name "Bad_Name" is not valid/);
    assert.throws(
      () => new LocalCluster({ name: "ok", nodes: 0 }, dir),
      /nodes must be a whole number from 1 to 500, got 0/,
    );
    assert.throws(
      () => new LocalCluster({ name: "ok", extraApiserverFlags: ["v=2"] }, dir),
      /extra kube-apiserver flag "v=2" must look like --name=value/,
    );
    assert.throws(
      () => new LocalCluster({ name: "ok", extraControllerManagerFlags: ["kube-api-qps=200"] }, dir),
      /extra kube-controller-manager flag "kube-api-qps=200" must look like --name=value/,
    );
  });

  test("a cluster whose API server cannot start is stopped again, with the log's tail in the error", async () => {
    const harness = new ClusterHarness({ dir, log: () => {} });
    await assert.rejects(
      harness.up([{ name: "broken", nodes: 1, extraApiserverFlags: ["--no-such-flag=1"] }]),
      /kube-apiserver exited while waiting for kube-apiserver to become ready.*\n[\s\S]*no-such-flag/,
    );
    const [status] = await harness.status(["broken"]);
    assert.equal(status?.state, "stopped");
    const state = JSON.parse(
      await readFile(join(dir, "broken", "state.json"), "utf8").catch(() => "{}"),
    ) as Partial<ClusterState>;
    for (const p of state.processes ?? []) assert.ok(!alive(p.pid));
  });
});
