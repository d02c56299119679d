/**
 * tenantry killed with SIGKILL at 50 random points while 100 tenants are created, changed and
 * deleted and pods are admitted against their quotas, then started again each time: whatever it was
 * doing when it died, the cluster must converge to exactly what the Tenants say — no orphaned
 * object, no duplicate, and every quota's ledger equal to a recount of the pods.
 *
 * tenantry runs as a child process against a cluster of its own (it is the only tenantry there);
 * the next process is loaded ahead and waits, so a restart costs tenantry's own start, not loading
 * its code. The randomness is seeded: the seed is printed, and TENANTRY_CHAOS_SEED replays a run.
 */
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  NetworkingV1Api,
  RbacAuthorizationV1Api,
  type V1Pod,
} from "@kubernetes/client-node";
import { loadClusterClient } from "../../src/kube/index.js";
import { ClusterHarness, type ClusterState, webhookClientCaFile } from "../../src/localcluster/index.js";
import type { Tenant, TenantResourceQuota } from "../../src/tenants/index.js";
import { standbyTenantryProcess, type TenantryProcessOptions } from "../../testing/index.js";
import { eventually } from "../support/eventually.js";
import { seeded } from "../support/seeded.js";

/** 100 tenants and 50 kills; smaller runs (TENANTRY_CHAOS_TENANTS, TENANTRY_CHAOS_KILLS) for a quick look. */
const TENANTS = Number(process.env.TENANTRY_CHAOS_TENANTS ?? 100);
const KILLS = Number(process.env.TENANTRY_CHAOS_KILLS ?? 50);
const CONCURRENCY = 8;
/** About one kill in three lands while tenantry starts, the others while its controllers work. */
const STARTUP_KILL_SHARE = 1 / 3;
const SEED = process.env.TENANTRY_CHAOS_SEED ? Number(process.env.TENANTRY_CHAOS_SEED) : randomInt(2 ** 31);

const group = { group: "tenantry.dev", version: "v1alpha1" };

type Step =
  | "create"
  | "add-namespace"
  | "drop-namespace"
  | "grow-quota"
  | "add-user"
  | "pods"
  | "delete-pod"
  | "delete";

interface Operation {
  tenant: string;
  step: Step;
}

/** What each tenant must look like in the end, from the operations it went through. */
interface Expected {
  deleted: boolean;
  namespaces: Set<string>;
  user: boolean;
}

const ownerOf = (tenant: string) => `owner-${tenant}`;
const memberOf = (tenant: string) => `member-${tenant}`;

function initialSpec(tenant: string): Tenant["spec"] {
  return {
    owners: [{ kind: "User", name: ownerOf(tenant) }],
    namespaces: [{ name: "a" }, { name: "b" }],
    quota: { hard: { pods: "2", "requests.cpu": "2" } },
  };
}

/** Each tenant's steps in order (create first, delete last), interleaved at random across tenants. */
function plan(
  random: () => number,
  prefix: string,
): { operations: Operation[]; expected: Map<string, Expected> } {
  const pick = <T>(items: T[]) => items[Math.floor(random() * items.length)]!;
  const queues: Operation[][] = [];
  const expected = new Map<string, Expected>();
  for (let i = 0; i < TENANTS; i++) {
    const tenant = `${prefix}-${i}`;
    const steps: Step[] = ["create"];
    const optional: Step[] = ["add-namespace", "drop-namespace", "grow-quota", "add-user", "pods"];
    for (const step of optional)
      if (random() < 0.5) steps.splice(1 + Math.floor(random() * steps.length), 0, step);
    if (steps.includes("pods") && random() < 0.5) steps.push("delete-pod");
    const deleted = random() < 0.3;
    if (deleted) steps.push("delete");
    queues.push(steps.map((step) => ({ tenant, step })));
    const namespaces = new Set([`${tenant}-a`, `${tenant}-b`]);
    if (steps.includes("add-namespace")) namespaces.add(`${tenant}-c`);
    if (steps.includes("drop-namespace")) namespaces.delete(`${tenant}-b`);
    expected.set(tenant, {
      deleted,
      namespaces: deleted ? new Set() : namespaces,
      user: steps.includes("add-user"),
    });
  }
  const operations: Operation[] = [];
  while (queues.some((q) => q.length)) operations.push(pick(queues.filter((q) => q.length)).shift()!);
  return { operations, expected };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

const statusOf = (err: unknown) => (err instanceof ApiException ? err.code : undefined);
const bodyOf = (err: unknown) => String((err as { body?: unknown }).body ?? err);

describe(`tenantry killed ${KILLS} times while ${TENANTS} tenants come and go (seed ${SEED})`, () => {
  const random = seeded(SEED);
  /** The kill points' own stream, so that they replay whatever the workers' timing. */
  const chaos = seeded(SEED ^ 0x5bd1e995);
  const prefix = `chaos${SEED.toString(36).slice(0, 4)}`;
  const { operations, expected } = plan(random, prefix);
  let dir: string;
  let harness: ClusterHarness;
  let state: ClusterState;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;
  /**
   * The API as a tenant's owner (the administrator's credentials, impersonating): pods are made as
   * their users make them. An administrator's own requests are never blocked by an outage of
   * tenantry (its webhooks ignore failures for them), so they would pass unchecked while it is down.
   */
  const coreAs = new Map<string, CoreV1Api>();
  function coreOf(user: string): CoreV1Api {
    let api = coreAs.get(user);
    if (!api) {
      const kc = new KubeConfig();
      kc.loadFromFile(state.kubeconfig);
      const current = kc.getCurrentUser()!;
      kc.users = kc.users.map((u) => (u.name === current.name ? { ...u, impersonateUser: user } : u));
      api = kc.makeApiClient(CoreV1Api);
      coreAs.set(user, api);
    }
    return api;
  }
  let processOptions: TenantryProcessOptions;
  type Standby = Awaited<ReturnType<typeof standbyTenantryProcess>>;
  /** Processes that have loaded tenantry's code and wait to start, so that loading never delays a restart. */
  const standbys: Promise<Standby>[] = [];
  /** The tenantry process running now, or starting. */
  let current: Life | undefined;
  /** How long each start took, from the start signal to controllers running: where start-up kills land. */
  const startups: number[] = [];
  let startupKills = 0;
  /** Milliseconds tenantry's controllers ran in the lives that ended. */
  let worked = 0;
  let kills = 0;
  /** Set when the run fails: the workers stop, and the cluster's and tenantry's logs stay behind. */
  let failed = false;
  let converged = false;
  let monkey: Promise<void> | undefined;
  /** Pods the API server admitted, and those refused for quota (never retried). */
  const quotaRefusals: string[] = [];

  before(async () => {
    process.stdout.write(`chaos seed ${SEED} (replay with TENANTRY_CHAOS_SEED=${SEED})\n`);
    dir = await mkdtemp(join(tmpdir(), "tenantry-chaos-"));
    harness = new ClusterHarness({ dir });
    [state] = (await harness.up([{ name: "chaos", nodes: 1 }])) as [ClusterState];
    const client = loadClusterClient("chaos-test", state.kubeconfig);
    custom = client.kubeConfig.makeApiClient(CustomObjectsApi);
    core = client.kubeConfig.makeApiClient(CoreV1Api);
    processOptions = {
      cluster: "chaos",
      kubeconfig: state.kubeconfig,
      webhookClientCaFile: webhookClientCaFile(state),
      logFile: join(dir, "tenantry.log"),
      // A restarted container keeps its pod's name: the same identity takes the Lease back at once.
      identity: "tenantry-chaos",
      webhookPort: await freePort(),
      // Loading and starting take minutes on a crowded machine; a start that never comes still fails.
      readyTimeoutMs: 300_000,
      // The servers this test does not use: each would only lengthen every restart.
      without: ["gateway", "runtimes-admin", "runtimes-proxy", "logical-clouds"],
    };
    for (let i = 0; i < 3; i++) standbys.push(standbyTenantryProcess(processOptions));
    current = await startNext();
    if (!(await current.ready)) throw new Error("tenantry did not start");
  });

  after(async () => {
    failed = true;
    await monkey?.catch(() => {});
    await current?.process.kill();
    for (const standby of standbys) await (await standby.catch(() => undefined))?.kill();
    if (converged) {
      await harness?.reset().catch(() => {});
      if (dir) await rm(dir, { recursive: true, force: true });
    } else {
      await harness?.down().catch(() => {});
      process.stdout.write(`chaos run kept for inspection: ${dir} (tenantry.log, chaos/logs)\n`);
    }
  });

  interface Life {
    process: Standby;
    /** true once its controllers run; false if it was killed before. */
    ready: Promise<boolean>;
    /** When its controllers started running. */
    upAt?: number;
    killed: boolean;
  }

  /**
   * Starts a waiting process. The next waiting one is loaded only once this one is up (or dead):
   * loading tenantry's code would otherwise compete with its start for this machine's CPU. A start
   * that fails by itself (not killed) fails the run: a kill mid-start must not leave tenantry unable
   * to start.
   */
  async function startNext(): Promise<Life> {
    const process = await standbys.shift()!;
    const began = Date.now();
    const life: Life = { process, killed: false, ready: Promise.resolve(false) };
    life.ready = process.start().then(
      () => {
        life.upAt = Date.now();
        startups.push(life.upAt - began);
        return true;
      },
      (err: Error) => {
        if (life.killed) return false;
        failed = true;
        throw new Error(`tenantry failed to start after kill ${kills}: ${err.message}`);
      },
    );
    standbys.push(life.ready.catch(() => false).then(() => standbyTenantryProcess(processOptions)));
    return life;
  }

  /** SIGKILL, wherever tenantry is, then a waiting process takes over. */
  async function killAndRestart(): Promise<void> {
    current!.killed = true;
    await current!.process.kill();
    if (current!.upAt !== undefined) worked += Date.now() - current!.upAt;
    kills++;
    current = await startNext();
  }
  /**
   * How long tenantry's controllers have been running, over all its lives: the clock for the
   * operations' deadlines, so that a slow machine (a restart here can take a minute) is not
   * mistaken for tenantry failing to do its work.
   */
  function workedMs(): number {
    return worked + (current?.upAt !== undefined ? Date.now() - current.upAt : 0);
  }

  /**
   * Runs a request until it answers for itself: refusals while tenantry is down are retried, for
   * up to 120 s of tenantry running (and 20 min in all).
   */
  async function persist(
    what: string,
    request: () => Promise<unknown>,
    final: (err: unknown) => boolean,
    context: () => Promise<string> = async () => "",
  ) {
    const since = workedMs();
    const deadline = Date.now() + 20 * 60_000;
    for (;;) {
      if (failed) throw new Error(`${what}: the run already failed`);
      try {
        await request();
        return;
      } catch (err) {
        if (final(err)) return;
        if (workedMs() - since > 120_000 || Date.now() > deadline)
          throw new Error(
            `${what}: still failing after tenantry ran for ${Math.round((workedMs() - since) / 1000)} s: ${bodyOf(err)}${await context()}`,
          );
        await sleep(200 + Math.floor(random() * 300));
      }
    }
  }

  /** What the cluster says of a tenant, for a failure's message. */
  async function tenantState(tenant: string): Promise<string> {
    const found = await custom
      .getClusterCustomObject({ ...group, plural: "tenants", name: tenant })
      .then((t) => t as Tenant)
      .catch((err: unknown) => `${statusOf(err) ?? bodyOf(err)}`);
    const namespaces = await core
      .listNamespace({ labelSelector: `tenantry.dev/tenant=${tenant}` })
      .then((list) =>
        list.items.map((n) => `${n.metadata!.name}${n.metadata!.deletionTimestamp ? " (deleting)" : ""}`),
      )
      .catch((err: unknown) => [`${bodyOf(err)}`]);
    const tenantText =
      typeof found === "string"
        ? `not readable: ${found}`
        : `generation ${found.metadata?.generation}, status ${JSON.stringify(found.status)}`;
    return `\n  tenant ${tenant}: ${tenantText}\n  its namespaces: [${namespaces.join(", ")}]`;
  }

  async function updateSpec(tenant: string, change: (spec: Tenant["spec"]) => void): Promise<void> {
    await persist(
      `update ${tenant}`,
      async () => {
        const current = (await custom.getClusterCustomObject({
          ...group,
          plural: "tenants",
          name: tenant,
        })) as Tenant;
        change(current.spec);
        await custom.replaceClusterCustomObject({ ...group, plural: "tenants", name: tenant, body: current });
      },
      () => false,
    );
  }

  const pod = (name: string): V1Pod => ({
    metadata: { name },
    spec: {
      containers: [
        { name: "c", image: "nginx", resources: { requests: { cpu: "500m" }, limits: { cpu: "500m" } } },
      ],
    },
  });

  async function run(op: Operation): Promise<void> {
    const { tenant } = op;
    switch (op.step) {
      case "create":
        return persist(
          `create ${tenant}`,
          () =>
            custom.createClusterCustomObject({
              ...group,
              plural: "tenants",
              body: {
                apiVersion: "tenantry.dev/v1alpha1",
                kind: "Tenant",
                metadata: { name: tenant },
                spec: initialSpec(tenant),
              },
            }),
          // An earlier try may have succeeded before its answer was lost.
          (err) => statusOf(err) === 409,
        );
      case "add-namespace":
        return updateSpec(tenant, (spec) => {
          if (!spec.namespaces?.some((n) => n.name === "c"))
            spec.namespaces = [...(spec.namespaces ?? []), { name: "c" }];
        });
      case "drop-namespace":
        return updateSpec(tenant, (spec) => {
          spec.namespaces = (spec.namespaces ?? []).filter((n) => n.name !== "b");
        });
      case "grow-quota":
        return updateSpec(tenant, (spec) => {
          spec.quota = { hard: { pods: "4", "requests.cpu": "2" } };
        });
      case "add-user":
        return updateSpec(tenant, (spec) => {
          if (!spec.users?.some((u) => u.name === memberOf(tenant)))
            spec.users = [...(spec.users ?? []), { name: memberOf(tenant), role: "view" }];
        });
      case "pods":
        // Three pods against a quota of two (or four): one may be refused, for quota only.
        await Promise.all(
          ["p0", "p1", "p2"].map((name) =>
            persist(
              `pod ${tenant}-a/${name}`,
              () =>
                coreOf(ownerOf(tenant)).createNamespacedPod({ namespace: `${tenant}-a`, body: pod(name) }),
              (err) => {
                if (statusOf(err) === 409) return true;
                if (statusOf(err) === 403 && /exceeded quota of tenant/.test(bodyOf(err))) {
                  quotaRefusals.push(`${tenant}-a/${name}`);
                  return true;
                }
                return false;
              },
              () => tenantState(tenant),
            ),
          ),
        );
        return;
      case "delete-pod":
        return persist(
          `delete pod ${tenant}-a/p0`,
          () => core.deleteNamespacedPod({ name: "p0", namespace: `${tenant}-a`, gracePeriodSeconds: 0 }),
          (err) => statusOf(err) === 404,
        );
      case "delete":
        return persist(
          `delete ${tenant}`,
          () => custom.deleteClusterCustomObject({ ...group, plural: "tenants", name: tenant }),
          (err) => statusOf(err) === 404,
        );
    }
  }

  it(`every operation completes although tenantry dies at ${KILLS} random points`, async () => {
    // Kill k comes once k/KILLS of the operations are done, after tenantry has been up for a random
    // while: spread over the whole workload, at random points of tenantry's own work, and never so
    // close together that tenantry cannot get anything done between them.
    let finished = 0;
    monkey = (async () => {
      for (let k = 1; k <= KILLS; k++) {
        while (!failed && finished < Math.floor(((k - 1) * operations.length) / KILLS)) await sleep(50);
        if (failed) return;
        const life = current!;
        if (chaos() < STARTUP_KILL_SHARE) {
          // At a random point of its start-up: installing CRDs, registering webhooks, taking the
          // Lease, syncing caches. If it is up by then, early in its work.
          const typical = startups.length
            ? startups.slice().sort((a, b) => a - b)[startups.length >> 1]!
            : 5000;
          await sleep(Math.floor(chaos() * typical));
          if (life.upAt === undefined) startupKills++;
        } else {
          // At a random point of its work: its controllers run, for 0.3–2.5 s.
          await life.ready;
          await sleep(300 + Math.floor(chaos() * 2200));
        }
        await killAndRestart();
      }
      if (!(await current!.ready)) throw new Error("tenantry did not start after the last kill");
    })().catch((err: unknown) => {
      failed = true;
      throw err;
    });
    const busy = new Set<string>();
    const taken = operations.map(() => false);
    let first = 0;
    /** The first operation not taken whose tenant is idle: each tenant's steps stay in order. */
    const nextOperation = () => {
      while (first < operations.length && taken[first]) first++;
      for (let i = first; i < operations.length; i++)
        if (!taken[i] && !busy.has(operations[i]!.tenant)) return i;
      return first < operations.length ? -1 : undefined;
    };
    const worker = async () => {
      for (;;) {
        if (failed) return;
        const index = nextOperation();
        if (index === undefined) return;
        if (index < 0) {
          await sleep(20);
          continue;
        }
        const op = operations[index]!;
        taken[index] = true;
        busy.add(op.tenant);
        try {
          await run(op);
          finished++;
        } finally {
          busy.delete(op.tenant);
        }
      }
    };
    try {
      await Promise.all([...Array.from({ length: CONCURRENCY }, worker), monkey]);
    } catch (err) {
      failed = true;
      throw err;
    }
    assert.equal(kills, KILLS);
  });

  it("converges: each tenant's namespaces, objects and quota, and nothing of deleted tenants", async (t) => {
    if (failed) return t.skip("the operations did not complete");
    const rbac = loadClusterClient("chaos-rbac", state.kubeconfig).kubeConfig.makeApiClient(
      RbacAuthorizationV1Api,
    );
    const networking = loadClusterClient("chaos-net", state.kubeconfig).kubeConfig.makeApiClient(
      NetworkingV1Api,
    );
    const survivors = [...expected].filter(([, e]) => !e.deleted).map(([t]) => t);
    await eventually(
      async () => {
        const tenants = (
          (await custom.listClusterCustomObject({ ...group, plural: "tenants" })) as { items: Tenant[] }
        ).items.filter((t) => t.metadata!.name!.startsWith(`${prefix}-`));
        assert.deepEqual(tenants.map((t) => t.metadata!.name).sort(), [...survivors].sort(), "tenants");
        for (const tenant of tenants) {
          const name = tenant.metadata!.name!;
          const ready = tenant.status?.conditions?.find((c) => c.type === "Ready");
          assert.equal(ready?.status, "True", `${name} Ready: ${JSON.stringify(ready)}`);
          assert.equal(
            ready?.observedGeneration,
            tenant.metadata?.generation,
            `${name} observed its generation`,
          );
        }

        // Namespaces: exactly the declared ones of the tenants that remain.
        const namespaces = (await core.listNamespace({ labelSelector: "tenantry.dev/tenant" })).items.filter(
          (n) => n.metadata!.labels!["tenantry.dev/tenant"]!.startsWith(`${prefix}-`),
        );
        const wanted = survivors.flatMap((t) => [...expected.get(t)!.namespaces]).sort();
        assert.deepEqual(
          namespaces.map((n) => n.metadata!.name).sort(),
          wanted,
          "tenant namespaces (orphans or missing)",
        );

        // tenantry's objects: one of each per namespace, the member's binding only where added.
        const bindings = (
          await rbac.listRoleBindingForAllNamespaces({
            labelSelector: "app.kubernetes.io/managed-by=tenantry",
          })
        ).items.filter((b) => b.metadata!.namespace!.startsWith(`${prefix}-`));
        const policies = (
          await networking.listNetworkPolicyForAllNamespaces({
            labelSelector: "app.kubernetes.io/managed-by=tenantry",
          })
        ).items.filter((p) => p.metadata!.namespace!.startsWith(`${prefix}-`));
        for (const namespace of wanted) {
          const tenant = namespace.slice(0, namespace.lastIndexOf("-"));
          const names = bindings
            .filter((b) => b.metadata!.namespace === namespace)
            .map((b) => b.metadata!.name!);
          const expectedBindings = expected.get(tenant)!.user ? 3 : 2;
          assert.equal(names.length, expectedBindings, `${namespace} role bindings: ${names.join(", ")}`);
          assert.ok(names.includes("tenantry-owners"), `${namespace} has tenantry-owners`);
          assert.equal(
            policies.filter((p) => p.metadata!.namespace === namespace).length,
            1,
            `${namespace} isolation policy`,
          );
        }
        const stray = bindings.filter((b) => !wanted.includes(b.metadata!.namespace!));
        assert.deepEqual(
          stray.map((b) => `${b.metadata!.namespace}/${b.metadata!.name}`),
          [],
          "bindings outside",
        );

        // Cluster-wide: one owners' binding and one quota per tenant that remains, none for the others.
        const clusterBindings = (
          await rbac.listClusterRoleBinding({ labelSelector: "app.kubernetes.io/managed-by=tenantry" })
        ).items
          .map((b) => b.metadata!.name!)
          .filter((n) => n.startsWith(`tenantry:owners:${prefix}-`))
          .sort();
        assert.deepEqual(
          clusterBindings,
          survivors.map((t) => `tenantry:owners:${t}`).sort(),
          "owners' ClusterRoleBindings",
        );
        const quotas = (
          (await custom.listClusterCustomObject({ ...group, plural: "tenantresourcequotas" })) as {
            items: TenantResourceQuota[];
          }
        ).items.filter((q) => q.spec.tenant.startsWith(`${prefix}-`));
        assert.deepEqual(
          quotas.map((q) => q.spec.tenant).sort(),
          [...survivors].sort(),
          "one quota per tenant",
        );

        // The ledger: used is what the pods use now, nothing stays reserved, and hard held.
        const allPods = (await core.listPodForAllNamespaces()).items.filter((p) =>
          p.metadata!.namespace!.startsWith(`${prefix}-`),
        );
        // By the namespace's tenant, as the ledger counts: pods this test creates with the
        // administrator's credentials carry no tenant label of their own.
        const tenantOfNamespace = new Map(
          namespaces.map((n) => [n.metadata!.name!, n.metadata!.labels!["tenantry.dev/tenant"]]),
        );
        const tenantOf = (p: V1Pod) => tenantOfNamespace.get(p.metadata!.namespace!);
        const pods = allPods.filter((p) => !p.metadata!.deletionTimestamp);
        for (const quota of quotas) {
          const mine = pods.filter((p) => tenantOf(p) === quota.spec.tenant);
          const cpu = mine.length * 500;
          const all = allPods
            .filter((p) => tenantOf(p) === quota.spec.tenant)
            .map(
              (p) =>
                `${p.metadata!.namespace}/${p.metadata!.name} ${p.status?.phase} deleting=${!!p.metadata!.deletionTimestamp}`,
            );
          assert.deepEqual(
            { pods: quota.status?.used?.pods, cpu: quota.status?.used?.["requests.cpu"] },
            { pods: String(mine.length), cpu: cpu % 1000 === 0 ? String(cpu / 1000) : `${cpu}m` },
            `quota ${quota.metadata!.name} against a recount of [${all.join(", ")}]: ${JSON.stringify(quota.status)}`,
          );
          assert.deepEqual(
            quota.status?.reservations ?? [],
            [],
            `quota ${quota.metadata!.name} keeps no reservation`,
          );
          assert.ok(mine.length <= Number(quota.spec.hard!.pods), `quota ${quota.metadata!.name} held`);
        }
      },
      { timeoutMs: 150_000, intervalMs: 2_000 },
    );
    converged = true;
    process.stdout.write(
      `chaos seed ${SEED}: ${kills} kills (${startupKills} while starting), ${survivors.length} tenants remain, ${quotaRefusals.length} pods refused for quota\n`,
    );
  });
});
