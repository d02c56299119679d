/**
 * `npm run bench:nodes`: how long a user waits for a worker node of their own, request → Running,
 * phase by phase, with the simulated provider: a local cluster with tenantry on it, WorkerNodes
 * created through the API and watched, each phase timed by the controller's record of it. One node at
 * a time (--runs of them), then --concurrent nodes at once (--concurrent-runs times). Goal (issue):
 * one node under 10 s, 20 at once under 30 s.
 *
 * The simulated machines model a cloud's timing (MachineHost delays: boot 1 s, kubelet start 0.5 s,
 * kubelet up 0.5 s; --delays 0 removes them), on top of a real process start and a real join.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi, KubeConfig, Watch } from "@kubernetes/client-node";
import { Command } from "commander";
import { pino } from "pino";
import { startEmbeddedTenantry } from "../src/app/embedded.js";
import { applyObject } from "../src/kube/index.js";
import { ClusterHarness, DEFAULT_MACHINE_DELAYS, MachineHost } from "../src/localcluster/index.js";
import type { WorkerNode, WorkerNodePhase } from "../src/nodes/index.js";
import { TENANTRY_GROUP, TENANTS_API_VERSION, TENANTS_VERSION } from "../src/tenants/index.js";
import { percentile, printTable, seconds } from "./support/report.js";

const program = new Command()
  .option("--runs <n>", "single nodes, one after another", "5")
  .option("--concurrent <n>", "nodes asked for at once", "20")
  .option("--concurrent-runs <n>", "rounds of concurrent nodes", "3")
  .option("--flavor <name>", "flavor of every node", "m1.small")
  .option("--delays <ms>", "one boot/kubelet delay for every simulated machine (default: the host's)")
  .option("--timeout <seconds>", "a node not Running by then counts as failed", "120")
  .parse();
const flags = program.opts<{
  runs: string;
  concurrent: string;
  concurrentRuns: string;
  flavor: string;
  delays?: string;
  timeout: string;
}>();
const timeoutMs = Number(flags.timeout) * 1000;
const TENANT = "bench";
const coordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "workernodes" };
const PHASES: readonly WorkerNodePhase[] = ["Building", "Available", "Joining", "Running"];

/** Each node as the watch last showed it. */
const latest = new Map<string, WorkerNode>();
const gone = new Set<string>();

interface Sample {
  /** request sent → the controller recorded each phase; and → the request was answered. */
  at: Partial<Record<WorkerNodePhase | "accepted", number>>;
  /** request sent → the client's watch shows Running. */
  seenRunning?: number;
  ok: boolean;
  last: string;
}

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Asks for one node and waits for it. The phases' times are the controller's (status.phases, to the
 * millisecond, same clock): every phase the node went through counts, also one shorter than a watch
 * event; "request → Running" is also timed as the client sees it.
 */
async function askFor(custom: CustomObjectsApi, name: string): Promise<Sample> {
  latest.delete(name);
  const requestedAt = Date.now();
  const started = performance.now();
  const sample: Sample = { at: {}, ok: false, last: "" };
  try {
    await custom.createClusterCustomObject({
      ...coordinates,
      body: {
        apiVersion: TENANTS_API_VERSION,
        kind: "WorkerNode",
        metadata: { name },
        spec: { flavor: flags.flavor, provider: "simulated", policy: "private" },
      },
    });
  } catch (err) {
    sample.last = `create: ${(err as Error).message}`;
    return sample;
  }
  sample.at.accepted = performance.now() - started;
  while (performance.now() - started < timeoutMs) {
    const phase = latest.get(name)?.status?.phase;
    if (phase === "Failed") {
      sample.last = `Failed: ${latest.get(name)?.status?.message}`;
      break;
    }
    if (phase === "Running") {
      sample.ok = true;
      sample.seenRunning = performance.now() - started;
      break;
    }
    await sleep(20);
  }
  for (const { phase, time } of latest.get(name)?.status?.phases ?? []) {
    if (PHASES.includes(phase)) sample.at[phase] = Date.parse(time) - requestedAt;
  }
  if (!sample.ok && !sample.last) sample.last = `still ${latest.get(name)?.status?.phase ?? "unseen"}`;
  return sample;
}

/**
 * Deletes the nodes (cordon, drain, machine deleted) and waits until every one is gone, so that the
 * next round starts within the tenant's node quota; says how long that took.
 */
async function removeAll(custom: CustomObjectsApi, names: string[]): Promise<void> {
  const started = performance.now();
  await Promise.all(
    names.map((name) => custom.deleteClusterCustomObject({ ...coordinates, name }).catch(() => {})),
  );
  const deadline = Date.now() + 300_000;
  while (names.some((n) => !gone.has(n)) && Date.now() < deadline) await sleep(100);
  const left = names.filter((n) => !gone.has(n));
  if (left.length)
    throw new Error(`${left.length} nodes still not gone 300 s after their deletion: ${left.join(", ")}`);
  process.stderr.write(`${names.length} deleted and gone in ${seconds(performance.now() - started)} s\n`);
}

/** Durations of each step for the samples that reached it: request → Building, Building → Available, … */
function steps(samples: Sample[]): { label: string; values: number[] }[] {
  const between = (from: keyof Sample["at"] | "request", to: keyof Sample["at"]) =>
    samples
      .filter((s) => s.at[to] !== undefined && (from === "request" || s.at[from] !== undefined))
      .map((s) => s.at[to]! - (from === "request" ? 0 : s.at[from]!));
  return [
    { label: "request → accepted (admission, token)", values: between("request", "accepted") },
    { label: "request → Building (machine asked for)", values: between("request", "Building") },
    { label: "Building → Available (machine boots)", values: between("Building", "Available") },
    { label: "Available → Joining (kubelet asks to join)", values: between("Available", "Joining") },
    { label: "Joining → Running (CSR signed, Node Ready)", values: between("Joining", "Running") },
    { label: "request → Running", values: between("request", "Running") },
    {
      label: "request → Running seen by the client",
      values: samples.flatMap((s) => (s.seenRunning !== undefined ? [s.seenRunning] : [])),
    },
  ];
}

function rows(samples: Sample[]): (string | number)[][] {
  return steps(samples).map(({ label, values }) => [
    label,
    String(values.length),
    seconds(percentile(values, 50)),
    seconds(percentile(values, 90)),
    seconds(percentile(values, 100)),
  ]);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-nodes-"));
  const harness = new ClusterHarness({ dir });
  const delay = flags.delays === undefined ? undefined : Number(flags.delays);
  const delays =
    delay === undefined ? DEFAULT_MACHINE_DELAYS : { bootMs: delay, kubeletStartMs: delay, readyMs: delay };
  let machines: MachineHost | undefined;
  let tenantry: Awaited<ReturnType<typeof startEmbeddedTenantry>> | undefined;
  let stopWatch: (() => void) | undefined;
  try {
    const [state] = await harness.up([{ name: "bench-nodes", nodes: 1 }]);
    machines = new MachineHost({ dir: join(dir, "machines"), delays });
    tenantry = await startEmbeddedTenantry(
      state!,
      pino({ level: "warn" }, pino.destination({ dest: join(dir, "tenantry.log"), sync: false })),
      { nodes: { localMachines: machines, timings: { pollMs: 1000 } } },
    );
    const concurrent = Number(flags.concurrent);
    // The cluster administrators own the tenant (through their group): the bench asks as the admin.
    await applyObject(tenantry.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name: TENANT },
      spec: {
        owners: [{ kind: "Group", name: "system:masters" }],
        workerNodes: { maxNodes: Math.max(concurrent, 1) + 5 },
      },
    } as never);
    const kc = new KubeConfig();
    kc.loadFromFile(state!.kubeconfig);
    const custom = kc.makeApiClient(CustomObjectsApi);
    // Wait for the simulated provider's flavors (admission checks requests against them).
    for (let i = 0; ; i++) {
      const list = (await custom.listClusterCustomObject({ ...coordinates, plural: "nodeproviders" })) as {
        items: { status?: { flavors?: unknown[] } }[];
      };
      if (list.items[0]?.status?.flavors?.length) break;
      if (i > 300) throw new Error("the simulated NodeProvider listed no flavors");
      await sleep(100);
    }
    const request = await new Watch(kc).watch(
      `/apis/${TENANTRY_GROUP}/${TENANTS_VERSION}/workernodes`,
      {},
      (type: string, node: WorkerNode) => {
        const name = node.metadata?.name ?? "";
        if (type === "DELETED") {
          gone.add(name);
          return;
        }
        latest.set(name, node);
      },
      () => {},
    );
    stopWatch = () => request.abort();

    const single: Sample[] = [];
    for (let run = 0; run < Number(flags.runs); run++) {
      const name = `single-${run}`;
      single.push(await askFor(custom, name));
      await removeAll(custom, [name]);
      process.stderr.write(
        `single ${run + 1}/${flags.runs}: ${seconds(single.at(-1)!.at.Running ?? Number.NaN)} s\n`,
      );
    }
    const many: Sample[] = [];
    const makespans: number[] = [];
    for (let run = 0; run < Number(flags.concurrentRuns); run++) {
      const names = Array.from({ length: concurrent }, (_, i) => `many-${run}-${i}`);
      const samples = await Promise.all(names.map((name) => askFor(custom, name)));
      many.push(...samples);
      if (samples.every((s) => s.ok)) makespans.push(Math.max(...samples.map((s) => s.seenRunning!)));
      process.stderr.write(
        `${concurrent} at once, round ${run + 1}/${flags.concurrentRuns}: last Running after ${seconds(Math.max(...samples.map((s) => s.seenRunning ?? Number.NaN)))} s, ${samples.filter((s) => !s.ok).length} failed\n`,
      );
      await removeAll(custom, names);
    }

    const headers = ["step", "n", "p50 s", "p90 s", "max s"];
    const modelled = `simulated machine delays: boot ${delays.bootMs} ms, kubelet start ${delays.kubeletStartMs} ms, kubelet up ${delays.readyMs} ms (their process start and the join are real)`;
    printTable(
      `One worker node at a time (${flags.runs} runs, flavor ${flags.flavor})`,
      headers,
      rows(single),
      [
        `goal: request → Running under 10 s; p50 ${seconds(
          percentile(
            single.flatMap((s) => (s.ok ? [s.seenRunning!] : [])),
            50,
          ),
        )} s`,
        `failed: ${single.filter((s) => !s.ok).length}${single.some((s) => !s.ok) ? ` (${single.find((s) => !s.ok)!.last})` : ""}`,
        modelled,
      ],
    );
    printTable(
      `${concurrent} worker nodes at once (${flags.concurrentRuns} rounds, ${many.length} nodes; percentiles over nodes)`,
      headers,
      [
        ...rows(many),
        [
          "all Running (per round)",
          String(makespans.length),
          seconds(percentile(makespans, 50)),
          seconds(percentile(makespans, 90)),
          seconds(percentile(makespans, 100)),
        ],
      ],
      [
        `goal: all ${concurrent} Running under 30 s; worst round ${seconds(percentile(makespans, 100))} s`,
        `failed: ${many.filter((s) => !s.ok).length}${many.some((s) => !s.ok) ? ` (${many.find((s) => !s.ok)!.last})` : ""}`,
        modelled,
      ],
    );
  } finally {
    stopWatch?.();
    await tenantry?.stop().catch(() => {});
    machines?.close();
    await machines?.stopAll().catch(() => {});
    await harness.reset().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
