import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  CoreV1Api,
  type CoreV1Event,
  type V1PersistentVolumeClaim,
  type V1Pod,
} from "@kubernetes/client-node";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import { PROCESS_NODE_NAME } from "../../src/localcluster/index.js";
import {
  type PooledVolume,
  STORAGE_API_VERSION,
  type VolumePool,
  type VolumePoolSpec,
} from "../../src/storage/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "./clusters.js";
import { eventually } from "./eventually.js";

export const core = () => testKubeConfig("home").makeApiClient(CoreV1Api);

export function homeClient(): ClusterClient {
  const entry = testEnvironment().clusters.find((c) => c.name === "home")!;
  return loadClusterClient("home", entry.kubeconfig);
}

/**
 * A folder for a backing store, in the home cluster's folder: stopping the cluster unmounts what is
 * mounted there, and the run's end removes it.
 */
export function storePath(pool: string, store: string): string {
  return join(testEnvironment().dir, "home", "storage-tests", pool, store);
}

/** A pool spec on the process node with one 64 MiB size, its stores in the test run's folder. */
export function poolSpec(name: string, overrides: Partial<VolumePoolSpec> = {}): VolumePoolSpec {
  return {
    storageClass: { name, volumeBindingMode: "Immediate" },
    sizes: ["64Mi"],
    backingStores: [{ name: "a", path: storePath(name, "a"), node: PROCESS_NODE_NAME, capacity: "1Gi" }],
    warm: { min: 1, max: 5 },
    encryption: "IfAvailable",
    ...overrides,
  };
}

export async function createPool(client: ClusterClient, spec: VolumePoolSpec, name = uniqueName("pool")) {
  await client.objects.create<VolumePool>({
    apiVersion: STORAGE_API_VERSION,
    kind: "VolumePool",
    metadata: { name },
    spec,
  });
  return name;
}

export async function deletePool(client: ClusterClient, name: string): Promise<void> {
  await client.objects
    .delete({ apiVersion: STORAGE_API_VERSION, kind: "VolumePool", metadata: { name } })
    .catch(() => {});
}

export async function readPool(client: ClusterClient, name: string): Promise<VolumePool> {
  return client.objects.read<VolumePool>({
    apiVersion: STORAGE_API_VERSION,
    kind: "VolumePool",
    metadata: { name },
  });
}

export async function volumesOf(client: ClusterClient, pool: string): Promise<PooledVolume[]> {
  const list = (await client.objects.list<PooledVolume>(STORAGE_API_VERSION, "PooledVolume")).items;
  return list.filter((v) => v.spec.pool === pool);
}

export async function readVolume(client: ClusterClient, name: string): Promise<PooledVolume> {
  return client.objects.read<PooledVolume>({
    apiVersion: STORAGE_API_VERSION,
    kind: "PooledVolume",
    metadata: { name },
  });
}

/**
 * Waits until `ready` volumes of the pool are ready, and returns them. The provisioner decides from
 * its cache, so this also waits for the pool's status (written by the supplier from that same
 * cache) to count them.
 */
export async function warmVolumes(client: ClusterClient, pool: string, ready: number, timeoutMs = 60_000) {
  return eventually(
    async () => {
      const available = (await volumesOf(client, pool)).filter(
        (v) => !v.spec.claim && v.status?.phase === "Available",
      );
      assert.ok(available.length >= ready, `${available.length} of ${ready} volumes ready in pool ${pool}`);
      const counted = (await readPool(client, pool)).status?.sizes?.[0]?.ready ?? 0;
      assert.ok(counted >= ready, `the pool's status counts ${counted} of ${ready} ready`);
      return available;
    },
    { timeoutMs },
  );
}

export function claim(
  name: string,
  storageClassName: string,
  storage = "64Mi",
  extra: Partial<NonNullable<V1PersistentVolumeClaim["spec"]>> = {},
): V1PersistentVolumeClaim {
  return {
    metadata: { name },
    spec: {
      storageClassName,
      accessModes: ["ReadWriteOnce"],
      resources: { requests: { storage } },
      ...extra,
    },
  };
}

export async function boundClaim(api: CoreV1Api, namespace: string, name: string, timeoutMs = 30_000) {
  return eventually(
    async () => {
      const c = await api.readNamespacedPersistentVolumeClaim({ namespace, name });
      assert.equal(c.status?.phase, "Bound", `claim ${name} is ${c.status?.phase}`);
      return c;
    },
    { timeoutMs },
  );
}

export async function claimEvents(api: CoreV1Api, namespace: string, name: string): Promise<CoreV1Event[]> {
  return (await api.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })).items;
}

/** A pause pod on the process node using a claim (for WaitForFirstConsumer). */
export function podWithClaim(
  name: string,
  claimName: string,
  placement: Partial<NonNullable<V1Pod["spec"]>>,
): V1Pod {
  return {
    metadata: { name },
    spec: {
      ...placement,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "main",
          image: "registry.k8s.io/pause:3.10",
          volumeMounts: [{ name: "data", mountPath: "/data" }],
        },
      ],
      volumes: [{ name: "data", persistentVolumeClaim: { claimName } }],
    },
  };
}

export { uniqueName };

export interface StorageChild {
  pid: number;
  /** Everything it logged (standard error). */
  log(): string;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts test/support/storage-system.ts: a storage system serving `provisioner`, as another user
 * (`uid`) or with another PATH when asked. Resolves once it runs.
 */
export async function startStorageChild(
  provisioner: string,
  options: { uid?: number; path?: string; kubeconfig?: string } = {},
): Promise<StorageChild> {
  const kubeconfig =
    options.kubeconfig ?? testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig;
  const script = join(import.meta.dirname, "storage-system.ts");
  const child = spawn(process.execPath, ["--import", "tsx", script, kubeconfig, provisioner], {
    cwd: join(import.meta.dirname, "..", ".."),
    env: { ...process.env, ...(options.path ? { PATH: options.path } : {}) },
    stdio: ["ignore", "pipe", "pipe"],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.uid } : {}),
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the storage system did not start: ${stderr}`)), 60_000);
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("started")) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the storage system exited (${code}) before starting: ${stderr}`));
    });
  });
  return {
    pid: child.pid!,
    log: () => stderr,
    async kill(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}

/** Runs a command of this machine (mount, sync, fscrypt…), resolving with its exit code and output. */
export async function hostCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code?: number | string; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === "number" ? failed.code : 1,
      stdout: failed.stdout ?? "",
      stderr: failed.stderr ?? String(err),
    };
  }
}
