/**
 * Replicas running different capabilities (`--components`): each capability's leader-only
 * controllers are elected on a Lease of their own, `tenantry-<capability>`. Three tenantry
 * processes share a cluster of the test's own — two with overlapping capabilities and one serving
 * only the webhooks. Every capability has exactly one replica running its controllers, the holder
 * of its Lease; the webhooks-only replica holds none; and a leader killed with SIGKILL hands what
 * the other replica also runs over to it, once its Leases expire. The previous version's one Lease,
 * `tenantry-controllers`, stays held by a replica of this version, so none of that version leads.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { controllersLease, LEGACY_CONTROLLERS_LEASE, TENANTRY_NAMESPACE } from "../../src/app/tenantry.js";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import {
  ClusterHarness,
  type ClusterState,
  freePort,
  webhookClientCaFile,
} from "../../src/localcluster/index.js";
import { startTenantryProcess, type TenantryProcess } from "../../testing/index.js";
import { eventually } from "../support/eventually.js";

interface Replica {
  identity: string;
  components: string[];
  metricsPort: number;
  process?: TenantryProcess;
}

const REPLICAS: Omit<Replica, "metricsPort">[] = [
  { identity: "replica-a", components: ["webhooks", "tenants", "nodes", "monitor", "storage"] },
  { identity: "replica-b", components: ["tenants", "nodes", "monitor", "clusters", "gateway"] },
  { identity: "replica-c", components: ["webhooks"] },
];

/** The capabilities with controllers each replica runs: every other name leads nothing. */
const LED = ["tenants", "nodes", "monitor", "storage", "clusters"];

/** `tenantry_leading{capability}` of one replica: the capabilities whose controllers run there. */
async function leadingOf(replica: Replica): Promise<{ competing: string[]; leading: string[] }> {
  const response = await fetch(`http://127.0.0.1:${replica.metricsPort}/metrics`);
  assert.equal(response.status, 200);
  const competing: string[] = [];
  const leading: string[] = [];
  for (const line of (await response.text()).split("\n")) {
    const match = /^tenantry_leading\{capability="([^"]+)"\} (\d)/.exec(line);
    if (!match) continue;
    competing.push(match[1]!);
    if (match[2] === "1") leading.push(match[1]!);
  }
  return { competing: competing.sort(), leading: leading.sort() };
}

/** The holder of each of tenantry's Leases, by name. */
async function leaseHolders(client: ClusterClient): Promise<Map<string, string>> {
  const { items } = await client.coordination.listNamespacedLease({ namespace: TENANTRY_NAMESPACE });
  return new Map(items.map((lease) => [lease.metadata!.name!, lease.spec?.holderIdentity ?? ""]));
}

describe("replicas running different capabilities", { timeout: 20 * 60_000 }, () => {
  let harness: ClusterHarness;
  let state: ClusterState;
  let dir: string;
  let client: ClusterClient;
  const replicas: Replica[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tenantry-components-"));
    harness = new ClusterHarness({ dir, log: () => {} });
    [state] = (await harness.up([{ name: "components", nodes: 1 }])) as [ClusterState];
    client = loadClusterClient("components-test", state.kubeconfig);
    for (const replica of REPLICAS) replicas.push({ ...replica, metricsPort: await freePort() });
    // One after another: the first to start creates the CRDs and the webhook certificate.
    for (const replica of replicas) {
      replica.process = await startTenantryProcess({
        cluster: "components",
        kubeconfig: state.kubeconfig,
        webhookClientCaFile: webhookClientCaFile(state),
        logFile: join(dir, `${replica.identity}.log`),
        identity: replica.identity,
        webhookPort: await freePort(),
        metricsPort: replica.metricsPort,
        components: replica.components,
        readyTimeoutMs: 300_000,
      });
    }
  });

  after(async () => {
    for (const replica of replicas) await replica.process?.kill();
    await harness?.reset().catch(() => {});
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Every capability in `led` runs on exactly one replica, the one its Lease names; the others on none. */
  async function assertOneLeaderEach(alive: Replica[], led: Map<string, string[]>) {
    const holders = await leaseHolders(client);
    const views = new Map(
      await Promise.all(alive.map(async (r) => [r.identity, await leadingOf(r)] as const)),
    );
    for (const capability of LED) {
      const runners = alive.filter((r) => views.get(r.identity)!.leading.includes(capability));
      const candidates = led.get(capability) ?? [];
      if (candidates.length === 0) {
        assert.deepEqual(runners, [], `nobody alive runs ${capability}'s controllers`);
        continue;
      }
      const holder = holders.get(controllersLease(capability));
      assert.ok(holder && candidates.includes(holder), `${capability}: Lease held by one of ${candidates}`);
      assert.deepEqual(
        runners.map((r) => r.identity),
        [holder],
        `${capability}: its controllers run on the Lease's holder alone`,
      );
    }
    return { holders, views };
  }

  it("gives each capability one leader, on its own Lease; a webhooks-only replica holds none", async () => {
    const runs = (capability: string) =>
      replicas.filter((r) => r.components.includes(capability)).map((r) => r.identity);
    const led = new Map(LED.map((c) => [c, runs(c)]));
    const { holders, views } = await eventually(() => assertOneLeaderEach(replicas, led), {
      timeoutMs: 180_000,
      intervalMs: 1000,
    });
    // A Lease for each capability with controllers someone runs, and no other: not for the webhooks,
    // the gateway, nor the capabilities started only as dependencies (multicluster, access, …).
    // The previous version's one Lease is held by a replica of this one, fencing that version out.
    assert.deepEqual(
      [...holders.keys()]
        .filter((name) => name.startsWith("tenantry-") && name !== LEGACY_CONTROLLERS_LEASE)
        .sort(),
      LED.map(controllersLease).sort(),
    );
    const fence = holders.get(LEGACY_CONTROLLERS_LEASE) ?? "";
    assert.match(fence, /^replica-[ab] \(per-capability Leases\)$/, "held by a replica that leads");
    assert.deepEqual(views.get("replica-a")!.competing, ["monitor", "nodes", "storage", "tenants"]);
    assert.deepEqual(views.get("replica-b")!.competing, ["clusters", "monitor", "nodes", "tenants"]);
    assert.deepEqual(views.get("replica-c")!.competing, [], "the webhooks-only replica competes for nothing");
    assert.ok(![...holders.values()].some((holder) => holder.startsWith("replica-c")));
  });

  it("hands a killed leader's capabilities to the replica that also runs them", async () => {
    const holders = await leaseHolders(client);
    const leader = replicas.find((r) => r.identity === holders.get(controllersLease("tenants")))!;
    const survivor = replicas.find((r) => r !== leader && r.components.includes("tenants"))!;
    const heldBefore = LED.filter((c) => holders.get(controllersLease(c)) === leader.identity);
    await leader.process!.kill();
    const alive = replicas.filter((r) => r !== leader);
    const led = new Map(
      LED.map((c) => [c, alive.filter((r) => r.components.includes(c)).map((r) => r.identity)]),
    );
    const after = await eventually(() => assertOneLeaderEach(alive, led), {
      timeoutMs: 180_000,
      intervalMs: 1000,
    });
    for (const capability of heldBefore) {
      if (survivor.components.includes(capability))
        assert.equal(
          after.holders.get(controllersLease(capability)),
          survivor.identity,
          `${capability} handed over`,
        );
    }
    assert.ok(heldBefore.includes("tenants"));
    await eventually(
      async () =>
        assert.equal(
          (await leaseHolders(client)).get(LEGACY_CONTROLLERS_LEASE),
          `${survivor.identity} (per-capability Leases)`,
        ),
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    assert.ok(after.views.get(survivor.identity)!.leading.includes("tenants"));
  });
});
