import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type ProcessIdentity, stopTree } from "./host-processes.js";
import type { Terminated } from "./pod-status.js";

/**
 * What the process node's kubelet keeps on disk per pod, under
 * `<cluster>/process-node/pods/<uid>/`: the pod's address and its containers' processes. A new
 * kubelet (after a crash or `kill -9`) reads these to adopt the processes of pods that still exist
 * and to kill those of pods that are gone; `down` reads them to leave no process behind.
 */
export interface ContainerRecord {
  process?: ProcessIdentity;
  startedAt?: string;
  restartCount: number;
  /** How the container's process ended, when it is not running. */
  exit?: RecordedExit;
  /** The exit before the current run, for lastState. */
  lastExit?: RecordedExit;
  /** Exited with 0 (a finished init container is not run again). */
  completed?: boolean;
  ready?: boolean;
}

/** How a container's process ended, as its status shows it. */
export type RecordedExit = Terminated;

export interface PodRecord {
  uid: string;
  namespace: string;
  name: string;
  ip: string;
  containers: Record<string, ContainerRecord>;
}

export function podsDir(clusterDir: string): string {
  return join(clusterDir, "process-node", "pods");
}

export function podDir(clusterDir: string, uid: string): string {
  return join(podsDir(clusterDir), uid);
}

let writes = 0;

export async function writeRecord(clusterDir: string, record: PodRecord): Promise<void> {
  const dir = podDir(clusterDir, record.uid);
  await mkdir(dir, { recursive: true });
  const file = join(dir, "record.json");
  const staging = `${file}.${process.pid}.${++writes}.tmp`;
  await writeFile(staging, `${JSON.stringify(record, null, 2)}\n`);
  await rename(staging, file);
}

export async function readRecords(clusterDir: string): Promise<PodRecord[]> {
  const dir = podsDir(clusterDir);
  if (!existsSync(dir)) return [];
  const records: PodRecord[] = [];
  for (const uid of await readdir(dir)) {
    try {
      records.push(JSON.parse(await readFile(join(dir, uid, "record.json"), "utf8")) as PodRecord);
    } catch {
      // A pod folder without a record never started a process; removing it is all there is to do.
      records.push({ uid, namespace: "", name: "", ip: "", containers: {} });
    }
  }
  return records;
}

export async function removePodDir(clusterDir: string, uid: string): Promise<void> {
  await rm(podDir(clusterDir, uid), { recursive: true, force: true });
}

/** Stops every recorded container process of the cluster (its kubelet is already stopped). */
export async function stopRecordedProcesses(clusterDir: string, graceMs = 2000): Promise<number> {
  const records = await readRecords(clusterDir);
  const processes = records.flatMap((r) =>
    Object.values(r.containers).flatMap((c) => (c.process ? [c.process] : [])),
  );
  const killed = await Promise.all(processes.map((p) => stopTree(p, graceMs)));
  return killed.length;
}
