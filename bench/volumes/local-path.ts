/**
 * rancher's local-path-provisioner, the on-demand peer of the volumes benchmark: built from its Go
 * module (wrapper in bench/local-path, pinned by its go.mod) into the component cache, and run out
 * of cluster the way its manifest (deploy/local-path-storage.yaml) runs it in one: a namespace with
 * its service account, the ConfigMap with its setup and teardown scripts, its config and helper pod
 * template, and a WaitForFirstConsumer StorageClass. Each claim's folder is made by a helper pod on
 * the claim's node running `sh /script/setup`; on the process node of a local cluster that is this
 * machine's /bin/sh (the busybox image), so the folder really exists when the claim binds.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import { applyObject, type ClusterClient } from "../../src/kube/index.js";
import { LOCAL_IMAGES } from "../../src/localcluster/index.js";
import { ensureGoPeer, type GoPeerBuild, PeerUnavailable, pinnedModuleVersion } from "../support/go-peer.js";

export const LOCAL_PATH_MODULE = "github.com/rancher/local-path-provisioner";
export const LOCAL_PATH_PROVISIONER = "rancher.io/local-path";
export const LOCAL_PATH_CLASS = "local-path";
const NAMESPACE = "local-path-storage";
const SERVICE_ACCOUNT = "local-path-provisioner-service-account";
const CONFIG_MAP = "local-path-config";
const wrapperDir = join(dirname(fileURLToPath(import.meta.url)), "..", "local-path");

export function pinnedLocalPathVersion(): Promise<string> {
  return pinnedModuleVersion(wrapperDir, LOCAL_PATH_MODULE);
}

export function ensureLocalPath(): Promise<GoPeerBuild> {
  return ensureGoPeer({
    name: "local-path-provisioner",
    module: LOCAL_PATH_MODULE,
    wrapperDir,
  });
}

export interface RunningLocalPath {
  pid: number;
  logFile: string;
  /** Where the claims' folders are made (on `node`). */
  volumesDir: string;
  stop(): Promise<void>;
}

/** Its manifest's scripts, as shipped. */
const SETUP = '#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"\n';
const TEARDOWN = '#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"\n';

/**
 * Its manifest's helper pod, with the busybox image the process node runs. (The manifest's
 * priorityClassName system-node-critical is left out: the process node has no preemption to win.)
 */
const HELPER_POD = {
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name: "helper-pod" },
  spec: {
    tolerations: [{ key: "node.kubernetes.io/disk-pressure", operator: "Exists", effect: "NoSchedule" }],
    containers: [{ name: "helper-pod", image: LOCAL_IMAGES.busybox, imagePullPolicy: "IfNotPresent" }],
  },
};

export async function startLocalPath(options: {
  client: ClusterClient;
  build: GoPeerBuild;
  kubeconfig: string;
  /** The node whose claims it serves (the process node: where the helper pods really run). */
  node: string;
  dir: string;
  /** Its --worker-threads (its default is 4). */
  workers?: number;
}): Promise<RunningLocalPath> {
  const { client, build, dir } = options;
  const volumesDir = join(dir, "local-path", "volumes");
  await mkdir(volumesDir, { recursive: true });
  await applyObject(client, { apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } });
  await applyObject(client, {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: { name: SERVICE_ACCOUNT, namespace: NAMESPACE },
  });
  const config = {
    nodePathMap: [{ node: options.node, paths: [volumesDir] }],
  };
  const helperPod = stringify(HELPER_POD);
  await applyObject(client, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: CONFIG_MAP, namespace: NAMESPACE },
    data: {
      "config.json": JSON.stringify(config),
      setup: SETUP,
      teardown: TEARDOWN,
      "helperPod.yaml": helperPod,
    },
  });
  await applyObject(client, {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: LOCAL_PATH_CLASS },
    provisioner: LOCAL_PATH_PROVISIONER,
    volumeBindingMode: "WaitForFirstConsumer",
    reclaimPolicy: "Delete",
  });
  const configFile = join(dir, "local-path", "config.json");
  const helperPodFile = join(dir, "local-path", "helperPod.yaml");
  await writeFile(configFile, JSON.stringify(config));
  await writeFile(helperPodFile, helperPod);
  const logFile = join(dir, "local-path", "provisioner.log");
  const log = createWriteStream(logFile);
  const args = [
    "--debug",
    "start",
    "--config",
    configFile,
    "--kubeconfig",
    options.kubeconfig,
    "--namespace",
    NAMESPACE,
    "--provisioner-name",
    LOCAL_PATH_PROVISIONER,
    "--helper-image",
    LOCAL_IMAGES.busybox,
    "--configmap-name",
    CONFIG_MAP,
    "--service-account-name",
    SERVICE_ACCOUNT,
    "--helper-pod-file",
    helperPodFile,
    ...(options.workers ? ["--worker-threads", String(options.workers)] : []),
  ];
  const child: ChildProcess = spawn(build.binary, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, POD_NAMESPACE: NAMESPACE },
  });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  let exited: number | null | undefined;
  child.on("exit", (code) => {
    exited = code;
  });
  const command = `${build.binary} ${args.join(" ")}`;
  const lastLines = async () => (await readFile(logFile, "utf8")).trim().split("\n").slice(-6).join("\n");
  // It logs this once its controller runs (sig-storage-lib-external-provisioner).
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited !== undefined)
      throw new PeerUnavailable(command, `exited with ${exited}: ${await lastLines()}`);
    const text = await readFile(logFile, "utf8").catch(() => "");
    if (/Started provisioner controller|Provisioner started/.test(text)) break;
    if (Date.now() > deadline)
      throw new PeerUnavailable(command, `not started after 60 s: ${await lastLines()}`);
    await sleep(200);
  }
  return {
    pid: child.pid!,
    logFile,
    volumesDir,
    stop: async () => {
      if (exited !== undefined) return;
      const gone = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await Promise.race([gone, sleep(10_000)]);
      if (exited === undefined) child.kill("SIGKILL");
      log.end();
    },
  };
}
