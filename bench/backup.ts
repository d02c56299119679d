/**
 * `npx tsx bench/backup.ts`: runtime backups, in two tables.
 *
 * 1. Throughput of the backup agent's work on one volume folder (--size of random bytes in --files
 *    files, 1 GiB by default) against a real versitygw started for the run — backup (tar,
 *    AES-256-GCM, multipart upload with SHA-256 per part, --concurrency parts at once, read back and
 *    verified) and restore (download, decrypt, verify, unpack into staging, swap in), each request
 *    presigned as the agents' are — side by side with a plain `tar | tar` copy of the same folder on the same disk, the floor any backup
 *    pays. Median and best of --runs runs. Goal: a restore of 1 GiB under 30 s.
 * 2. Login → runtime ready after an idle teardown (--teardown-runs per idle action; 0 skips it): a
 *    local cluster with its process node, versitygw and tenantry; an echo runtime with
 *    --teardown-size of data in its volume goes idle (60 s, the shortest idle period) and is torn
 *    down with action Stop (backed up, stopped) and Delete (stopped, backed up, its claim removed);
 *    then the user logs in, POSTs the start and polls GET until 200, its data checked afterwards. The
 *    peer, run side by side: the same login → ready after a plain stop through the Admin API.
 *
 * Only a smoke run belongs on a shared machine (e.g. --size 64MiB --runs 1 --teardown-runs 1): the
 * load average printed under each table says how busy the machine was.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import { Command } from "commander";
import { pino } from "pino";
import { startEmbeddedTenantry } from "../src/app/embedded.js";
import type { RunningTenantry } from "../src/app/tenantry.js";
import { backupVolume, newTenantKey, restoreVolume, S3ObjectStore } from "../src/backup/index.js";
import { type ClusterClient, loadClusterClient } from "../src/kube/index.js";
import {
  ClusterHarness,
  LOCAL_IMAGES,
  PROCESS_NODE_PLACEMENT,
  startLocalObjectStore,
  stopLocalObjectStore,
} from "../src/localcluster/index.js";
import { RUNTIME_LABEL, type Runtime, runtimePlacement } from "../src/runtimes/index.js";
import { percentile, printTable } from "./support/report.js";

const flags = new Command()
  .option("--size <size>", "size of the volume (KiB, MiB or GiB)", "1GiB")
  .option("--files <n>", "files the volume holds", "16")
  .option("--runs <n>", "runs of each", "3")
  .option("--concurrency <n>", "parts uploaded or downloaded at once", "4")
  .option("--teardown-runs <n>", "login → ready after an idle teardown, per idle action (0: skip)", "3")
  .option("--teardown-size <size>", "data in the torn-down runtime's volume", "64MiB")
  .parse()
  .opts<{
    size: string;
    files: string;
    runs: string;
    concurrency: string;
    teardownRuns: string;
    teardownSize: string;
  }>();

const UNITS: Record<string, number> = { KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };
function bytesOf(flag: string, text: string): number {
  const match = /^(\d+)(KiB|MiB|GiB)$/.exec(text);
  if (!match)
    throw new Error(`${flag} must be a whole number of KiB, MiB or GiB (e.g. 64MiB), not "${text}"`);
  return Number(match[1]) * UNITS[match[2]!]!;
}
const size = bytesOf("--size", flags.size);
const teardownSize = bytesOf("--teardown-size", flags.teardownSize);
const runs = Number(flags.runs);
const teardownRuns = Number(flags.teardownRuns);
const files = Number(flags.files);
const concurrency = Number(flags.concurrency);
const mib = size / 1024 ** 2;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");

/** Random bytes into `count` files of `dir`, written a chunk at a time (1 GiB need not fit twice in memory). */
async function fill(dir: string, bytes: number, count: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  const each = Math.floor(bytes / count);
  for (let i = 0; i < count; i++) {
    const path = join(dir, `f${i}.bin`);
    await writeFile(path, "");
    for (let written = 0; written < each; written += 64 * 1024 * 1024) {
      await writeFile(path, randomBytes(Math.min(64 * 1024 * 1024, each - written)), { flag: "a" });
    }
  }
}

async function throughput(root: string): Promise<void> {
  const volume = join(root, "volume");
  await fill(volume, size, files);
  const storeDir = join(root, "store");
  const state = await startLocalObjectStore(storeDir);
  const store = new S3ObjectStore({ ...state, bucket: "bench-backup", concurrency });
  await store.ensureBucket();
  // The agent's own path: every request presigned (here in process, without the broker's HTTP hop
  // and token review), even one part sent as a multipart upload.
  const agentStore = new S3ObjectStore({
    broker: { url: "http://presigner.invalid", presign: (request) => store.presign(request) },
    concurrency,
  });
  const tenantKey = newTenantKey();
  const samples = { backup: [] as number[], restore: [] as number[], tar: [] as number[] };
  const loads: string[] = [];
  try {
    for (let run = 0; run < runs; run++) {
      const key = `bench/${run}/volume.tar.enc`;
      let started = performance.now();
      await backupVolume(agentStore, { dir: volume, key, tenantKey });
      samples.backup.push(performance.now() - started);
      started = performance.now();
      await restoreVolume(agentStore, { dir: volume, key, tenantKey });
      samples.restore.push(performance.now() - started);
      const copy = join(root, `copy-${run}`);
      await mkdir(copy);
      started = performance.now();
      execFileSync("sh", ["-c", `tar -C '${volume}' -cf - . | tar -C '${copy}' -xf -`]);
      samples.tar.push(performance.now() - started);
      await rm(copy, { recursive: true, force: true });
      await store.delete([key, `${key}.json`]);
      loads.push(load());
    }
  } finally {
    agentStore.close();
    store.close();
    await stopLocalObjectStore(storeDir);
    await rm(volume, { recursive: true, force: true });
  }
  const rate = (msValue: number) => (mib / (msValue / 1000)).toFixed(1);
  printTable(
    `backup agent, ${flags.size} in ${files} files, versitygw ${state.version} on loopback, ${concurrency} parts at once`,
    ["operation", "median MiB/s", "best MiB/s", "median s", "vs tar copy"],
    (["backup", "restore", "tar"] as const).map((op) => {
      const median = percentile(samples[op], 50);
      return [
        op === "tar" ? "tar | tar copy (floor)" : op,
        rate(median),
        rate(Math.min(...samples[op])),
        (median / 1000).toFixed(2),
        `${(median / percentile(samples.tar, 50)).toFixed(1)}×`,
      ];
    }),
    [
      `${runs} runs each; median is the 50th percentile. backup includes reading the object back to verify it.`,
      "every request of backup and restore is presigned, as the agents' are (in process: no hop to the broker).",
      "restore includes the download, decryption (GCM-authenticated), the SHA-256 check, unpacking into staging and the swap.",
      `load average (1, 5, 15 min) after each run: ${loads.join(" | ")}`,
    ],
  );
}

const API = "tenantry.dev/v1alpha1";
const TENANT = "bench";
const USER = "idler";
const PASSWORD = "idler-bench-password";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(250);
  }
}

async function call(url: string, method: string, token: string) {
  const res = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(method === "POST" ? { "content-type": "application/json" } : {}),
    },
    ...(method === "POST" ? { body: "{}" } : {}),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Idle teardowns of each kind, and the plain stop beside them: login → ready after each. */
async function teardowns(root: string): Promise<void> {
  const harness = new ClusterHarness({ dir: join(root, "clusters"), log: () => {} });
  let tenantry: RunningTenantry | undefined;
  try {
    process.stderr.write("starting a cluster, versitygw and tenantry …\n");
    const objectStore = await harness.objectStore();
    const [state] = await harness.up([{ name: "home", nodes: 1 }]);
    const logger = pino(
      { level: "info" },
      pino.destination({ dest: join(root, "tenantry.log"), sync: false }),
    );
    tenantry = await startEmbeddedTenantry(state!, logger, { objectStore });
    const base = tenantry.runtimesAdmin?.url;
    const identity = tenantry.builtinIdentity;
    if (!base || !identity)
      throw new Error("this tenantry serves no runtimes Admin API or built-in identity");
    const client = loadClusterClient("home", state!.kubeconfig);
    await identity.createUser({ name: USER, password: PASSWORD, tenant: TENANT, tenantAdmin: false });
    const kinds = ["Stop", "Delete", "plain stop"] as const;
    const samples = new Map<string, number[]>(kinds.map((k) => [k, []]));
    const loads: string[] = [];
    // The three kinds side by side, each with its own service (a policy is per service).
    await Promise.all(
      kinds.map(async (kind, index) => {
        const service = `bench-${index}`;
        await client.objects.create({
          apiVersion: API,
          kind: "RuntimeService",
          metadata: { name: service },
          spec: {
            plugin: { builtin: "generic" },
            defaults: { image: LOCAL_IMAGES.echo, port: 8080, volumeSize: "2Gi" },
            pods: PROCESS_NODE_PLACEMENT,
          },
        } as KubernetesObject);
        if (kind !== "plain stop")
          await client.objects.create({
            apiVersion: API,
            kind: "BackupPolicy",
            metadata: { name: service },
            spec: { service, retention: 1, idle: { timeoutSeconds: 60, action: kind } },
          } as KubernetesObject);
        for (let run = 0; run < teardownRuns; run++) {
          const ms = await teardownRun(client, base, service, kind, () =>
            identity.login({ username: USER, password: PASSWORD }).then((l) => l.token),
          );
          samples.get(kind)!.push(ms);
          loads.push(load());
        }
      }),
    );
    const plain = percentile(samples.get("plain stop")!, 50);
    printTable(
      `login → runtime ready after an idle teardown, ${flags.teardownSize} in the runtime's volume`,
      ["torn down by", "runs", "median s", "best s", "vs plain stop"],
      kinds.map((kind) => {
        const values = samples.get(kind)!;
        const median = percentile(values, 50);
        return [
          kind === "plain stop" ? "a plain stop (peer)" : `idle, action ${kind}`,
          String(values.length),
          (median / 1000).toFixed(2),
          (Math.min(...values) / 1000).toFixed(2),
          `${(median / plain).toFixed(1)}×`,
        ];
      }),
      [
        "login (built-in identity) → POST start → GET every 250 ms until 200; median is the 50th percentile.",
        "Delete restores the objects and the volume's data before the runtime starts; Stop resumes with its claim.",
        `load average (1, 5, 15 min) after each run: ${loads.join(" | ")}`,
      ],
    );
  } finally {
    await tenantry?.stop().catch(() => {});
    await harness.down().catch(() => {});
    await harness.stopObjectStore().catch(() => {});
  }
}

/** One cycle: start, fill its volume, be torn down, then login → ready; the data is checked. */
async function teardownRun(
  client: ClusterClient,
  base: string,
  service: string,
  kind: "Stop" | "Delete" | "plain stop",
  login: () => Promise<string>,
): Promise<number> {
  const placed = runtimePlacement({ tenant: TENANT, user: USER, service, instance: "one" });
  const path = `${base}/services/${USER}/${service}/one`;
  const read = () =>
    client.objects.read({ apiVersion: API, kind: "Runtime", metadata: placed }) as Promise<Runtime>;
  let token = await login();
  await call(path, "POST", token);
  await until("the runtime to run", 300_000, async () =>
    (await call(path, "GET", token)) === 200 ? true : undefined,
  );
  const claim = await client.core.readNamespacedPersistentVolumeClaim({
    name: `${placed.name}-data`,
    namespace: placed.namespace,
  });
  const pv = await client.core.readPersistentVolume({ name: claim.spec!.volumeName! });
  const dir = pv.spec!.hostPath!.path;
  await rm(join(dir, "data"), { recursive: true, force: true });
  await fill(join(dir, "data"), teardownSize, 4);
  const digest = createHash("sha256")
    .update(await readFile(join(dir, "data", "f0.bin")))
    .digest("hex");
  if (kind === "plain stop") await call(`${path}/stop`, "DELETE", token);
  await until(`the runtime to be torn down (${kind})`, 600_000, async () => {
    const runtime = await read();
    if (runtime.status?.phase !== "Stopped" || runtime.spec.desiredState !== "Stopped") return undefined;
    if (kind !== "Delete") return true;
    const claims = await client.core.listNamespacedPersistentVolumeClaim({
      namespace: placed.namespace,
      labelSelector: `${RUNTIME_LABEL}=${placed.name}`,
    });
    return runtime.status.reason === "IdleTornDown" && claims.items.length === 0 ? true : undefined;
  });
  const started = performance.now();
  token = await login();
  await call(path, "POST", token);
  await until("the runtime to run again", 600_000, async () =>
    (await call(path, "GET", token)) === 200 ? true : undefined,
  );
  const elapsed = performance.now() - started;
  const again = await client.core.readNamespacedPersistentVolumeClaim({
    name: `${placed.name}-data`,
    namespace: placed.namespace,
  });
  const pvAgain = await client.core.readPersistentVolume({ name: again.spec!.volumeName! });
  const back = createHash("sha256")
    .update(await readFile(join(pvAgain.spec!.hostPath!.path, "data", "f0.bin")))
    .digest("hex");
  if (back !== digest) throw new Error(`the runtime's data after ${kind} is not what it was`);
  // Stopped through the API for the next run (the idle timer would otherwise tear it down meanwhile).
  await call(`${path}/stop`, "DELETE", token);
  await until("the runtime to stop", 120_000, async () =>
    (await read()).status?.phase === "Stopped" ? true : undefined,
  );
  return elapsed;
}

const root = await mkdtemp(join(tmpdir(), "tenantry-bench-backup-"));
try {
  if (runs > 0) await throughput(root);
  if (teardownRuns > 0) await teardowns(root);
} finally {
  await rm(root, { recursive: true, force: true });
}
