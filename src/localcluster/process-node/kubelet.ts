import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PatchStrategy, type V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  type ClusterClient,
  Controller,
  describeError,
  Informer,
  ignoreNotFound,
  isNotFound,
  objectKey,
  type ReconcileResult,
  reconcileDone,
} from "../../kube/index.js";
import type { EventRecorder } from "./events.js";
import { stopTree } from "./host-processes.js";
import { ImagePuller } from "./image-puller.js";
import { type NodeNetwork, PodAddresses } from "./network/index.js";
import { PROCESS_NODE_MANAGER } from "./node.js";
import { BACKUP_AGENT, ECHO_SERVER, type NodeContext, PodRuntime } from "./pod-runtime.js";
import { podStatus } from "./pod-status.js";
import { type PodRecord, readRecords, removePodDir } from "./records.js";
import type { VolumeSources } from "./volumes.js";

export interface KubeletOptions {
  client: ClusterClient;
  clusterDir: string;
  nodeName: string;
  podCidr: string;
  network: NodeNetwork;
  hostIP: string;
  allocatable: Record<string, string>;
  apiserver: { host: string; port: number };
  events: EventRecorder;
  logger: Logger;
}

/** How long a pod removed from the API outright (deleted with grace 0) gets to stop. */
const FORCED_STOP_MS = 1000;

/**
 * The kubelet of the process node: pods bound to it (an informer with a field selector on
 * spec.nodeName) run as local processes, one per container, and their status is written back with
 * server-side apply. After a restart it adopts the processes of pods that still exist and kills
 * those of pods that are gone.
 */
export class ProcessNodeKubelet {
  readonly pods: Informer<V1Pod>;
  private readonly controller: Controller;
  private readonly runtimes = new Map<string, PodRuntime>();
  private addresses: PodAddresses;
  private readonly context: NodeContext;
  private records = new Map<string, PodRecord>();

  constructor(private readonly options: KubeletOptions) {
    const { client, logger } = options;
    this.pods = Informer.forResource<V1Pod>(
      client,
      { apiVersion: "v1", kind: "Pod", fieldSelector: `spec.nodeName=${options.nodeName}` },
      { logger },
    );
    this.addresses = new PodAddresses(options.podCidr);
    this.controller = new Controller({
      name: "process-node-pods",
      workers: 8,
      logger,
      reconcile: (key, ctx) => this.sync(key, ctx.ref.namespace!, ctx.ref.name),
    });
    this.controller.watch(this.pods);
    this.context = {
      clusterDir: options.clusterDir,
      nodeName: options.nodeName,
      hostIP: options.hostIP,
      allocatable: options.allocatable,
      apiserver: options.apiserver,
      sources: volumeSources(client),
      events: options.events,
      images: new ImagePuller({ echoServer: ECHO_SERVER, backupAgent: BACKUP_AGENT }),
      network: options.network,
      logger,
      resync: (key, ms) => (ms ? this.controller.enqueueAfter(key, ms) : this.controller.enqueue(key)),
    };
  }

  /** The runtime of a pod, for the kubelet API (container logs). */
  runtime(namespace: string, name: string): PodRuntime | undefined {
    return this.runtimes.get(objectKey(this.options.client.name, namespace, name));
  }

  private get cursorFile(): string {
    return join(this.options.clusterDir, "process-node", "next-address");
  }

  /** The next pod address; where the round-robin stands is kept across restarts of the agent. */
  private allocate(): string {
    const ip = this.addresses.allocate();
    writeFile(this.cursorFile, `${this.addresses.cursor()}\n`).catch(() => {});
    return ip;
  }

  async start(): Promise<void> {
    const cursor = Number((await readFile(this.cursorFile, "utf8").catch(() => "0")).trim());
    this.addresses = new PodAddresses(this.options.podCidr, Number.isInteger(cursor) ? cursor : 0);
    for (const record of await readRecords(this.options.clusterDir)) this.records.set(record.uid, record);
    for (const record of this.records.values()) this.addresses.reserve(record.ip);
    this.pods.start();
    await this.pods.waitForSync({ timeoutMs: 120_000 });
    for (const pod of this.pods.list()) if (pod.status?.podIP) this.addresses.reserve(pod.status.podIP);
    await this.killOrphans();
    await this.controller.start();
  }

  /** Processes of pods that no longer exist (deleted while no kubelet ran) are stopped and their folders removed. */
  private async killOrphans(): Promise<void> {
    const live = new Set(this.pods.list().map((p) => p.metadata?.uid));
    for (const record of [...this.records.values()]) {
      if (live.has(record.uid)) continue;
      const processes = Object.values(record.containers).flatMap((c) => (c.process ? [c.process] : []));
      if (processes.length)
        this.options.logger.info(
          { pod: `${record.namespace}/${record.name}`, uid: record.uid },
          "stopping an orphan pod's processes",
        );
      await Promise.all(processes.map((p) => stopTree(p, 2000)));
      await this.options.network.detach(record.uid, record.ip);
      await removePodDir(this.options.clusterDir, record.uid);
      this.addresses.release(record.ip);
      this.records.delete(record.uid);
    }
  }

  /**
   * Stops syncing. With `stopPods` (the cluster is going down) every container is stopped too and
   * its exit recorded; without (a crash, `kill -9`) the processes keep running for the next kubelet.
   */
  async stop(options: { stopPods: boolean }): Promise<void> {
    await this.controller.stop({ timeoutMs: 0 });
    await this.pods.stop();
    if (!options.stopPods) return;
    await Promise.all([...this.runtimes.values()].map((rt) => rt.terminate(2)));
    await Promise.all([...this.runtimes.values()].map((rt) => rt.save()));
  }

  private async sync(key: string, namespace: string, name: string): Promise<ReconcileResult> {
    const pod = this.pods.get(namespace, name);
    let runtime = this.runtimes.get(key);
    if (runtime && (!pod || !runtime.matches(pod))) {
      // Gone from the API (or replaced by a pod of the same name): stop what ran for it.
      await runtime.terminate(FORCED_STOP_MS / 1000);
      await this.cleanUp(runtime);
      runtime = undefined;
    }
    if (!pod) return reconcileDone();
    if (!runtime) {
      const record = this.records.get(pod.metadata!.uid!);
      const terminal = pod.status?.phase === "Succeeded" || pod.status?.phase === "Failed";
      if (terminal && !record && !pod.metadata?.deletionTimestamp) return reconcileDone();
      runtime = new PodRuntime(this.context, key, pod);
      runtime.adopt(record, pod);
      this.records.delete(pod.metadata!.uid!);
      this.runtimes.set(key, runtime);
      const ours = (ip: string) => ip === this.options.hostIP || this.addresses.contains(ip);
      if (runtime.ip && !ours(runtime.ip)) {
        // The node got another pod network (see NodeHeartbeat.register): this pod's address is not ours.
        this.options.events.warning(
          { kind: "Pod", namespace, name, uid: runtime.uid },
          "NodeNetworkChanged",
          `the process node's pod network is now ${this.options.podCidr}; the pod is deleted`,
        );
        await runtime.terminate(FORCED_STOP_MS / 1000);
        await this.cleanUp(runtime);
        await this.deletePod(pod);
        return reconcileDone();
      }
    }
    if (pod.metadata?.deletionTimestamp) return this.syncDeletion(pod, runtime);
    await runtime.advance(pod, () => this.allocate());
    if (runtime.terminalPhase && runtime.ip) this.addresses.release(runtime.ip);
    await this.writeStatus(pod, runtime);
    return reconcileDone();
  }

  /** Graceful deletion: stop the containers within the grace period, write the final status, delete with grace 0. */
  private async syncDeletion(pod: V1Pod, runtime: PodRuntime): Promise<ReconcileResult> {
    if (!runtime.terminating) {
      const grace = pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
      void runtime.terminate(grace).then(() => this.controller.enqueue(runtime.key));
    }
    if (!runtime.terminated) return reconcileDone();
    runtime.terminalPhase = runtime.finalPhase();
    await this.writeStatus(pod, runtime).catch((err) => {
      if (!isNotFound(err)) throw err;
    });
    // As a kubelet does, the API object goes last: once it is gone, nothing of the pod is left here
    // (its processes, network namespace, address and folder). A failed delete is retried by the next
    // sync, which finds nothing left to stop.
    await this.cleanUp(runtime);
    await this.deletePod(pod);
    return reconcileDone();
  }

  private async deletePod(pod: V1Pod): Promise<void> {
    try {
      await this.options.client.core.deleteNamespacedPod({
        name: pod.metadata!.name!,
        namespace: pod.metadata!.namespace!,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata!.uid! } },
      });
    } catch (err) {
      if (!isNotFound(err) && (err as { code?: number }).code !== 409) throw err;
    }
  }

  private async cleanUp(runtime: PodRuntime): Promise<void> {
    await runtime.close();
    await this.options.network.detach(runtime.uid, runtime.ip);
    this.runtimes.delete(runtime.key);
    if (runtime.ip) this.addresses.release(runtime.ip);
    this.options.events.forget(runtime.uid);
    await removePodDir(this.options.clusterDir, runtime.uid);
  }

  private async writeStatus(pod: V1Pod, runtime: PodRuntime): Promise<void> {
    const status = podStatus(
      pod,
      runtime.view(),
      new Date(),
      runtime.lastConditions ?? pod.status?.conditions,
    );
    const text = JSON.stringify(status);
    if (text === runtime.lastWritten) return;
    try {
      await this.options.client.objects.patchSubresource(
        {
          apiVersion: "v1",
          kind: "Pod",
          metadata: { name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, uid: runtime.uid },
          status,
        } as unknown as V1Pod,
        "status",
        PatchStrategy.ServerSideApply,
        { fieldManager: PROCESS_NODE_MANAGER, force: true },
      );
    } catch (err) {
      if (isNotFound(err)) return;
      this.options.logger.warn({ pod: runtime.key, error: describeError(err) }, "status write failed");
      throw err;
    }
    runtime.lastWritten = text;
    runtime.lastConditions = status.conditions;
  }
}

function volumeSources(client: ClusterClient): VolumeSources {
  const orUndefined = async <T>(read: () => Promise<T>): Promise<T | undefined> => {
    return ignoreNotFound(read());
  };
  return {
    configMap: (namespace, name) =>
      orUndefined(() => client.core.readNamespacedConfigMap({ namespace, name })),
    secret: (namespace, name) => orUndefined(() => client.core.readNamespacedSecret({ namespace, name })),
    claim: (namespace, name) =>
      orUndefined(() => client.core.readNamespacedPersistentVolumeClaim({ namespace, name })),
    volume: (name) => orUndefined(() => client.core.readPersistentVolume({ name })),
    token: async (pod, audience, expirationSeconds) => {
      const answer = await client.core.createNamespacedServiceAccountToken({
        namespace: pod.metadata!.namespace!,
        name: pod.spec?.serviceAccountName ?? "default",
        body: {
          spec: {
            ...(audience ? { audiences: [audience] } : { audiences: [] }),
            expirationSeconds,
            boundObjectRef: {
              apiVersion: "v1",
              kind: "Pod",
              name: pod.metadata!.name!,
              uid: pod.metadata!.uid!,
            },
          },
        },
      });
      // client-node 2.x types the token as optional; the API server always answers one.
      const token = answer.status?.token;
      if (!token) throw new Error(`the TokenRequest for pod ${pod.metadata!.name} came back without a token`);
      return {
        token,
        expiresAt: new Date(answer.status!.expirationTimestamp ?? Date.now() + expirationSeconds * 1000),
      };
    },
  };
}
