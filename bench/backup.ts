/**
 * `npx tsx bench/backup.ts`: throughput of the backup agent's work on one volume folder (default
 * 256 MiB of random bytes in 16 files) against a real versitygw started for the run — backup (tar,
 * AES-256-GCM, multipart upload with SHA-256 per part, read back and verified) and restore (download,
 * decrypt, verify, unpack into staging, swap in) — side by side with a plain `tar` copy of the same
 * folder on the same disk, the floor any backup pays. Median and best of --runs runs.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { backupVolume, newTenantKey, restoreVolume, S3ObjectStore } from "../src/backup/index.js";
import { startLocalObjectStore, stopLocalObjectStore } from "../src/localcluster/index.js";
import { percentile, printTable } from "./support/report.js";

const flags = new Command()
  .option("--mib <n>", "size of the volume", "256")
  .option("--runs <n>", "runs of each", "3")
  .parse()
  .opts<{ mib: string; runs: string }>();
const mib = Number(flags.mib);
const runs = Number(flags.runs);

const root = await mkdtemp(join(tmpdir(), "tenantry-bench-backup-"));
const storeDir = join(root, "store");
const volume = join(root, "volume");
await mkdir(volume, { recursive: true });
const files = 16;
for (let i = 0; i < files; i++)
  await writeFile(join(volume, `f${i}.bin`), randomBytes((mib * 1024 * 1024) / files));

const state = await startLocalObjectStore(storeDir);
const store = new S3ObjectStore({ ...state, bucket: "bench-backup" });
await store.ensureBucket();
const tenantKey = newTenantKey();
const samples = { backup: [] as number[], restore: [] as number[], tar: [] as number[] };
try {
  for (let run = 0; run < runs; run++) {
    const key = `bench/${run}/volume.tar.enc`;
    let started = performance.now();
    await backupVolume(store, { dir: volume, key, tenantKey });
    samples.backup.push(performance.now() - started);
    started = performance.now();
    await restoreVolume(store, { dir: volume, key, tenantKey });
    samples.restore.push(performance.now() - started);
    const copy = join(root, `copy-${run}`);
    await mkdir(copy);
    started = performance.now();
    execFileSync("sh", ["-c", `tar -C '${volume}' -cf - . | tar -C '${copy}' -xf -`]);
    samples.tar.push(performance.now() - started);
    await rm(copy, { recursive: true, force: true });
    await store.delete([key, `${key}.json`]);
  }
} finally {
  store.close();
  await stopLocalObjectStore(storeDir);
  await rm(root, { recursive: true, force: true });
}
const rate = (msValue: number) => (mib / (msValue / 1000)).toFixed(1);
printTable(
  `backup agent, ${mib} MiB in ${files} files, versitygw ${state.version} on loopback`,
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
    "restore includes download, decryption, SHA-256 checks, unpacking into staging and the swap.",
  ],
);
