/**
 * `npm run bench:process-node`: what a pod on the process node of a local cluster costs — pod
 * created → Ready for the echo image (one at a time, then --concurrent at once) and for the
 * Jupyter image (warm), side by side with the same pods on a KWOK node (whose Ready is simulated);
 * memory of one echo pod's process (RSS, and PSS, its share of pages the processes share); and a
 * cold install of the Jupyter Server (its image pull) into an empty cache folder.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { Command } from "commander";
import { Informer, loadClusterClient } from "../src/kube/index.js";
import {
  ClusterHarness,
  ensureJupyterServer,
  LOCAL_IMAGES,
  PROCESS_NODE_PLACEMENT,
} from "../src/localcluster/index.js";
import { identify, processTree } from "../src/localcluster/process-node/host-processes.js";
import { boundedAll, ms, percentile, printTable } from "./support/report.js";

const program = new Command()
  .option("--runs <n>", "echo pods started one after another", "20")
  .option("--jupyter-runs <n>", "Jupyter pods started one after another", "5")
  .option("--concurrent <n>", "echo pods started at once", "100")
  .option("--no-cold-install", "skip the cold install of the Jupyter Server")
  .parse();
const flags = program.opts<{ runs: string; jupyterRuns: string; concurrent: string; coldInstall: boolean }>();

/** Memory of a container: its launcher's whole process tree (the launcher, its init, the program). */
function containerKiB(pid: number): { rss: number; pss: number } {
  const tree = processTree({ pid, startTicks: identify(pid)?.startTicks ?? -1 }).map(pssKiB);
  return {
    rss: tree.reduce((sum, m) => sum + m.rss, 0),
    pss: tree.reduce((sum, m) => sum + m.pss, 0),
  };
}

function pssKiB(pid: number): { rss: number; pss: number } {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const field = (name: string) =>
      Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? Number.NaN);
    return { rss: field("Rss"), pss: field("Pss") };
  } catch {
    return { rss: Number.NaN, pss: Number.NaN };
  }
}

const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-process-node-"));
const harness = new ClusterHarness({ dir, log: () => {} });
try {
  const [state] = await harness.up([{ name: "bench", nodes: 1 }]);
  const client = loadClusterClient("bench", state!.kubeconfig);
  const namespace = "bench";
  await client.core.createNamespace({ body: { metadata: { name: namespace } } });
  await ensureJupyterServer();

  const pods = Informer.forResource<V1Pod>(client, { apiVersion: "v1", kind: "Pod", namespace });
  const readyAt = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const seen = (pod: V1Pod) => {
    const name = pod.metadata!.name!;
    if (readyAt.has(name)) return;
    if (!pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) return;
    readyAt.set(name, performance.now());
    waiters.get(name)?.();
  };
  pods.addHandler({ onAdd: seen, onUpdate: (_old, pod) => seen(pod) });
  pods.start();
  await pods.waitForSync();

  const startToReady = async (name: string, image: string, processNode: boolean) => {
    const container = {
      name: "main",
      image,
      ...(image === LOCAL_IMAGES.jupyter
        ? {
            args: ["start-notebook.py", "--ServerApp.token=bench"],
            readinessProbe: { httpGet: { path: "/api", port: 8888 as never }, periodSeconds: 1 },
          }
        : { readinessProbe: { tcpSocket: { port: 8080 as never }, periodSeconds: 1 } }),
    };
    const ready = new Promise<void>((resolve) => waiters.set(name, resolve));
    const started = performance.now();
    await client.core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name },
        spec: { ...(processNode ? PROCESS_NODE_PLACEMENT : {}), containers: [container] },
      },
    });
    await ready;
    return readyAt.get(name)! - started;
  };
  const deleteAll = async () => {
    await client.core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 1 });
    while ((await client.core.listNamespacedPod({ namespace })).items.length > 0)
      await new Promise((resolve) => setTimeout(resolve, 500));
  };

  const rows: (string | number)[][] = [];
  const row = (what: string, node: string, samples: number[], kwok?: number[]) => {
    const p50 = percentile(samples, 50);
    const ratio = kwok ? `${(p50 / percentile(kwok, 50)).toFixed(1)}×` : "";
    rows.push([
      what,
      node,
      samples.length,
      ms(p50),
      ms(percentile(samples, 95)),
      ms(Math.max(...samples)),
      ratio,
    ]);
  };

  const sequential = async (prefix: string, image: string, runs: number, processNode: boolean) => {
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) samples.push(await startToReady(`${prefix}-${i}`, image, processNode));
    await deleteAll();
    return samples;
  };
  const runs = Number(flags.runs);
  const kwokEcho = await sequential("kwok-echo", LOCAL_IMAGES.echo, runs, false);
  const echo = await sequential("echo", LOCAL_IMAGES.echo, runs, true);
  row("echo, one at a time", "KWOK", kwokEcho);
  row("echo, one at a time", "process", echo, kwokEcho);
  const jupyter = await sequential("jupyter", LOCAL_IMAGES.jupyter, Number(flags.jupyterRuns), true);
  row("Jupyter (installed), one at a time", "process", jupyter, kwokEcho);

  const concurrent = Number(flags.concurrent);
  const names = Array.from({ length: concurrent }, (_, i) => `burst-${i}`);
  const kwokBurst = await boundedAll(names, 50, (name) =>
    startToReady(`kwok-${name}`, LOCAL_IMAGES.echo, false),
  );
  await deleteAll();
  const burst = await boundedAll(names, 50, (name) => startToReady(name, LOCAL_IMAGES.echo, true));
  row(`echo, ${concurrent} at once`, "KWOK", kwokBurst);
  row(`echo, ${concurrent} at once`, "process", burst, kwokBurst);

  // Memory of the echo pods' processes while all of them run.
  const memory = pods
    .list()
    .flatMap((pod) => pod.status?.containerStatuses ?? [])
    .map((status) => Number(/^process:\/\/(\d+)$/.exec(status.containerID ?? "")?.[1]))
    .filter((pid) => pid > 0)
    .map(containerKiB);
  await deleteAll();
  await pods.stop();

  printTable(
    "pod created → Ready (Ready as the pod's condition shows it; the process node runs the readiness probe for real, KWOK simulates it)",
    ["pods", "node", "runs", "p50 ms", "p95 ms", "max ms", "p50 vs KWOK"],
    rows,
    [
      `${runs} sequential echo runs, ${flags.jupyterRuns} Jupyter runs, one burst of ${concurrent}; nearest-rank percentiles.`,
    ],
  );
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length / 1024;
  printTable(
    "memory of one echo pod's processes (all of the burst running; the container's launcher, init and program)",
    ["processes", "RSS MiB (mean)", "PSS MiB (mean)", "PSS MiB (total)"],
    [
      [
        memory.length,
        mean(memory.map((m) => m.rss)),
        mean(memory.map((m) => m.pss)),
        mean(memory.map((m) => m.pss)) * memory.length,
      ],
    ],
    ["PSS counts pages shared by the processes (node's code) once, split among them."],
  );
} finally {
  await harness.reset();
  await rm(dir, { recursive: true, force: true });
}

if (flags.coldInstall) {
  const cache = await mkdtemp(join(tmpdir(), "tenantry-bench-venv-"));
  try {
    const install = await ensureJupyterServer({ cacheDir: cache });
    printTable(
      "Jupyter Server install into an empty cache folder (the Jupyter image's cold pull)",
      ["jupyter-server", "python", "seconds"],
      [[install.version, install.pythonVersion, install.installSeconds]],
      [
        "One run; pip's own download cache (~/.cache/pip) is used if present, as it would be on a user's machine.",
      ],
    );
  } finally {
    await rm(cache, { recursive: true, force: true });
  }
}
