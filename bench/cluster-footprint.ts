/**
 * Resident memory and start-up time of local clusters, per component, for one cluster and for
 * three started together. Run: npm run bench:cluster-footprint
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  ClusterHarness,
  type ClusterState,
  COMPONENT_ORDER,
  defaultClusters,
} from "../src/localcluster/index.js";
import { rssMiBOfPid, table } from "./support/report.js";

const COMPONENTS = [...COMPONENT_ORDER];

async function measure(
  count: number,
): Promise<{ states: ClusterState[]; wallSeconds: number; rss: Map<string, number[]> }> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-"));
  const harness = new ClusterHarness({ dir, log: () => {} });
  await harness.components();
  const started = Date.now();
  try {
    const states = await harness.up(defaultClusters.slice(0, count).map((c) => ({ ...c })));
    const wallSeconds = (Date.now() - started) / 1000;
    // Let informers settle and caches fill before reading memory.
    await sleep(10_000);
    const rss = new Map<string, number[]>();
    for (const state of states) {
      for (const proc of state.processes)
        rss.set(proc.component, [...(rss.get(proc.component) ?? []), rssMiBOfPid(proc.pid)]);
    }
    return { states, wallSeconds, rss };
  } finally {
    await harness.reset();
    await rm(dir, { recursive: true, force: true });
  }
}

const readyStep: Record<string, string> = {
  etcd: "etcd",
  "kube-apiserver": "kube-apiserver",
  kwok: "nodes",
  "process-node": "process-node",
  "kube-controller-manager": "controllers",
};

const rows: (string | number)[][] = [];
for (const count of [1, 3]) {
  const { states, wallSeconds, rss } = await measure(count);
  let total = 0;
  for (const component of COMPONENTS) {
    const values = rss.get(component) ?? [];
    const sum = values.reduce((a, b) => a + b, 0);
    total += sum;
    const step = readyStep[component];
    const ready = step ? Math.max(...states.map((s) => s.timings?.[step] ?? Number.NaN)) : Number.NaN;
    rows.push([`${count}`, component, sum / values.length, sum, Number.isNaN(ready) ? "-" : ready]);
  }
  rows.push([`${count}`, "all (cluster ready)", total / count, total, wallSeconds]);
}
process.stdout.write(
  `${table(["clusters", "component", "RSS MiB / cluster", "RSS MiB total", "ready after s"], rows)}\n` +
    "ready after: seconds from start until that component's readiness check passed (slowest cluster);\n" +
    "kwok = simulated nodes Ready, kube-controller-manager = default service account created, all = `up` wall time.\n",
);
