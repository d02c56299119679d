/**
 * Worker nodes when things go wrong, on a cluster of this test's own (tenantry is stopped and
 * machines broken here): a provider that refuses, a machine that never joins, tenantry killed
 * between "machine created" and "status written", a machine that vanishes, a drain that a
 * PodDisruptionBudget holds up, a token whose WorkerNode never came to be.
 */
import assert from "node:assert/strict";
import { after, afterEach, before, describe, it } from "node:test";
import { CoreV1Api, PolicyV1Api } from "@kubernetes/client-node";
import { applyObject } from "../../src/kube/index.js";
import { logTail, type MachineHost } from "../../src/localcluster/index.js";
import {
  BOOTSTRAP_NAMESPACE,
  bootstrapTokenSecret,
  type LocalMachine,
  type LocalMachineHost,
  newBootstrapToken,
} from "../../src/nodes/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { eventually } from "../support/eventually.js";
import { type DedicatedCluster, startDedicatedCluster } from "./dedicated.js";
import {
  bootstrapTokensOf,
  readWorkerNode,
  waitForGone,
  waitForPhase,
  workerNodeManifest,
} from "./support.js";

/**
 * The harness's machines with faults on demand: a launch the cloud refuses, or one that goes
 * through and then never answers (what tenantry sees when it dies right after asking).
 */
class FaultyMachines implements LocalMachineHost {
  readonly refuse = new Set<string>();
  readonly hang = new Set<string>();
  readonly launches = new Map<string, number>();

  constructor(private readonly host: MachineHost) {}

  flavors() {
    return this.host.flavors();
  }

  async launch(spec: Parameters<LocalMachineHost["launch"]>[0]): Promise<LocalMachine> {
    this.launches.set(spec.name, (this.launches.get(spec.name) ?? 0) + 1);
    if (this.refuse.has(spec.name))
      throw new Error("no capacity left in zone nova: 0 of 4 hosts can take m1.small");
    const machine = await this.host.launch(spec);
    if (this.hang.has(spec.name)) return new Promise<LocalMachine>(() => {});
    return machine;
  }

  get(name: string) {
    return this.host.get(name);
  }

  list() {
    return this.host.list();
  }

  stop(name: string) {
    return this.host.stop(name);
  }

  onChange(listener: (name: string) => void) {
    return this.host.onChange(listener);
  }
}

const OWNER = "alice";
let cluster: DedicatedCluster;
let faulty: FaultyMachines;
let core: CoreV1Api;

async function create(name: string, spec: Record<string, unknown> = {}): Promise<void> {
  const result = await cluster.kubectlAs(OWNER, ["create", "-f", "-"], workerNodeManifest(name, spec));
  assert.equal(result.code, 0, result.stderr);
}

const tokensOf = (name: string) => bootstrapTokensOf(core, name);

async function nodeExists(name: string): Promise<boolean> {
  return core.readNode({ name }).then(
    () => true,
    (err: { code?: number }) => {
      if (err.code === 404) return false;
      throw err;
    },
  );
}

before(async () => {
  cluster = await startDedicatedCluster(
    "nodefaults",
    // A machine named slow-… takes a minute to boot.
    { delays: (name) => (name.startsWith("slow-") ? { bootMs: 60_000 } : {}) },
    (machines) => {
      faulty = new FaultyMachines(machines);
      return faulty;
    },
  );
  core = cluster.kc.makeApiClient(CoreV1Api);
  await cluster.createTenant("acme", {
    owners: [{ kind: "User", name: OWNER }],
    namespaces: [{ name: "dev" }],
    workerNodes: { maxNodes: 10 },
  });
  // A provider of the same machines that gives a node 8 seconds to join.
  await applyObject(cluster.tenantry.client, {
    apiVersion: TENANTS_API_VERSION,
    kind: "NodeProvider",
    metadata: { name: "hurried" },
    spec: { type: "simulated", joinTimeoutSeconds: 8 },
  });
  await eventually(async () => {
    const { stdout, stderr } = await cluster.kubectlAs(OWNER, [
      "get",
      "nodeprovider",
      "hurried",
      "-o",
      "jsonpath={.status.flavorSummary}",
    ]);
    assert.match(stdout, /m1\.small/, stderr);
  });
});

afterEach((t) => {
  // The cluster and its log are removed at the end: a failure shows what tenantry last did.
  // `passed` is Node's (22.14 and later); the installed type declarations do not know it yet.
  if ((t as { passed?: boolean }).passed === false && cluster)
    console.error(`tenantry's log, last lines:\n${logTail(cluster.logFile, 40)}`);
});

after(async () => {
  await cluster?.stop();
});

describe("worker node faults", () => {
  it("a provider that refuses the machine: Failed with its message, nothing left behind", async () => {
    faulty.refuse.add("refused-1");
    await create("refused-1");
    const failed = await waitForPhase(cluster.kc, "refused-1", "Failed");
    assert.equal(failed.status?.reason, "ProviderRefused");
    assert.match(
      failed.status?.message ?? "",
      /provider "simulated" refused the machine: no capacity left in zone nova/,
    );
    assert.equal(cluster.machines.get("refused-1"), undefined);
    await eventually(async () => assert.deepEqual(await tokensOf("refused-1"), [], "its token is deleted"));
    assert.equal(faulty.launches.get("refused-1"), 1, "asked once: a refusal is final");
  });

  it("a machine that never joins within the provider's deadline: Failed, machine and token deleted", async () => {
    await create("slow-1", { provider: "hurried" });
    await eventually(() => assert.ok(cluster.machines.get("slow-1"), "the machine was asked for"));
    const failed = await waitForPhase(cluster.kc, "slow-1", "Failed", 60_000);
    assert.equal(failed.status?.reason, "JoinTimedOut");
    assert.match(failed.status?.message ?? "", /was not Running within 8s/);
    await eventually(() => assert.equal(cluster.machines.get("slow-1"), undefined, "the machine is deleted"));
    await eventually(async () => assert.deepEqual(await tokensOf("slow-1"), []));
    await eventually(async () =>
      assert.equal((await readWorkerNode(cluster.kc, "slow-1"))?.status?.machine?.status, "DELETED"),
    );
  });

  it("tenantry killed between machine created and status written: a restarted tenantry finds it, no second machine", async () => {
    faulty.hang.add("killed-1");
    await create("killed-1");
    const launched = await eventually(() => {
      const machine = cluster.machines.get("killed-1");
      assert.ok(machine, "the cloud has the machine");
      return machine;
    });
    assert.equal(
      (await readWorkerNode(cluster.kc, "killed-1"))?.status?.machine,
      undefined,
      "not written down",
    );
    await cluster.tenantry.stop();
    await cluster.startTenantry(cluster.machines);
    const running = await waitForPhase(cluster.kc, "killed-1", "Running");
    assert.equal(running.status?.machine?.id, launched.id, "the machine it had asked for");
    assert.equal(cluster.machines.list().filter((m) => m.name === "killed-1").length, 1);
    assert.equal(faulty.launches.get("killed-1"), 1, "asked for once");
  });

  it("a machine that vanishes: reported, its Node and token cleaned up", async () => {
    await create("vanish-1");
    await waitForPhase(cluster.kc, "vanish-1", "Running");
    process.kill(cluster.machines.pid("vanish-1")!, "SIGKILL");
    const failed = await waitForPhase(cluster.kc, "vanish-1", "Failed");
    assert.equal(failed.status?.reason, "MachineVanished");
    assert.ok(
      failed.status?.conditions?.some(
        (c) => c.type === "MachineReady" && c.status === "False" && c.reason === "MachineVanished",
      ),
    );
    await eventually(async () => assert.equal(await nodeExists("vanish-1"), false, "its Node is deleted"));
    // kubectl would wait for the finalizer without bound; waitForGone bounds it and says why.
    const deleted = await cluster.kubectlAs(OWNER, ["delete", "workernode", "vanish-1", "--wait=false"]);
    assert.equal(deleted.code, 0, deleted.stderr);
    await waitForGone(cluster.kc, "vanish-1");
  });

  it("a drain a PodDisruptionBudget holds up: the timeout is reported, the Node stays until the budget allows", async () => {
    await create("drain-1", { drainTimeoutSeconds: 2 });
    await waitForPhase(cluster.kc, "drain-1", "Running");
    const pod = await cluster.kubectlAs(OWNER, [
      "-n",
      "acme-dev",
      "run",
      "pinned",
      "--image=nginx",
      "--labels=app=pinned",
      `--overrides=${JSON.stringify({ spec: { nodeSelector: { "kubernetes.io/hostname": "drain-1" } } })}`,
    ]);
    assert.equal(pod.code, 0, pod.stderr);
    await eventually(async () =>
      assert.equal(
        (await core.readNamespacedPodStatus({ namespace: "acme-dev", name: "pinned" })).status?.phase,
        "Running",
      ),
    );
    const policy = cluster.kc.makeApiClient(PolicyV1Api);
    await policy.createNamespacedPodDisruptionBudget({
      namespace: "acme-dev",
      body: {
        metadata: { name: "keep-pinned" },
        spec: { minAvailable: 1, selector: { matchLabels: { app: "pinned" } } },
      },
    });
    assert.equal(
      (await cluster.kubectlAs(OWNER, ["delete", "workernode", "drain-1", "--wait=false"])).code,
      0,
    );
    const stuck = await eventually(
      async () => {
        const node = await readWorkerNode(cluster.kc, "drain-1");
        assert.equal(node?.status?.phase, "Deleting");
        const drained = node?.status?.conditions?.find((c) => c.type === "Drained");
        assert.equal(drained?.reason, "DrainTimedOut", JSON.stringify(drained));
        return drained!;
      },
      { timeoutMs: 60_000 },
    );
    assert.match(
      stuck.message,
      /drain did not finish within 2s \(spec\.drainTimeoutSeconds\).*acme-dev\/pinned/,
    );
    assert.match(stuck.message, /disruption budget/i);
    assert.equal(await nodeExists("drain-1"), true, "the Node stays while its pod may not go");
    await policy.deleteNamespacedPodDisruptionBudget({ namespace: "acme-dev", name: "keep-pinned" });
    await waitForGone(cluster.kc, "drain-1");
    assert.equal(await nodeExists("drain-1"), false);
    await eventually(async () =>
      assert.rejects(
        core.readNamespacedPod({ namespace: "acme-dev", name: "pinned" }),
        (err: { code?: number }) => err.code === 404,
      ),
    );
  });

  it("a token made for a WorkerNode that never came to be is removed, and a taken name gets none", async () => {
    // A second request for a name the cache knows makes no token (the API server answers
    // AlreadyExists after admission).
    await create("twice-1");
    const node = await waitForPhase(cluster.kc, "twice-1", "Running");
    const again = await cluster.kubectlAs(OWNER, ["create", "-f", "-"], workerNodeManifest("twice-1", {}));
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /already exists/);
    assert.deepEqual(await tokensOf("twice-1"), [], "no token for the second request");
    assert.ok(node.metadata?.uid);
    // A token whose WorkerNode is nowhere: removed once it is older than the grace (10 s here).
    const ghost = bootstrapTokenSecret(newBootstrapToken(new Date(Date.now() + 600_000)), {
      name: "ghost-1",
      uid: "gone",
    });
    await core.createNamespacedSecret({ namespace: BOOTSTRAP_NAMESPACE, body: ghost });
    await eventually(async () => assert.deepEqual(await tokensOf("ghost-1"), []), { timeoutMs: 60_000 });
  });
});
