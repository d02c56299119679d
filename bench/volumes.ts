/**
 * `npm run bench:volumes`: claim created → Bound, tenantry's pooled storage side by side with
 * rancher's local-path-provisioner on the same cluster in the same run — a claim served from a
 * warm pool, one allocated on demand (an empty pool), and one made by local-path-provisioner (a
 * folder made by its helper pod on the process node); one claim at a time (--runs, the three kinds
 * interleaved so that the machine's load weighs on each alike), then a burst of --claims of each.
 * Starts a local cluster in a temporary folder (or uses --kubeconfig), runs tenantry's storage
 * system (advisor, supplier, provisioner, node agent) in this process, and removes what it made.
 *
 * Run: npm run bench:volumes [-- --claims 1000] [--runs 20] [--controller-manager-qps N] [--kubeconfig FILE --node NODE] [--keep]
 */
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { V1PersistentVolume, V1PersistentVolumeClaim } from "@kubernetes/client-node";
import { Command } from "commander";
import { pino } from "pino";
import { Registry } from "prom-client";
import { type ClusterClient, Informer, isNotFound, loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, PROCESS_NODE_NAME } from "../src/localcluster/index.js";
import {
  type PooledVolume,
  SELECTED_NODE_ANNOTATION,
  STORAGE_API_VERSION,
  STORAGE_CRDS,
  StorageSystem,
  type VolumePool,
  type VolumePoolSpec,
} from "../src/storage/index.js";
import { installCrds } from "../src/tenants/index.js";
import { PeerUnavailable } from "./support/go-peer.js";
import {
  boundedAll,
  type Cell,
  ensureNamespace,
  loadAverage,
  ms,
  percentile,
  printTable,
  progress,
  seconds,
} from "./support/report.js";
import {
  ensureLocalPath,
  LOCAL_PATH_CLASS,
  LOCAL_PATH_MODULE,
  pinnedLocalPathVersion,
  type RunningLocalPath,
  startLocalPath,
} from "./volumes/local-path.js";

const program = new Command()
  .option("--claims <n>", "claims in each burst", "1000")
  .option("--runs <n>", "one-claim runs of each kind", "20")
  .option("--concurrency <n>", "claim creates in flight during a burst", "64")
  .option("--size <quantity>", "size of each claim and of the pool's volumes", "16Mi")
  .option("--kubeconfig <file>", "use this cluster instead of starting a local one")
  .option("--node <name>", "the node the claims' volumes go to (local-path's helper pods run there)")
  .option("--local-path-workers <n>", "local-path-provisioner's --worker-threads (default: its own, 4)")
  .option(
    "--controller-manager-qps <n>",
    "kube-controller-manager's --kube-api-qps (burst twice that) on the cluster it starts (default: its own, 20)",
  )
  .option("--skip-local-path", "measure tenantry only")
  .option("--keep", "leave the cluster, claims and volumes in place")
  .parse();
const flags = program.opts<{
  claims: string;
  runs: string;
  concurrency: string;
  size: string;
  kubeconfig?: string;
  node?: string;
  localPathWorkers?: string;
  controllerManagerQps?: string;
  skipLocalPath?: boolean;
  keep?: boolean;
}>();
const CLAIMS = Number(flags.claims);
const RUNS = Number(flags.runs);
const CONCURRENCY = Number(flags.concurrency);
const LOCAL_PATH_WORKERS = flags.localPathWorkers === undefined ? undefined : Number(flags.localPathWorkers);
const KCM_QPS = flags.controllerManagerQps === undefined ? undefined : Number(flags.controllerManagerQps);
for (const [name, value] of [
  ["--claims", CLAIMS],
  ["--runs", RUNS],
  ["--concurrency", CONCURRENCY],
  ["--local-path-workers", LOCAL_PATH_WORKERS ?? 1],
  ["--controller-manager-qps", KCM_QPS ?? 1],
] as const) {
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`${name} must be a whole number of at least 1, got ${value}\n`);
    process.exit(2);
  }
}
if (!/^\d+(Mi|Gi)$/.test(flags.size)) {
  process.stderr.write(`--size must be a whole number of Mi or Gi (at least 16Mi), got ${flags.size}\n`);
  process.exit(2);
}

/** This run's claims carry this label; the pools and the provisioner name are the benchmark's own. */
const BENCH_LABEL = "tenantry.dev/bench";
const BENCH_PROVISIONER = "bench.tenantry.dev/pooled";
const TENANTRY_NAMESPACE = "tenantry-bench-volumes";
const WARM_CLASS = "bench-warm";
const ON_DEMAND_CLASS = "bench-on-demand";
/** The largest warm.min a VolumePool takes. */
const MAX_WARM = 1000;

interface Kind {
  label: string;
  provisioner: string;
  storageClass: string;
}
const KINDS = {
  warm: { label: "warm pool hit", provisioner: "tenantry", storageClass: WARM_CLASS },
  onDemand: { label: "empty pool (on demand)", provisioner: "tenantry", storageClass: ON_DEMAND_CLASS },
  localPath: { label: "on demand", provisioner: "local-path", storageClass: LOCAL_PATH_CLASS },
} satisfies Record<string, Kind>;
type KindName = keyof typeof KINDS;
/** `onDemand` → `on-demand`, for names of objects. */
const slug = (kind: KindName) => kind.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const burstNamespace = (kind: KindName) => `bench-volumes-burst-${slug(kind)}`;

/**
 * Watches the benchmark's claims and PersistentVolumes: when each claim was first seen Bound, and
 * when its PersistentVolume was first seen (the provisioner's part; the rest is the PV controller's).
 */
class BindWatch {
  private readonly informer: Informer<V1PersistentVolumeClaim>;
  private readonly volumes: Informer<V1PersistentVolume>;
  private readonly boundAt = new Map<string, number>();
  /** By claim uid. */
  private readonly volumeAt = new Map<string, number>();
  private readonly waiters = new Map<string, () => void>();

  constructor(client: ClusterClient) {
    this.volumes = Informer.forResource<V1PersistentVolume>(client, {
      apiVersion: "v1",
      kind: "PersistentVolume",
    });
    this.volumes.addHandler({
      onAdd: (pv) => {
        const uid = pv.spec?.claimRef?.uid;
        if (uid && !this.volumeAt.has(uid)) this.volumeAt.set(uid, performance.now());
      },
    });
    this.informer = Informer.forResource<V1PersistentVolumeClaim>(client, {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      labelSelector: `${BENCH_LABEL}=volumes`,
    });
    const seen = (claim: V1PersistentVolumeClaim) => {
      if (claim.status?.phase !== "Bound") return;
      const key = `${claim.metadata!.namespace}/${claim.metadata!.name}`;
      if (this.boundAt.has(key)) return;
      this.boundAt.set(key, performance.now());
      this.waiters.get(key)?.();
      this.waiters.delete(key);
    };
    this.informer.addHandler({ onAdd: seen, onUpdate: (_old, claim) => seen(claim) });
  }

  async start(): Promise<void> {
    this.informer.start();
    this.volumes.start();
    await Promise.all([this.informer.waitForSync(), this.volumes.waitForSync()]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.informer.stop(), this.volumes.stop()]);
  }

  /** When the claim's PersistentVolume was first seen. */
  volumeSeen(claimUid: string): number | undefined {
    return this.volumeAt.get(claimUid);
  }

  /** Resolves with when the claim was seen Bound, or undefined after `timeoutMs`. */
  bound(namespace: string, name: string, timeoutMs: number): Promise<number | undefined> {
    const key = `${namespace}/${name}`;
    const at = this.boundAt.get(key);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(key);
        resolve(undefined);
      }, timeoutMs);
      this.waiters.set(key, () => {
        clearTimeout(timer);
        resolve(this.boundAt.get(key));
      });
    });
  }
}

interface Sample {
  latencies: number[];
  /** Created → its PersistentVolume seen. */
  toVolume: number[];
  unbound: number;
  totalMs: number;
}

async function createClaim(
  client: ClusterClient,
  namespace: string,
  name: string,
  kind: Kind,
  node: string,
): Promise<string> {
  const created = await client.core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: {
      metadata: {
        name,
        labels: { [BENCH_LABEL]: "volumes" },
        // What the scheduler writes for a WaitForFirstConsumer claim once its pod has a node.
        annotations: { [SELECTED_NODE_ANNOTATION]: node },
      },
      spec: {
        accessModes: ["ReadWriteOnce"],
        storageClassName: kind.storageClass,
        resources: { requests: { storage: flags.size } },
      },
    },
  });
  return created.metadata!.uid!;
}

/** Creates `names` (at most CONCURRENCY in flight) and waits for each to be Bound. */
async function claims(
  client: ClusterClient,
  watch: BindWatch,
  namespace: string,
  names: string[],
  kind: Kind,
  node: string,
  timeoutMs: number,
): Promise<Sample> {
  const first = performance.now();
  const results = await boundedAll(names, CONCURRENCY, async (name) => {
    const started = performance.now();
    const uid = await createClaim(client, namespace, name, kind, node);
    return { started, uid, bound: watch.bound(namespace, name, timeoutMs) };
  });
  const latencies: number[] = [];
  const toVolume: number[] = [];
  let last = first;
  let unbound = 0;
  for (const { started, uid, bound } of results) {
    const at = await bound;
    if (at === undefined) unbound++;
    else {
      latencies.push(at - started);
      last = Math.max(last, at);
    }
    const volumeAt = watch.volumeSeen(uid);
    if (volumeAt !== undefined) toVolume.push(volumeAt - started);
  }
  return { latencies, toVolume, unbound, totalMs: last - first };
}

function poolSpec(
  storageClass: string,
  path: string,
  node: string,
  warm: VolumePoolSpec["warm"],
): VolumePoolSpec {
  const sizeMi = Number(flags.size.replace(/\D/g, "")) * (flags.size.endsWith("Gi") ? 1024 : 1);
  // Room for every claim of the run twice over (released volumes are scrubbed before they count as free).
  const capacityMi = sizeMi * (2 * (CLAIMS + RUNS) + 100);
  return {
    provisioner: BENCH_PROVISIONER,
    storageClass: { name: storageClass, volumeBindingMode: "WaitForFirstConsumer" },
    sizes: [flags.size],
    backingStores: [{ name: "bench", path, node, capacity: `${capacityMi}Mi` }],
    encryption: "IfAvailable",
    warm,
  };
}

async function readPool(client: ClusterClient, name: string): Promise<VolumePool> {
  return client.objects.read<VolumePool>({
    apiVersion: STORAGE_API_VERSION,
    kind: "VolumePool",
    metadata: { name },
  });
}

/** Waits until the pool has `ready` volumes ready for claims. */
async function waitReady(
  client: ClusterClient,
  pool: string,
  ready: number,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  for (;;) {
    const status = (await readPool(client, pool)).status;
    const now = status?.sizes?.[0]?.ready ?? 0;
    if (now >= ready) return;
    if (now !== last && (now % 50 === 0 || ready < 50))
      progress(`pool ${pool}: ${now} of ${ready} volumes ready`);
    last = now;
    if (Date.now() > deadline)
      throw new Error(
        `pool ${pool} had ${now} of ${ready} volumes ready after ${timeoutMs / 1000} s: ${JSON.stringify(status?.conditions)}`,
      );
    await sleep(250);
  }
}

async function setWarm(client: ClusterClient, pool: string, warm: NonNullable<VolumePoolSpec["warm"]>) {
  await client.objects.jsonPatch(
    { apiVersion: STORAGE_API_VERSION, kind: "VolumePool", metadata: { name: pool } },
    [{ op: "add", path: "/spec/warm", value: warm }],
  );
}

/** Claims of the run whose volume's folder exists on this machine (what pods would mount). */
async function foldersMade(client: ClusterClient, namespace: string): Promise<{ made: number; of: number }> {
  const claimList = await client.core.listNamespacedPersistentVolumeClaim({ namespace });
  let made = 0;
  let of = 0;
  for (const claim of claimList.items) {
    if (!claim.spec?.volumeName) continue;
    of++;
    const pv = await client.core.readPersistentVolume({ name: claim.spec.volumeName });
    const path = pv.spec?.local?.path ?? pv.spec?.hostPath?.path;
    if (path && existsSync(path)) made++;
  }
  return { made, of };
}

async function deleteClaimsOf(client: ClusterClient, namespaces: string[]) {
  for (const namespace of namespaces)
    await client.core.deleteCollectionNamespacedPersistentVolumeClaim({ namespace }).catch(() => {});
}

/** Waits until no PersistentVolume of the benchmark's classes is left (their provisioners released them). */
async function waitVolumesGone(client: ClusterClient, classes: string[], timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = (await client.core.listPersistentVolume()).items.filter((pv) =>
      classes.includes(pv.spec?.storageClassName ?? ""),
    ).length;
    if (left === 0 || Date.now() > deadline) return left;
    await sleep(1000);
  }
}

/** Deletes the benchmark's pools and waits for their volumes' files to be removed by the node agent. */
async function deletePools(client: ClusterClient, pools: string[], timeoutMs: number): Promise<number> {
  for (const name of pools) {
    await client.objects
      .delete({ apiVersion: STORAGE_API_VERSION, kind: "VolumePool", metadata: { name } })
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = (await client.objects.list<PooledVolume>(STORAGE_API_VERSION, "PooledVolume")).items.filter(
      (v) => v.spec.provisioner === BENCH_PROVISIONER,
    ).length;
    if (left === 0 || Date.now() > deadline) return left;
    await sleep(1000);
  }
}

/** Mounts left under `dir` (a volume the node agent did not get to destroy): unmounted, so the folder can go. */
async function unmountLeftovers(dir: string): Promise<number> {
  const { execFileSync } = await import("node:child_process");
  const mounts = (await readFile("/proc/mounts", "utf8"))
    .split("\n")
    .map((line) => line.split(" ")[1] ?? "")
    .filter((path) => path.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const path of mounts) {
    try {
      execFileSync("umount", [path], { stdio: "ignore" });
    } catch {
      execFileSync("umount", ["-l", path], { stdio: "ignore" });
    }
  }
  return mounts.length;
}

function row(what: string, kind: Kind, sample: Sample, peer?: Sample): Cell[] {
  const p50 = percentile(sample.latencies, 50);
  const p99 = percentile(sample.latencies, 99);
  const ratio = (mine: number, theirs: number) =>
    peer && Number.isFinite(mine) && Number.isFinite(theirs) && mine > 0
      ? `${(theirs / mine).toFixed(1)}×`
      : "";
  return [
    what,
    kind.provisioner,
    kind.label,
    String(sample.latencies.length + sample.unbound),
    String(sample.unbound),
    ms(percentile(sample.toVolume, 50)),
    ms(percentile(sample.toVolume, 99)),
    ms(p50),
    ms(p99),
    ms(Math.max(...sample.latencies)),
    seconds(sample.totalMs),
    ratio(p50, percentile(peer?.latencies ?? [], 50)),
    ratio(p99, percentile(peer?.latencies ?? [], 99)),
  ];
}

const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-volumes-"));
const harness = flags.kubeconfig
  ? undefined
  : new ClusterHarness({ dir: join(dir, "clusters"), log: () => {} });
const loadBefore = loadAverage();
let storage: StorageSystem | undefined;
let localPath: RunningLocalPath | undefined;
let watch: BindWatch | undefined;
let client: ClusterClient | undefined;
const pools = ["bench-warm", "bench-on-demand"];
const namespaces = ["bench-volumes-single", burstNamespace("warm"), burstNamespace("onDemand")];
try {
  let kubeconfig = flags.kubeconfig;
  if (harness) {
    progress("starting a local cluster");
    const [state] = await harness.up([
      {
        name: "bench",
        nodes: 1,
        ...(KCM_QPS
          ? { extraControllerManagerFlags: [`--kube-api-qps=${KCM_QPS}`, `--kube-api-burst=${2 * KCM_QPS}`] }
          : {}),
      },
    ]);
    kubeconfig = state!.kubeconfig;
  }
  const node = flags.node ?? PROCESS_NODE_NAME;
  client = loadClusterClient("bench", kubeconfig!);
  await client.core.readNode({ name: node });
  await installCrds(client.kubeConfig, { crds: STORAGE_CRDS });

  let localPathNote = "local-path-provisioner: skipped (--skip-local-path)";
  if (!flags.skipLocalPath) {
    const version = await pinnedLocalPathVersion();
    try {
      const build = await ensureLocalPath();
      localPath = await startLocalPath({
        client,
        build,
        kubeconfig: kubeconfig!,
        node,
        dir,
        ...(LOCAL_PATH_WORKERS ? { workers: LOCAL_PATH_WORKERS } : {}),
      });
      localPathNote = `local-path-provisioner ${version}: built from ${LOCAL_PATH_MODULE} (bench/local-path), run out of cluster with its manifest's config, ${LOCAL_PATH_WORKERS ?? "its default 4"} worker threads and client-go's default rate limits; its helper pods run \`sh /script/setup\` on ${node}.`;
    } catch (err) {
      if (!(err instanceof PeerUnavailable)) throw err;
      localPathNote = `local-path-provisioner ${version} could not be had, so it is left out: ${err.message}`;
      progress(localPathNote);
    }
  }
  if (localPath) namespaces.push(burstNamespace("localPath"));
  for (const namespace of [TENANTRY_NAMESPACE, ...namespaces])
    await ensureNamespace(client.core, namespace, { [BENCH_LABEL]: "volumes" });

  progress("starting tenantry's storage system");
  const logger = pino({ level: "warn" }, pino.destination({ dest: join(dir, "tenantry.log"), sync: false }));
  const registry = new Registry();
  /** The provisioner's own time, claim first seen → PersistentVolume created, summed since start. */
  const provisionerTime = async () => {
    const values =
      (await registry.getSingleMetric("tenantry_storage_provision_seconds")?.get())?.values ?? [];
    const total = (suffix: string) =>
      values
        .filter((v) => (v as { metricName?: string }).metricName?.endsWith(suffix))
        .reduce((sum, v) => sum + v.value, 0);
    return { seconds: total("_sum"), count: total("_count") };
  };
  storage = new StorageSystem({
    client,
    namespace: TENANTRY_NAMESPACE,
    registry,
    logger,
    provisioner: BENCH_PROVISIONER,
    agent: {},
    pools: [
      {
        name: "bench-warm",
        spec: poolSpec(WARM_CLASS, join(dir, "storage", "warm"), node, { min: 2, max: 2 }),
      },
      {
        name: "bench-on-demand",
        spec: poolSpec(ON_DEMAND_CLASS, join(dir, "storage", "on-demand"), node, { min: 0, max: 0 }),
      },
    ],
  });
  await storage.start();
  watch = new BindWatch(client);
  await watch.start();

  // 1. One claim at a time, the three kinds in turn.
  const single: Record<KindName, Sample> = {
    warm: { latencies: [], toVolume: [], unbound: 0, totalMs: Number.NaN },
    onDemand: { latencies: [], toVolume: [], unbound: 0, totalMs: Number.NaN },
    localPath: { latencies: [], toVolume: [], unbound: 0, totalMs: Number.NaN },
  };
  await waitReady(client, "bench-warm", 2, 5 * 60_000);
  const kinds = (Object.keys(KINDS) as KindName[]).filter((k) => k !== "localPath" || localPath);
  for (let run = 0; run < RUNS; run++) {
    progress(`one claim at a time: run ${run + 1} of ${RUNS}`);
    for (const kind of kinds) {
      // A pool hit needs a ready volume: the supplier refills the pool between runs.
      if (kind === "warm") await waitReady(client, "bench-warm", 1, 2 * 60_000);
      const sample = await claims(
        client,
        watch,
        "bench-volumes-single",
        [`${slug(kind)}-${run}`],
        KINDS[kind],
        node,
        180_000,
      );
      single[kind].latencies.push(...sample.latencies);
      single[kind].toVolume.push(...sample.toVolume);
      single[kind].unbound += sample.unbound;
    }
  }

  // 2. Bursts.
  const warmCount = Math.min(CLAIMS, MAX_WARM);
  progress(`filling the warm pool with ${warmCount} volumes`);
  await setWarm(client, "bench-warm", { min: warmCount, max: Math.max(warmCount, CLAIMS) });
  await waitReady(client, "bench-warm", warmCount, 30 * 60_000);
  const burstTimeoutMs = Math.max(300_000, CLAIMS * 3_000);
  const names = (prefix: string) => Array.from({ length: CLAIMS }, (_, i) => `${prefix}-${i}`);
  const bursts: Partial<Record<KindName, Sample>> = {};
  /** Mean of the provisioner's own time per claim of each tenantry burst, ms. */
  const ownTime = new Map<KindName, number>();
  const made: Partial<Record<KindName, { made: number; of: number }>> = {};
  for (const kind of kinds) {
    progress(`burst of ${CLAIMS} claims: ${KINDS[kind].provisioner}, ${KINDS[kind].label}`);
    const namespace = burstNamespace(kind);
    const before = await provisionerTime();
    bursts[kind] = await claims(
      client,
      watch,
      namespace,
      names(slug(kind)),
      KINDS[kind],
      node,
      burstTimeoutMs,
    );
    const after = await provisionerTime();
    if (kind !== "localPath")
      ownTime.set(kind, ((after.seconds - before.seconds) * 1000) / Math.max(1, after.count - before.count));
    made[kind] = await foldersMade(client, namespace);
  }
  const loadAfter = loadAverage();

  const sampleVolume = (
    await client.objects.list<PooledVolume>(STORAGE_API_VERSION, "PooledVolume")
  ).items.find((v) => v.spec.provisioner === BENCH_PROVISIONER && v.status?.format);
  const rows: Cell[][] = [];
  for (const [what, samples] of [
    ["1 claim", single],
    [`burst of ${CLAIMS}`, bursts],
  ] as const) {
    for (const kind of kinds)
      rows.push(row(what, KINDS[kind], samples[kind]!, kind === "localPath" ? undefined : samples.localPath));
  }
  printTable(
    "claim created → Bound (status.phase as a watch sees it), tenantry side by side with local-path-provisioner",
    [
      "what",
      "provisioner",
      "volume",
      "claims",
      "unbound",
      "PV p50 ms",
      "PV p99 ms",
      "Bound p50 ms",
      "Bound p99 ms",
      "max ms",
      "total s",
      "p50 local-path ÷ this",
      "p99 local-path ÷ this",
    ],
    rows,
    [
      `1 claim: ${RUNS} runs of each kind, one claim at a time, the kinds taken in turn within each run. Burst: ${CLAIMS} claims`,
      `of each kind, ${CONCURRENCY} creates in flight; one burst each (warm, then empty pool, then local-path). Latency: from just before`,
      "the create request until a watch on claims shows Bound (PV: until a watch on PersistentVolumes shows the claim's, the",
      "provisioner's part; the rest is kube-controller-manager's binding, one claim at a time in its PV controller, with client limits",
      `of ${KCM_QPS ? `${KCM_QPS} requests/s and bursts of ${2 * KCM_QPS} (--controller-manager-qps)` : "20 requests/s and bursts of 30 (its defaults)"}${flags.kubeconfig ? " unless the given cluster sets others" : ""}). Total: first create to last Bound. Percentiles: nearest rank.`,
      `Every claim requests ${flags.size} ReadWriteOnce with the scheduler's volume.kubernetes.io/selected-node set to ${node} at create`,
      "(WaitForFirstConsumer classes, as a pod placed there would have it). Goals: pool hit p50 under 200 ms; burst p99 under 5 s",
      "(Kubernetes' own large-scale test reports p99 59 s for 1,000 claims, kubernetes#133352).",
      `tenantry: advisor, supplier, provisioner (16 workers) and node agent in this process; warm pool kept at 2 ready for the`,
      `one-claim runs and filled to ${warmCount} before its burst${CLAIMS > warmCount ? ` (a pool keeps at most ${MAX_WARM} ready: the rest are made on demand)` : ""}; empty pool: warm min 0, max 0.`,
      `tenantry provisioner's own time per claim (first seen in its cache → PersistentVolume created; its metric), mean over each burst:`,
      `${[...ownTime].map(([kind, value]) => `${KINDS[kind].label} ${ms(value)} ms`).join(", ")}; the rest of PV ms is the API server and the watches.`,
      sampleVolume
        ? `Volumes here: ${sampleVolume.status?.format}, ${sampleVolume.status?.encrypted ? "encrypted (fscrypt)" : `not encrypted (${sampleVolume.status?.conditions?.find((c) => c.type === "Encrypted")?.reason ?? "unknown"})`}.`
        : "No volume was made.",
      localPathNote,
      `Folders that exist for bound claims of the bursts: ${kinds.map((kind) => `${KINDS[kind].provisioner} ${KINDS[kind].label} ${made[kind]?.made}/${made[kind]?.of}`).join(", ")}.`,
      `Machine: ${cpus().length} cores, shared; load average ${loadBefore} before, ${loadAfter} after (1, 5, 15 min).`,
    ],
  );
} finally {
  await watch?.stop();
  // On a cluster of its own everything goes with the cluster; on a given one, each object in turn.
  if (!flags.keep && client && !harness) {
    progress("removing the benchmark's claims, volumes and pools");
    await deleteClaimsOf(client, namespaces);
    const left = await waitVolumesGone(client, [WARM_CLASS, ON_DEMAND_CLASS, LOCAL_PATH_CLASS], 10 * 60_000);
    if (left) progress(`${left} PersistentVolumes were still there after 10 min`);
    const volumesLeft = await deletePools(client, pools, 10 * 60_000);
    if (volumesLeft) progress(`${volumesLeft} PooledVolumes were still there after 10 min`);
  }
  await storage?.stop();
  await localPath?.stop();
  if (!flags.keep) {
    if (client && !harness)
      for (const namespace of [TENANTRY_NAMESPACE, ...namespaces])
        await client.core.deleteNamespace({ name: namespace }).catch(() => {});
    await harness?.reset();
    const unmounted = await unmountLeftovers(dir);
    if (unmounted) progress(`unmounted ${unmounted} volumes${harness ? "" : " the node agent had left"}`);
    await rm(dir, { recursive: true, force: true });
  } else progress(`kept: ${dir}`);
}
