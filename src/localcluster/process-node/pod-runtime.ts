import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, openSync } from "node:fs";
import { chown, mkdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { V1Container, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { nodeProgram } from "../../common/index.js";
import { describeError } from "../../kube/index.js";
import { ensureWireguardGo } from "../build.js";
import type { LocalImageKind } from "./constants.js";
import { ContainerConfigError, containerEnv, expandReferences } from "./env.js";
import type { EventRecorder } from "./events.js";
import { identify, isAlive, killGroup, type ProcessIdentity, stopTree } from "./host-processes.js";
import type { ImagePuller } from "./image-puller.js";
import {
  backupAgentArgs,
  containerProgram,
  imageKind,
  jupyterServerArgs,
  pullPolicy,
  shellArgs,
  unknownImageMessage,
} from "./images.js";
import { type NodeNetwork, podSysctls, requestedRoutes } from "./network/index.js";
import type { ContainerView, PodView, Terminated } from "./pod-status.js";
import { type ProbeKind, ProbeWorker } from "./probes.js";
import { type ContainerRecord, type PodRecord, podDir, writeRecord } from "./records.js";
import {
  checkMountTarget,
  launcherArgv,
  nodeInstallDir,
  programMounts,
  type SandboxMount,
  type SandboxSpec,
  volumeMount,
  writeSandbox,
} from "./sandbox/launcher.js";
import {
  claimOwnerOf,
  openEmptyDir,
  openTokens,
  ownClaim,
  ownWrittenFiles,
  type VolumeOwner,
  volumeOwner,
} from "./sandbox/ownership.js";
import { writePodFiles } from "./sandbox/pod-files.js";
import { containerRunAs, podUser } from "./sandbox/users.js";
import { containerMounts, type PreparedVolumes, prepareVolumes, type VolumeSources } from "./volumes.js";

export const ECHO_SERVER = join(dirname(fileURLToPath(import.meta.url)), "images", "echo-server.mjs");
/**
 * The product's backup agent, which a real cluster runs from its image; here this Node.js runs it
 * as tenantry runs (compiled, or its source through tsx). BACKUP_AGENT is its file.
 */
const BACKUP_AGENT_PROGRAM = nodeProgram("../../backup/agent/main.ts", import.meta.url);
export const BACKUP_AGENT = BACKUP_AGENT_PROGRAM.at(-1)!;
/** tenantry's network gateway (src/multicluster/network/gateway), run the same way. */
const NETWORK_GATEWAY_PROGRAM = nodeProgram("../../multicluster/network/gateway/main.ts", import.meta.url);
/** The checkout the agent runs from: the echo and backup agent images are its sources and node_modules. */
const CHECKOUT = fileURLToPath(new URL("../../../", import.meta.url)).replace(/\/$/, "");

/** What every pod of the node shares: the API, events, images, addresses and the node's facts. */
export interface NodeContext {
  clusterDir: string;
  nodeName: string;
  hostIP: string;
  allocatable: Record<string, string>;
  apiserver: { host: string; port: number };
  sources: VolumeSources;
  events: EventRecorder;
  images: ImagePuller;
  network: NodeNetwork;
  logger: Logger;
  /** Asks for the pod to be synced again (now, or after `ms`). */
  resync(key: string, ms?: number): void;
}

/** A container ready to launch, or the reason its program does not exist in its image. */
type PreparedContainer = { sandbox: SandboxSpec } | { notFound: string };

/** The Python installation a virtualenv was made from (its pyvenv.cfg `home`), to mount beside it. */
async function pythonHome(venv: string): Promise<string[]> {
  const config = await readFile(join(venv, "pyvenv.cfg"), "utf8").catch(() => "");
  const home = /^home\s*=\s*(.+)$/m.exec(config)?.[1]?.trim();
  return home ? [dirname(home)] : [];
}

const MAX_BACKOFF_MS = 300_000;
const INITIAL_BACKOFF_MS = 10_000;

/** One container of the pod: its state, its process, its probes, its restart back-off. */
class ContainerSlot {
  state: ContainerView["state"];
  last?: Terminated;
  restartCount = 0;
  ready = false;
  started = false;
  completed = false;
  process?: ProcessIdentity;
  child?: ChildProcess;
  containerID?: string;
  imageID = "";
  probes: ProbeWorker[] = [];
  /** The container is being started (pull or spawn in flight): no second start, and a stop waits for it. */
  starting = false;
  startTask?: Promise<void>;
  backoff?: { delayMs: number; updatedAt: number };
  backoffUntil = 0;
  /** The exit waiting for its restart (the state shows CrashLoopBackOff meanwhile). */
  crashExit?: Terminated;
  pullBackoff?: { delayMs: number; until: number; message: string };
  killedForProbe?: ProbeKind;
  adoptionPoll?: NodeJS.Timeout;
  private exitWaiters: (() => void)[] = [];

  constructor(
    readonly spec: V1Container,
    readonly init: boolean,
    afterInit: boolean,
  ) {
    this.state = { waiting: { reason: init || afterInit ? "PodInitializing" : "ContainerCreating" } };
  }

  get sidecar(): boolean {
    return this.init && this.spec.restartPolicy === "Always";
  }

  get fieldPath(): string {
    return `${this.init ? "spec.initContainers" : "spec.containers"}{${this.spec.name}}`;
  }

  get running(): boolean {
    return "running" in this.state;
  }

  view(): ContainerView {
    return {
      name: this.spec.name,
      image: this.spec.image ?? "",
      imageID: this.imageID,
      ...(this.containerID ? { containerID: this.containerID } : {}),
      state: this.state,
      ...(this.last ? { last: this.last } : {}),
      restartCount: this.restartCount,
      ready: this.running && this.ready,
      started: this.running && this.started,
      ...(this.sidecar ? { sidecar: true } : {}),
    };
  }

  /** Resolves once the current process's exit has been recorded (or after `ms`). */
  waitExit(ms: number): Promise<void> {
    if (!this.process) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.exitWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  notifyExit(): void {
    for (const waiter of this.exitWaiters.splice(0)) waiter();
  }

  stopProbes(): void {
    for (const probe of this.probes) probe.stop();
    this.probes = [];
    if (this.adoptionPoll) clearInterval(this.adoptionPoll);
    this.adoptionPoll = undefined;
  }
}

const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

/**
 * One pod on the process node. Its sync is level-based: every call looks at the pod and at what
 * runs, and moves the pod one step on (set up volumes, pull, start the next init container, start
 * or restart app containers); long steps (pulls, graceful stops) run in the background and ask for
 * another sync when they end. Process exits and probe results do the same.
 */
export class PodRuntime {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  readonly dir: string;
  ip?: string;
  startTime?: string;
  private readonly slots = new Map<string, ContainerSlot>();
  private volumes?: Map<string, string>;
  /** The pod's network namespace (none on the host's network). */
  private netns?: string;
  /** The files every container mounts over /etc/hosts, /etc/resolv.conf and /etc/hostname. */
  private podFiles?: Map<string, string>;
  /** Who owns the pod's volumes (the first container's user, see sandbox/users.ts). */
  private owner?: VolumeOwner;
  private renewAt?: number;
  private mountFailure?: string;
  terminalPhase?: "Succeeded" | "Failed";
  /** Set once deletion began; resolves when every process is gone. */
  terminating?: Promise<void>;
  terminated = false;
  lastWritten?: string;
  /** The pod's folder is gone: nothing is saved any more. */
  private closed = false;
  private saving = Promise.resolve();
  lastConditions?: { type: string; status: string; lastTransitionTime?: unknown }[];

  constructor(
    private readonly ctx: NodeContext,
    readonly key: string,
    pod: V1Pod,
  ) {
    this.uid = pod.metadata!.uid!;
    this.namespace = pod.metadata!.namespace!;
    this.name = pod.metadata!.name!;
    this.dir = podDir(ctx.clusterDir, this.uid);
    const initContainers = pod.spec?.initContainers ?? [];
    for (const spec of initContainers) this.slots.set(spec.name, new ContainerSlot(spec, true, false));
    for (const spec of pod.spec?.containers ?? [])
      this.slots.set(spec.name, new ContainerSlot(spec, false, initContainers.length > 0));
  }

  private get target() {
    return { kind: "Pod" as const, namespace: this.namespace, name: this.name, uid: this.uid };
  }

  private slotTarget(slot: ContainerSlot) {
    return { ...this.target, fieldPath: slot.fieldPath };
  }

  private get initSlots(): ContainerSlot[] {
    return [...this.slots.values()].filter((s) => s.init);
  }

  private get appSlots(): ContainerSlot[] {
    return [...this.slots.values()].filter((s) => !s.init);
  }

  /** Takes over what a previous kubelet left: address, restart counts, and processes still alive. */
  adopt(record: PodRecord | undefined, pod: V1Pod): void {
    this.ip = record?.ip || pod.status?.podIP || undefined;
    if (!pod.spec?.hostNetwork) this.netns = this.ctx.network.existing(this.uid);
    this.startTime = pod.status?.startTime ? String(pod.status.startTime) : undefined;
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    for (const slot of this.slots.values()) {
      const saved = record?.containers[slot.spec.name];
      const status = statuses.find((s) => s.name === slot.spec.name);
      slot.restartCount = saved?.restartCount ?? status?.restartCount ?? 0;
      if (saved?.lastExit) slot.last = { ...saved.lastExit };
      if (saved?.exit) slot.state = { terminated: { ...saved.exit } };
      slot.completed = saved?.completed === true;
      const kind = imageKind(slot.spec.image ?? "");
      if (kind) slot.imageID = this.ctx.images.imageID(kind, slot.spec.image!);
      if (!saved?.process) continue;
      if (isAlive(saved.process)) {
        slot.process = saved.process;
        slot.containerID = `process://${saved.process.pid}`;
        slot.state = { running: { startedAt: saved.startedAt ?? now() } };
        slot.ready = saved.ready ?? false;
        slot.started = true;
        this.watchAdopted(slot);
        this.startProbes(slot, pod, saved.ready);
      } else if (!saved.exit) {
        // It ended while no kubelet watched it: its exit code is lost, as a runtime's would be.
        slot.state = {
          terminated: {
            exitCode: 137,
            reason: "ContainerStatusUnknown",
            message: "The container's process ended while the process node's agent was not running",
            startedAt: saved.startedAt ?? now(),
            finishedAt: now(),
          },
        };
      }
    }
  }

  private watchAdopted(slot: ContainerSlot): void {
    const proc = slot.process!;
    slot.adoptionPoll = setInterval(() => {
      if (isAlive(proc)) return;
      clearInterval(slot.adoptionPoll);
      slot.adoptionPoll = undefined;
      this.exited(slot, proc, 137, null, "ContainerStatusUnknown");
    }, 1000);
    slot.adoptionPoll.unref();
  }

  view(): PodView {
    return {
      ...(this.ip ? { podIP: this.ip } : {}),
      hostIP: this.ctx.hostIP,
      ...(this.startTime ? { startTime: this.startTime } : {}),
      sandboxReady: this.volumes !== undefined && this.podFiles !== undefined,
      initContainers: this.initSlots.map((s) => s.view()),
      containers: this.appSlots.map((s) => s.view()),
      ...(this.terminalPhase ? { terminalPhase: this.terminalPhase } : {}),
    };
  }

  record(): PodRecord {
    const containers: Record<string, ContainerRecord> = {};
    for (const slot of this.slots.values()) {
      containers[slot.spec.name] = {
        restartCount: slot.restartCount,
        ...(slot.process ? { process: slot.process } : {}),
        ...("running" in slot.state ? { startedAt: slot.state.running.startedAt } : {}),
        ...("terminated" in slot.state
          ? { exit: { ...slot.state.terminated } }
          : slot.crashExit
            ? { exit: { ...slot.crashExit } }
            : {}),
        ...(slot.last ? { lastExit: { ...slot.last } } : {}),
        ...(slot.completed ? { completed: true } : {}),
        ...(slot.ready ? { ready: true } : {}),
      };
    }
    return { uid: this.uid, namespace: this.namespace, name: this.name, ip: this.ip ?? "", containers };
  }

  /** Writes the record, one write at a time, the latest state last. */
  save(): Promise<void> {
    this.saving = this.saving.then(async () => {
      if (this.closed) return;
      await writeRecord(this.ctx.clusterDir, this.record()).catch((err) =>
        this.ctx.logger.warn({ pod: this.key, error: describeError(err) }, "could not save the pod's record"),
      );
    });
    return this.saving;
  }

  /** Stops the probes and saving; the caller removes the pod's folder. */
  async close(): Promise<void> {
    this.closed = true;
    await this.saving;
    for (const slot of this.slots.values()) slot.stopProbes();
  }

  /** Moves the pod on. `allocate` gives the pod an address the first time. */
  async advance(pod: V1Pod, allocate: () => string): Promise<void> {
    if (this.terminalPhase || this.terminating) return;
    this.startTime ??= now();
    if (!this.ip) {
      // A pod on the host's network has the host's address, as on any node.
      this.ip = pod.spec?.hostNetwork ? this.ctx.hostIP : allocate();
      await mkdir(this.dir, { recursive: true });
      await this.save();
    }
    if (!this.podFiles && !(await this.setUpSandbox(pod))) return;
    await this.routeThrough(pod);
    if (!this.volumes || (this.renewAt !== undefined && Date.now() >= this.renewAt)) {
      try {
        const prepared = await prepareVolumes(
          pod,
          this.dir,
          this.ctx.sources,
          this.addresses(),
          this.ctx.allocatable,
        );
        await this.ownVolumes(pod, prepared, this.volumes === undefined);
        this.volumes = prepared.paths;
        this.renewAt = prepared.renewAt;
        this.mountFailure = undefined;
        if (prepared.renewAt) this.ctx.resync(this.key, Math.max(1000, prepared.renewAt - Date.now()));
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (message !== this.mountFailure) this.ctx.events.warning(this.target, "FailedMount", message);
        this.mountFailure = message;
        if (!this.volumes) {
          this.ctx.resync(this.key, 2000);
          return;
        }
      }
    }
    const policy = pod.spec?.restartPolicy ?? "Always";
    for (const slot of this.initSlots) {
      if (slot.sidecar) {
        if (!slot.running) await this.startOrRestart(slot, pod, "Always");
        if (!(slot.running && slot.started)) return;
        continue;
      }
      if (slot.completed) continue;
      if (slot.running || slot.starting) return;
      if ("terminated" in slot.state && slot.state.terminated.exitCode !== 0 && policy === "Never") {
        this.end("Failed");
        return;
      }
      await this.startOrRestart(slot, pod, policy === "Never" ? "Never" : "OnFailure");
      return;
    }
    for (const slot of this.appSlots) {
      if (!slot.running && !slot.starting) await this.startOrRestart(slot, pod, policy);
    }
    const apps = this.appSlots;
    const finished = apps.every(
      (s) => "terminated" in s.state && !restartWanted(policy, s.state.terminated.exitCode),
    );
    if (finished && apps.length > 0) {
      const failed = apps.some((s) => "terminated" in s.state && s.state.terminated.exitCode !== 0);
      this.end(failed ? "Failed" : "Succeeded");
    }
  }

  private addresses() {
    return { podIP: this.ip ?? "", hostIP: this.ctx.hostIP };
  }

  /** Where the agent reaches the pod's address (probes run from the machine). */
  private get probeAddress(): string {
    return this.netns ? this.ctx.network.reach(this.ip!) : this.ip!;
  }

  private get hasProcesses(): boolean {
    return [...this.slots.values()].some((s) => s.process !== undefined);
  }

  /**
   * The pod's sandbox, as a container runtime makes it: its network namespace with its address
   * (kept when a restarted agent adopts running containers), and its hosts and resolv.conf files.
   * Failures are reported (FailedCreatePodSandBox) and tried again.
   */
  private async setUpSandbox(pod: V1Pod): Promise<boolean> {
    if (pod.spec?.hostNetwork) {
      this.podFiles = new Map();
      return true;
    }
    try {
      if (!this.netns || !this.hasProcesses)
        this.netns = await this.ctx.network.attach(this.uid, this.ip!, podSysctls(pod));
      this.podFiles = await writePodFiles(pod, this.ip!, this.dir);
      return true;
    } catch (err) {
      const message = `Failed to create pod sandbox: ${err instanceof Error ? err.message : String(err)}`;
      this.ctx.events.warning(this.target, "FailedCreatePodSandBox", message);
      this.ctx.logger.warn({ pod: this.key, error: describeError(err) }, "pod sandbox failed");
      this.ctx.resync(this.key, 2000);
      return false;
    }
  }

  /** The prefixes the node routes through this pod now (a gateway's annotation). */
  private routed = "";

  /** Routes what a gateway pod's annotation lists through it (network/gateways.ts); failures are Events. */
  private async routeThrough(pod: V1Pod): Promise<void> {
    if (!this.netns) return;
    try {
      const prefixes = requestedRoutes(this.ctx.network.plan, pod);
      if (prefixes.join(",") === this.routed) return;
      await this.ctx.network.routeThrough(this.ip!, prefixes);
      this.routed = prefixes.join(",");
    } catch (err) {
      this.ctx.events.warning(this.target, "FailedRoutes", err instanceof Error ? err.message : String(err));
      this.ctx.resync(this.key, 5000);
    }
  }

  /** The owner of claims mounted by the pod, when not root (a helper pod works as that user). */
  private claimOwner?: { uid: number; gid: number };

  /**
   * Volumes made usable by the pod's user (sandbox/ownership.ts): on first setup the emptyDirs and
   * claims, every time the files written for the pod.
   */
  private async ownVolumes(pod: V1Pod, prepared: PreparedVolumes, first: boolean): Promise<void> {
    const { paths } = prepared;
    const volumes = pod.spec?.volumes ?? [];
    if (first) {
      for (const volume of volumes.filter((v) => v.persistentVolumeClaim)) {
        this.claimOwner ??= await claimOwnerOf(paths.get(volume.name)!);
      }
    }
    this.owner ??= volumeOwner(pod, this.podUser(pod));
    for (const volume of volumes) {
      const path = paths.get(volume.name);
      if (!path) continue;
      if (volume.emptyDir && first) await openEmptyDir(path, this.owner);
      else if (volume.persistentVolumeClaim && first) await ownClaim(path, this.owner);
      else if (volume.secret || volume.configMap || volume.downwardAPI || volume.projected)
        await ownWrittenFiles(path, this.owner);
    }
    await openTokens(prepared.tokens, this.owner);
  }

  /** The user of the pod's first container, who owns its volumes (the machine's ids). */
  private podUser(pod: V1Pod): { uid: number; gid: number } {
    const container = pod.spec?.containers?.[0];
    const kind = imageKind(container?.image ?? "");
    try {
      const runAs = containerRunAs(pod, container!, kind ?? "busybox", "spec.containers[0]", this.claimOwner);
      return { uid: runAs.uid, gid: runAs.gid };
    } catch {
      // The container will be refused at its start with the reason; the volumes go to the pod's user.
      const own = podUser(this.uid);
      return { uid: own, gid: own };
    }
  }

  /** The pod has ended for good: sidecars are stopped, nothing restarts. */
  private end(phase: "Succeeded" | "Failed"): void {
    this.terminalPhase = phase;
    for (const slot of this.initSlots.filter((s) => s.sidecar && s.process))
      void stopTree(slot.process!, 2000);
  }

  private async startOrRestart(slot: ContainerSlot, pod: V1Pod, policy: string): Promise<void> {
    const exit = "terminated" in slot.state ? slot.state.terminated : slot.crashExit;
    if (exit) {
      if (!restartWanted(policy, exit.exitCode)) return;
      const at = Date.now();
      const backoff = slot.backoff;
      if (backoff && at - backoff.updatedAt > 2 * MAX_BACKOFF_MS) slot.backoff = undefined;
      if (slot.backoff && at < slot.backoffUntil) {
        this.waitBackoff(slot, exit);
        return;
      }
      if (slot.backoff && Date.parse(exit.finishedAt) - slot.backoff.updatedAt < slot.backoff.delayMs) {
        slot.backoffUntil = Date.parse(exit.finishedAt) + slot.backoff.delayMs;
        if (at < slot.backoffUntil) {
          this.waitBackoff(slot, exit);
          return;
        }
      }
      slot.backoff = {
        delayMs: slot.backoff ? Math.min(slot.backoff.delayMs * 2, MAX_BACKOFF_MS) : INITIAL_BACKOFF_MS,
        updatedAt: at,
      };
      slot.last = exit;
      slot.crashExit = undefined;
      slot.restartCount++;
      slot.state = { waiting: { reason: "ContainerCreating" } };
    }
    await this.start(slot, pod);
  }

  private waitBackoff(slot: ContainerSlot, exit: Terminated): void {
    const seconds = Math.round(slot.backoff!.delayMs / 1000);
    const message = `back-off ${seconds}s restarting failed container=${slot.spec.name} pod=${this.name}_${this.namespace}(${this.uid})`;
    if (!("waiting" in slot.state && slot.state.waiting.reason === "CrashLoopBackOff")) {
      this.ctx.events.warning(
        this.slotTarget(slot),
        "BackOff",
        `Back-off restarting failed container ${slot.spec.name} in pod ${this.name}_${this.namespace}(${this.uid})`,
      );
    }
    slot.last = exit;
    slot.crashExit = exit;
    slot.state = { waiting: { reason: "CrashLoopBackOff", message } };
    this.ctx.resync(this.key, Math.max(100, slot.backoffUntil - Date.now()));
  }

  private pullFailed(slot: ContainerSlot, image: string, message: string): void {
    const delayMs = slot.pullBackoff
      ? Math.min(slot.pullBackoff.delayMs * 2, MAX_BACKOFF_MS)
      : INITIAL_BACKOFF_MS;
    slot.pullBackoff = { delayMs, until: Date.now() + delayMs, message };
    this.ctx.events.warning(this.slotTarget(slot), "Failed", `Failed to pull image "${image}": ${message}`);
    this.ctx.events.warning(this.slotTarget(slot), "Failed", "Error: ErrImagePull");
    slot.state = { waiting: { reason: "ErrImagePull", message } };
    this.ctx.resync(this.key, delayMs);
  }

  private async start(slot: ContainerSlot, pod: V1Pod): Promise<void> {
    const image = slot.spec.image ?? "";
    const target = this.slotTarget(slot);
    if (slot.pullBackoff && Date.now() < slot.pullBackoff.until) {
      if ("waiting" in slot.state && slot.state.waiting.reason === "ErrImagePull") {
        this.ctx.events.normal(target, "BackOff", `Back-off pulling image "${image}"`);
        this.ctx.events.warning(target, "Failed", "Error: ImagePullBackOff");
      }
      slot.state = {
        waiting: {
          reason: "ImagePullBackOff",
          message: `Back-off pulling image "${image}": ErrImagePull: ${slot.pullBackoff.message}`,
        },
      };
      this.ctx.resync(this.key, slot.pullBackoff.until - Date.now());
      return;
    }
    const kind = imageKind(image);
    if (!kind) {
      this.ctx.events.normal(target, "Pulling", `Pulling image "${image}"`);
      this.pullFailed(slot, image, unknownImageMessage(image));
      return;
    }
    const policy = pullPolicy(image, slot.spec.imagePullPolicy);
    const present = await this.ctx.images.present(kind);
    if (policy === "Never" && !present) {
      const message = `Container image "${image}" is not present with pull policy of Never`;
      this.ctx.events.warning(target, "ErrImageNeverPull", message);
      slot.state = { waiting: { reason: "ErrImageNeverPull", message } };
      return;
    }
    if (!present || policy === "Always") {
      this.ctx.events.normal(target, "Pulling", `Pulling image "${image}"`);
      slot.state = { waiting: { reason: "ContainerCreating", message: `Pulling image "${image}"` } };
      const started = Date.now();
      this.track(
        slot,
        this.ctx.images
          .pull(kind, (detail) => {
            slot.state = {
              waiting: { reason: "ContainerCreating", message: `Pulling image "${image}": ${detail}` },
            };
            this.ctx.resync(this.key);
          })
          .then(
            (waitedMs) => {
              const seconds = ((Date.now() - started) / 1000).toFixed(3);
              this.ctx.events.normal(
                target,
                "Pulled",
                `Successfully pulled image "${image}" in ${(waitedMs / 1000).toFixed(3)}s (${seconds}s including waiting)`,
              );
              slot.pullBackoff = undefined;
              return this.spawn(slot, pod, kind);
            },
            (err) => this.pullFailed(slot, image, err instanceof Error ? err.message : String(err)),
          )
          .finally(() => this.ctx.resync(this.key)),
      );
      return;
    }
    this.ctx.events.normal(target, "Pulled", `Container image "${image}" already present on machine`);
    await this.track(slot, this.spawn(slot, pod, kind));
  }

  /**
   * Marks the slot as starting until `start` settles: no second start meanwhile (a resync during a
   * pull or a spawn would run a second process that no stop knows of), and a stop waits for it.
   */
  private track(slot: ContainerSlot, start: Promise<unknown>): Promise<void> {
    slot.starting = true;
    const task = start
      .then(() => undefined)
      .catch((err) => this.ctx.logger.error({ pod: this.key, error: describeError(err) }, "start failed"))
      .finally(() => {
        slot.starting = false;
        slot.startTask = undefined;
      });
    slot.startTask = task;
    return task;
  }

  private async spawn(slot: ContainerSlot, pod: V1Pod, kind: LocalImageKind): Promise<void> {
    if (this.terminating || this.terminalPhase) return;
    const target = this.slotTarget(slot);
    const spec = slot.spec;
    slot.imageID = this.ctx.images.imageID(kind, spec.image!);
    let prepared: PreparedContainer;
    try {
      prepared = await this.prepareContainer(slot, pod, kind);
    } catch (err) {
      if (!(err instanceof ContainerConfigError)) throw err;
      this.ctx.events.warning(target, "Failed", `Error: ${err.message}`);
      slot.state = { waiting: { reason: "CreateContainerConfigError", message: err.message } };
      this.ctx.resync(this.key, 5000);
      return;
    }
    if ("notFound" in prepared) {
      this.startFailed(slot, prepared.notFound);
      return;
    }
    const logFile = join(this.dir, "logs", spec.name, `${slot.restartCount}.log`);
    await mkdir(dirname(logFile), { recursive: true });
    const argv = launcherArgv(prepared.sandbox, await writeSandbox(prepared.sandbox));
    // A stop that began meanwhile waits for this start; past this point it stops what starts here.
    if (this.terminating || this.terminalPhase) return;
    this.ctx.events.normal(target, "Created", `Created container: ${spec.name}`);
    const fd = openSync(logFile, "a");
    let child: ChildProcess;
    try {
      // The launcher runs as root: it gets no environment of the container's (that goes in a file).
      child = spawn(argv[0]!, argv.slice(1), {
        cwd: "/",
        env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
        detached: true,
        stdio: ["ignore", fd, fd],
      });
    } finally {
      closeSync(fd);
    }
    const startedAt = now();
    const failedToStart = await new Promise<Error | undefined>((resolve) => {
      child.once("spawn", () => resolve(undefined));
      child.once("error", (err) => resolve(err));
    });
    if (failedToStart || child.pid === undefined) {
      this.startFailed(slot, `exec: "${argv[0]}": ${failedToStart?.message ?? "did not start"}`);
      return;
    }
    const identity = identify(child.pid) ?? { pid: child.pid, startTicks: -1 };
    slot.child = child;
    slot.process = identity;
    slot.containerID = `process://${child.pid}`;
    slot.state = { running: { startedAt } };
    slot.ready = false;
    slot.started = false;
    slot.killedForProbe = undefined;
    child.on("exit", (code, signal) => this.exited(slot, identity, code, signal));
    child.unref();
    this.ctx.events.normal(target, "Started", `Started container ${spec.name}`);
    this.startProbes(slot, pod);
    this.save();
  }

  /**
   * What a container runs and sees: its program (paths as the container sees them: its volumes are
   * mounted at their mount paths), environment, user, and the mounts of its root filesystem.
   */
  private async prepareContainer(
    slot: ContainerSlot,
    pod: V1Pod,
    kind: LocalImageKind,
  ): Promise<PreparedContainer> {
    const spec = slot.spec;
    const env = await containerEnv(
      pod,
      spec,
      this.ctx.sources,
      this.addresses(),
      this.ctx.allocatable,
      this.baseEnv(kind),
    );
    const program = containerProgram(
      kind,
      spec.command?.map((c) => expandReferences(c, env)),
      spec.args?.map((a) => expandReferences(a, env)),
    );
    const volumes = await containerMounts(spec, this.volumes ?? new Map(), env);
    const runAs = containerRunAs(pod, spec, kind, slot.fieldPath, this.claimOwner);
    // Inside the container every volume is at its mount path: that is the path programs are given.
    const visible = new Map([...volumes.keys()].map((path) => [path, path]));
    const mounts = this.volumeMounts(pod, spec, volumes, slot.fieldPath);
    let argv: string[];
    let programDirs: string[] = [];
    let workdir = spec.workingDir || "/";
    switch (program.program) {
      case "not-found":
        return { notFound: program.message };
      case "exit":
        argv = [program.code === 0 ? "true" : "false"];
        break;
      case "sleep":
        argv = ["sleep", program.seconds === undefined ? "infinity" : String(program.seconds)];
        break;
      case "echo":
        // A small heap: a hundred echo pods start at once on the runtimes benchmark.
        argv = [
          process.execPath,
          "--max-semi-space-size=1",
          "--v8-pool-size=0",
          ECHO_SERVER,
          "--host",
          this.ip!,
        ];
        // Its image is the checkout: the server and the `ws` package it imports.
        programDirs = [nodeInstallDir(), CHECKOUT];
        break;
      case "backup-agent":
        argv = [process.execPath, ...BACKUP_AGENT_PROGRAM, ...backupAgentArgs(program.args, visible)];
        programDirs = [nodeInstallDir(), CHECKOUT];
        break;
      case "network-gateway": {
        // The image holds wireguard-go: its build (once, cached by version) is the pull.
        const wireguard = await ensureWireguardGo();
        argv = [process.execPath, ...NETWORK_GATEWAY_PROGRAM];
        env.set("WIREGUARD_GO", wireguard.program);
        programDirs = [nodeInstallDir(), CHECKOUT, dirname(dirname(wireguard.program))];
        break;
      }
      case "shell":
        argv = ["/bin/sh", ...shellArgs(program.args, visible)];
        // The runtime agent image is the shell exec'ing this Node.js on the checkout's agent program.
        if (kind === "runtimeAgent") programDirs = [nodeInstallDir(), CHECKOUT];
        break;
      case "jupyter": {
        const install = await this.ctx.images.jupyter();
        if (!volumes.has("/home/jovyan")) {
          const home = join(this.dir, "home", "jovyan");
          await mkdir(home, { recursive: true });
          await chown(home, runAs.uid, runAs.gid);
          mounts.unshift({ kind: "dir-rw", source: home, target: "/home/jovyan" });
        }
        const root =
          volumes.has("/home/jovyan/work") && !volumes.has("/home/jovyan")
            ? "/home/jovyan/work"
            : "/home/jovyan";
        argv = [
          program.singleuser ? join(install.dir, "bin", "jupyterhub-singleuser") : install.program,
          ...jupyterServerArgs(program.args, {
            ip: this.ip!,
            defaultRoot: root,
            mounts: visible,
            allowRoot: runAs.containerUid === 0,
          }),
        ];
        env.set("HOME", "/home/jovyan");
        env.set("PATH", `${join(install.dir, "bin")}:${env.get("PATH") ?? ""}`);
        programDirs = [install.dir, ...(await pythonHome(install.dir))];
        if (!spec.workingDir) workdir = "/home/jovyan";
        break;
      }
    }
    return {
      sandbox: {
        dir: join(this.dir, "containers", spec.name),
        mounts: [
          ...programMounts(programDirs),
          ...[...(this.podFiles ?? new Map())].map(([target, source]) => ({
            kind: "file-ro" as const,
            source,
            target,
          })),
          ...mounts,
        ],
        env,
        argv,
        workdir,
        runAs,
        hostname: pod.spec?.hostname ?? this.name,
        ...(this.netns ? { networkNamespace: this.netns } : {}),
      },
    };
  }

  /** The container's volume mounts, at their mount paths, shallowest first; read-only as the kubelet mounts them. */
  private volumeMounts(
    pod: V1Pod,
    spec: V1Container,
    volumes: ReadonlyMap<string, string>,
    field: string,
  ): SandboxMount[] {
    const byName = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
    return (spec.volumeMounts ?? [])
      .map((mount, i) => {
        const target = mount.mountPath.replace(/\/+$/, "") || "/";
        checkMountTarget(target, `${field}.volumeMounts[${i}].mountPath`);
        const volume = byName.get(mount.name);
        const readOnly =
          mount.readOnly === true ||
          Boolean(volume?.secret || volume?.configMap || volume?.downwardAPI || volume?.projected);
        return volumeMount(volumes.get(target)!, target, readOnly);
      })
      .sort((a, b) => a.target.split("/").length - b.target.split("/").length);
  }

  /** The container's environment before its own: the image's, the pod's hostname, the API server's address. */
  private baseEnv(kind: string): Map<string, string> {
    const { host, port } = this.ctx.apiserver;
    const env = new Map<string, string>([
      ["PATH", process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin"],
      ["HOSTNAME", this.name],
      // As containerd sets it for an image that does not: a pod's user has no passwd entry here,
      // and without HOME, Node.js's os.homedir() (the AWS SDK's config lookup) throws.
      ["HOME", "/"],
      ["KUBERNETES_SERVICE_HOST", host],
      ["KUBERNETES_SERVICE_PORT", String(port)],
      ["KUBERNETES_SERVICE_PORT_HTTPS", String(port)],
      ["KUBERNETES_PORT", `tcp://${host}:${port}`],
    ]);
    if (process.env.LANG) env.set("LANG", process.env.LANG);
    if (kind === "jupyter") {
      env.set("NB_USER", "jovyan");
      env.set("SHELL", existsSync("/bin/bash") ? "/bin/bash" : "/bin/sh");
    }
    return env;
  }

  private startFailed(slot: ContainerSlot, message: string): void {
    const at = now();
    this.ctx.events.warning(
      this.slotTarget(slot),
      "Failed",
      `Error: failed to start container "${slot.spec.name}": ${message}`,
    );
    slot.state = {
      terminated: { exitCode: 128, reason: "StartError", message, startedAt: at, finishedAt: at },
    };
    this.save();
    this.ctx.resync(this.key);
  }

  private startProbes(slot: ContainerSlot, pod: V1Pod, readyBefore?: boolean): void {
    slot.stopProbes();
    const spec = slot.spec;
    const report = {
      failed: (kind: ProbeKind, output: string) => {
        if (slot.process && !isAlive(slot.process)) return;
        this.ctx.events.warning(this.slotTarget(slot), "Unhealthy", `${kind} probe failed: ${output}`);
      },
      changed: (kind: ProbeKind, success: boolean) => this.probeChanged(slot, pod, kind, success),
    };
    const ip = this.probeAddress;
    if (spec.startupProbe) {
      slot.started = readyBefore !== undefined;
      if (!slot.started) {
        const startup = new ProbeWorker("Startup", spec.startupProbe, ip, spec, report);
        slot.probes.push(startup);
        startup.start();
        if (!spec.readinessProbe) slot.ready = false;
        return;
      }
    } else slot.started = true;
    this.startRunningProbes(slot, report, readyBefore);
  }

  private startRunningProbes(
    slot: ContainerSlot,
    report: ConstructorParameters<typeof ProbeWorker>[4],
    readyBefore?: boolean,
  ): void {
    const spec = slot.spec;
    const ip = this.probeAddress;
    if (spec.readinessProbe) {
      slot.ready = readyBefore ?? false;
      const readiness = new ProbeWorker("Readiness", spec.readinessProbe, ip, spec, report, slot.ready);
      slot.probes.push(readiness);
      readiness.start();
    } else slot.ready = true;
    if (spec.livenessProbe) {
      const liveness = new ProbeWorker("Liveness", spec.livenessProbe, ip, spec, report);
      slot.probes.push(liveness);
      liveness.start();
    }
    this.save();
    this.ctx.resync(this.key);
  }

  private probeChanged(slot: ContainerSlot, pod: V1Pod, kind: ProbeKind, success: boolean): void {
    if (!slot.running) return;
    if (kind === "Readiness") {
      slot.ready = success;
      this.save();
      this.ctx.resync(this.key);
      return;
    }
    if (kind === "Startup" && success) {
      slot.started = true;
      for (const probe of slot.probes) probe.stop();
      slot.probes = [];
      this.startRunningProbes(slot, {
        failed: (k, output) =>
          this.ctx.events.warning(this.slotTarget(slot), "Unhealthy", `${k} probe failed: ${output}`),
        changed: (k, s) => this.probeChanged(slot, pod, k, s),
      });
      return;
    }
    if (success || !slot.process) return;
    // A failed liveness or startup probe: the container is killed and restarted by its policy.
    slot.killedForProbe = kind;
    const verb = kind === "Liveness" ? "liveness" : "startup";
    this.ctx.events.normal(
      this.slotTarget(slot),
      "Killing",
      `Container ${slot.spec.name} failed ${verb} probe, will be restarted`,
    );
    const grace =
      slot.spec[kind === "Liveness" ? "livenessProbe" : "startupProbe"]?.terminationGracePeriodSeconds ??
      pod.spec?.terminationGracePeriodSeconds ??
      30;
    void stopTree(slot.process, grace * 1000);
  }

  private exited(
    slot: ContainerSlot,
    identity: ProcessIdentity,
    code: number | null,
    signal: NodeJS.Signals | null,
    reason?: string,
  ): void {
    if (slot.process !== identity) return;
    killGroup(identity.pid);
    slot.stopProbes();
    const running = "running" in slot.state ? slot.state.running : { startedAt: now() };
    // The container's init exits as a shell does: 128 + n when its program was killed by signal n.
    const byInit = code !== null && code > 128 && code < 160 ? code - 128 : undefined;
    const signalNumber = signal ? signalNumbers[signal] : byInit;
    const exitCode = code ?? (signal ? 128 + (signalNumbers[signal] ?? 0) : 137);
    slot.state = {
      terminated: {
        exitCode,
        ...(signalNumber ? { signal: signalNumber } : {}),
        reason: reason ?? (exitCode === 0 ? "Completed" : "Error"),
        ...(reason === "ContainerStatusUnknown"
          ? { message: "The container's process ended while the process node's agent was not its parent" }
          : {}),
        startedAt: running.startedAt,
        finishedAt: now(),
        ...(slot.containerID ? { containerID: slot.containerID } : {}),
      },
    };
    if (exitCode === 0 && slot.init && !slot.sidecar) slot.completed = true;
    slot.process = undefined;
    slot.child = undefined;
    slot.ready = false;
    slot.notifyExit();
    this.save();
    this.ctx.resync(this.key);
  }

  /**
   * Graceful deletion as the kubelet does it: app containers first, then sidecars, each sent
   * SIGTERM and killed once the grace period has passed ("Killing" events).
   */
  terminate(graceSeconds: number): Promise<void> {
    this.terminating ??= (async () => {
      // A start in flight finishes first (it sees the stop and starts nothing, or is stopped below).
      await Promise.all([...this.slots.values()].map((s) => s.startTask));
      const stopAll = async (slots: ContainerSlot[]) => {
        await Promise.all(
          slots
            .filter((s) => s.process)
            .map(async (slot) => {
              this.ctx.events.normal(
                this.slotTarget(slot),
                "Killing",
                `Stopping container ${slot.spec.name}`,
              );
              const proc = slot.process!;
              const killed = await stopTree(proc, graceSeconds * 1000);
              if (slot.child) await slot.waitExit(2000);
              // An adopted process is no child of ours: no exit status, only that it ended.
              if (slot.process === proc) this.exited(slot, proc, killed ? 137 : 143, null);
            }),
        );
      };
      await stopAll([...this.appSlots, ...this.initSlots.filter((s) => !s.sidecar)]);
      await stopAll(this.initSlots.filter((s) => s.sidecar).reverse());
      for (const slot of this.slots.values()) slot.stopProbes();
      this.terminated = true;
    })();
    return this.terminating;
  }

  /** The phase a deleted pod ends in, once its containers are stopped. */
  finalPhase(): "Succeeded" | "Failed" {
    const apps = this.appSlots;
    return apps.every((s) => "terminated" in s.state && s.state.terminated.exitCode === 0)
      ? "Succeeded"
      : "Failed";
  }

  /**
   * A container's log file: the current run's, or with `previous` the one before it. Undefined
   * when the container is unknown or has no such run.
   */
  logFile(container: string, previous: boolean): { file: string; running: boolean } | undefined {
    const slot = this.slots.get(container);
    if (!slot) return undefined;
    const run = previous ? slot.restartCount - 1 : slot.restartCount;
    if (run < 0) return undefined;
    return { file: join(this.dir, "logs", container, `${run}.log`), running: !previous && slot.running };
  }

  /** Whether this runtime is for that pod (not an older pod of the same name). */
  matches(pod: V1Pod): boolean {
    return pod.metadata?.uid === this.uid;
  }
}

function restartWanted(policy: string, exitCode: number): boolean {
  return policy === "Always" || (policy === "OnFailure" && exitCode !== 0);
}

const signalNumbers: Partial<Record<NodeJS.Signals, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGABRT: 6,
  SIGKILL: 9,
  SIGSEGV: 11,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
};
