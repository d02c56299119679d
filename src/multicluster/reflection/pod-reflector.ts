/**
 * The kubelet of the virtual nodes: a local pod bound to one runs as a pod in the provider's
 * replica namespace, its status comes back, and deletion goes both ways.
 */

import { PatchStrategy, type V1Node, type V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyStatus,
  type ClusterClient,
  Controller,
  describeError,
  Informer,
  isAlreadyExists,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  statusCode,
} from "../../kube/index.js";
import type { NamespaceMap } from "../api/offloading.js";
import { ORIGIN_NAMESPACE_LABEL } from "../offloading/labels.js";
import { acceptedReplica, type NamespaceReplica } from "../offloading/replicas.js";
import type { PeerClient, PeerClients } from "../peer-clients.js";
import { nodeReadyCondition, PEERING_LABEL } from "../virtual-node.js";
import { InformerPool } from "./informer-pool.js";
import { ORIGIN_UID_ANNOTATION, originSelector } from "./labels.js";
import {
  type OwnedPodStatus,
  pendingStatus,
  reflectedStatus,
  remotePod,
  remotePodDrift,
  statusShows,
  unreachableStatus,
  wasReflected,
} from "./pod-translation.js";
import { acceptedReplicasOfPeer, REMOTE_RATE_LIMITER } from "./replicas.js";

export interface PodReflectorOptions {
  client: ClusterClient;
  logger: Logger;
  originClusterId: string;
  peerClients: PeerClients;
  /** NamespaceMaps (tenantry's namespace), shared. */
  maps: Informer<NamespaceMap>;
  /** Virtual nodes, shared. */
  nodes: Informer<V1Node>;
  workers?: number;
}

export class PodReflector {
  private readonly cluster: string;
  private readonly logger: Logger;
  /** Reflects one local pod (key cluster/namespace/name). */
  private readonly pods: Controller;
  /** Starts and stops the remote pod informers of one peer (key cluster//peering). */
  private readonly replicas: Controller;
  /** Local pods bound to each virtual node (field selector on spec.nodeName), by node name. */
  private readonly localPods: InformerPool<V1Pod>;
  /** Reflected pods in each replica namespace (label selector on the origin), by peering/remote namespace. */
  private readonly remotePods: InformerPool<V1Pod>;
  private readonly remoteReplicas = new Map<string, NamespaceReplica>();
  private readonly unsubscribe: (() => void)[] = [];

  constructor(private readonly options: PodReflectorOptions) {
    this.cluster = options.client.name;
    this.logger = options.logger.child({ component: "pod-reflection" });
    this.pods = new Controller({
      name: "reflect-pods",
      rateLimiter: REMOTE_RATE_LIMITER(),
      workers: options.workers ?? 8,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcilePod(ctx),
    });
    this.replicas = new Controller({
      name: "reflect-pod-watches",
      workers: 2,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcileWatches(ctx.ref.name),
    });
    this.localPods = new InformerPool<V1Pod>((pod) =>
      this.pods.enqueue(this.podKey(pod.metadata!.namespace!, pod.metadata!.name!)),
    );
    this.remotePods = new InformerPool<V1Pod>((pod) => {
      const namespace = pod.metadata?.labels?.[ORIGIN_NAMESPACE_LABEL];
      if (namespace) this.pods.enqueue(this.podKey(namespace, pod.metadata!.name!));
    });
    const peeringKey = (peering: string | undefined) =>
      peering ? [objectKey(this.cluster, undefined, peering)] : [];
    this.replicas.watch(options.maps, (map) =>
      peeringKey(map.metadata?.labels?.[PEERING_LABEL] ?? map.metadata?.name),
    );
    this.replicas.watch(options.nodes, (node) => peeringKey(node.metadata?.labels?.[PEERING_LABEL]));
    this.unsubscribe.push(
      options.nodes.addHandler({
        onAdd: (node) => this.watchNode(node),
        onUpdate: (old, node) => {
          this.watchNode(node);
          // A node turning Ready or not changes what its pods should say.
          if (nodeReadyCondition(old)?.status !== nodeReadyCondition(node)?.status) this.enqueuePodsOf(node);
        },
        onDelete: (node) => void this.localPods.remove(node.metadata!.name!),
      }),
    );
  }

  async start(): Promise<void> {
    await Promise.all([this.replicas.start(), this.pods.start()]);
  }

  async stop(): Promise<void> {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    await Promise.all([this.pods.stop(), this.replicas.stop()]);
    await Promise.all([this.localPods.clear(), this.remotePods.clear()]);
  }

  private podKey(namespace: string, name: string): string {
    return objectKey(this.cluster, namespace, name);
  }

  private watchNode(node: V1Node): void {
    const name = node.metadata!.name!;
    this.localPods.ensure(name, this.options.client, () =>
      Informer.forResource<V1Pod>(
        this.options.client,
        { apiVersion: "v1", kind: "Pod", fieldSelector: `spec.nodeName=${name}` },
        { logger: this.logger },
      ),
    );
  }

  private enqueuePodsOf(node: V1Node): void {
    for (const pod of this.localPods.get(node.metadata!.name!)?.list() ?? []) {
      this.pods.enqueue(this.podKey(pod.metadata!.namespace!, pod.metadata!.name!));
    }
  }

  /** One remote pod informer per accepted replica of `peering`; none for replicas gone. */
  private async reconcileWatches(peering: string): Promise<ReconcileResult> {
    const wanted = acceptedReplicasOfPeer(this.options.maps.list(), peering);
    const keys = new Set(wanted.map((r) => `${r.peering}/${r.remoteNamespace}`));
    for (const key of this.remotePods.keys()) {
      if (key.startsWith(`${peering}/`) && !keys.has(key)) {
        this.remoteReplicas.delete(key);
        await this.remotePods.remove(key);
      }
    }
    if (!wanted.length) return reconcileDone();
    const peer = this.options.peerClients.clientFor(peering);
    for (const replica of wanted) {
      const key = `${replica.peering}/${replica.remoteNamespace}`;
      this.remoteReplicas.set(key, replica);
      const started = this.remotePods.ensure(key, peer.client, () =>
        Informer.forResource<V1Pod>(
          peer.client,
          {
            apiVersion: "v1",
            kind: "Pod",
            namespace: replica.remoteNamespace,
            labelSelector: originSelector(this.options.originClusterId, replica.localNamespace),
          },
          { logger: this.logger },
        ),
      );
      // Pods bound before the replica was accepted wait for it.
      if (started) {
        for (const pod of this.localPodsOf(peering, replica.localNamespace)) {
          this.pods.enqueue(this.podKey(replica.localNamespace, pod.metadata!.name!));
        }
      }
    }
    return reconcileDone();
  }

  private localPodsOf(peering: string, namespace: string): V1Pod[] {
    return this.options.nodes
      .list()
      .filter((node) => node.metadata?.labels?.[PEERING_LABEL] === peering)
      .flatMap((node) => this.localPods.get(node.metadata!.name!)?.list() ?? [])
      .filter((pod) => pod.metadata?.namespace === namespace);
  }

  private localPod(namespace: string, name: string): V1Pod | undefined {
    for (const informer of this.localPods.informers()) {
      const pod = informer.get(namespace, name);
      if (pod) return pod;
    }
    return undefined;
  }

  private async reconcilePod(ctx: ReconcileContext): Promise<ReconcileResult> {
    const namespace = ctx.ref.namespace!;
    const name = ctx.ref.name;
    const local = this.localPod(namespace, name);
    const node = local?.spec?.nodeName ? this.options.nodes.get(undefined, local.spec.nodeName) : undefined;
    const peering = node?.metadata?.labels?.[PEERING_LABEL];
    if (!local || !node || !peering) {
      await this.deleteOrphans(namespace, name, local?.metadata?.uid);
      return reconcileDone();
    }
    const replica = acceptedReplica(this.options.maps.list(), namespace, peering);
    if (!replica) {
      if (local.metadata?.deletionTimestamp) {
        await this.deleteLocal(local, "its namespace has no replica");
      } else if (!wasReflected(local)) {
        await this.writeStatus(
          local,
          pendingStatus(
            local,
            "RemoteNamespaceNotReady",
            `namespace ${namespace} has no accepted replica in cluster ${peering} yet`,
            new Date(),
          ),
        );
      }
      return reconcileDone();
    }
    const ready = nodeReadyCondition(node);
    if (ready?.status !== "True" && wasReflected(local) && !local.metadata?.deletionTimestamp) {
      // The provider does not answer (the node says why): what it last said may no longer hold.
      const why = ready?.message ? `: ${ready.message}` : "";
      await this.writeStatus(
        local,
        unreachableStatus(local, `virtual node ${node.metadata!.name} is not ready${why}`, new Date()),
      );
      return reconcileDone();
    }
    const informer = this.remotePods.get(`${peering}/${replica.remoteNamespace}`);
    if (!informer) {
      this.replicas.enqueue(objectKey(this.cluster, undefined, peering));
      throw new Error(`no watch on namespace ${replica.remoteNamespace} of cluster ${peering} yet`);
    }
    if (!informer.hasSynced()) return requeueAfter(250);
    const peer = this.options.peerClients.clientFor(peering);
    const remote = informer.get(replica.remoteNamespace, name);
    const sameInstance = remote?.metadata?.annotations?.[ORIGIN_UID_ANNOTATION] === local.metadata?.uid;

    if (local.metadata?.deletionTimestamp) {
      // Nobody else finishes the deletion of a pod on a virtual node: the remote pod goes, then the local one.
      if (remote && !remote.metadata?.deletionTimestamp) {
        await this.deleteRemote(peer, remote, local.metadata.deletionGracePeriodSeconds);
      }
      await this.deleteLocal(local, "deleted");
      return reconcileDone();
    }
    if (remote && !sameInstance) {
      // Left by an earlier local pod of the same name (a StatefulSet's): it goes before the new one starts.
      if (!remote.metadata?.deletionTimestamp) await this.deleteRemote(peer, remote, undefined);
      return requeueAfter(1000);
    }
    if (remote) {
      if (remote.metadata?.deletionTimestamp) {
        await this.deleteLocal(local, `its pod in cluster ${peering} is being deleted`);
        return reconcileDone();
      }
      const desired = this.remotePodFor(local, node, replica, true);
      const drift = remotePodDrift(remote, desired);
      if (drift) {
        await peer.client.objects.patchRaw(
          {
            ...drift,
            apiVersion: "v1",
            kind: "Pod",
            metadata: { ...drift.metadata, name, namespace: replica.remoteNamespace },
          },
          PatchStrategy.StrategicMergePatch,
        );
      }
      await this.writeStatus(local, reflectedStatus(remote, local, replica, new Date()));
      return reconcileDone();
    }
    if (wasReflected(local)) {
      // Deleted in the provider (the cache only lags behind deletions, never behind our creations).
      await this.deleteLocal(local, `its pod in cluster ${peering} is gone`);
      return reconcileDone();
    }
    const phase = local.status?.phase;
    if (phase === "Succeeded" || phase === "Failed") return reconcileDone();
    return this.createRemote(local, node, replica, peer, ctx);
  }

  private remotePodFor(
    local: V1Pod,
    node: V1Node,
    replica: NamespaceReplica,
    serviceAccountExists: boolean,
  ): V1Pod {
    return remotePod(local, {
      node,
      remoteNamespace: replica.remoteNamespace,
      originClusterId: this.options.originClusterId,
      serviceAccountExists,
    });
  }

  private async createRemote(
    local: V1Pod,
    node: V1Node,
    replica: NamespaceReplica,
    peer: PeerClient,
    ctx: ReconcileContext,
  ): Promise<ReconcileResult> {
    const name = local.metadata!.name!;
    const where = `cluster ${replica.peering}, namespace ${replica.remoteNamespace}`;
    try {
      const account = local.spec?.serviceAccountName;
      const accountExists =
        !account ||
        account === "default" ||
        (await this.serviceAccountExists(peer, replica.remoteNamespace, account));
      const startedAt = Date.now();
      await peer.client.core.createNamespacedPod({
        namespace: replica.remoteNamespace,
        body: this.remotePodFor(local, node, replica, accountExists),
      });
      this.logger.debug(
        {
          peering: replica.peering,
          pod: `${replica.localNamespace}/${name}`,
          remoteNamespace: replica.remoteNamespace,
          createMs: Date.now() - startedAt,
        },
        "pod reflected",
      );
      return reconcileDone();
    } catch (err) {
      if (isAlreadyExists(err) && (await this.isOurs(peer, replica.remoteNamespace, local))) {
        return requeueAfter(500); // created a moment ago, not in the cache yet
      }
      const code = statusCode(err);
      const refused = code !== undefined && code >= 400 && code < 500 && code !== 429;
      const message = isAlreadyExists(err)
        ? `${where}: a pod named ${name} exists there and does not stand for this one`
        : `${where} ${refused ? "refused the pod" : "could not be reached"}: ${describeError(err)}`;
      this.logger.warn(
        {
          peering: replica.peering,
          pod: `${replica.localNamespace}/${name}`,
          retries: ctx.retries,
          error: message,
        },
        "pod not reflected",
      );
      await this.writeStatus(
        local,
        pendingStatus(local, refused ? "ProviderRefused" : "ProviderUnavailable", message, new Date()),
      );
      throw new Error(message);
    }
  }

  private async serviceAccountExists(peer: PeerClient, namespace: string, name: string): Promise<boolean> {
    try {
      await peer.client.core.readNamespacedServiceAccount({ name, namespace });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  private async isOurs(peer: PeerClient, namespace: string, local: V1Pod): Promise<boolean> {
    try {
      const remote = await peer.client.core.readNamespacedPod({ name: local.metadata!.name!, namespace });
      return remote.metadata?.annotations?.[ORIGIN_UID_ANNOTATION] === local.metadata?.uid;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /** Status writes only when something changed: a pod's status is written by nobody else. */
  private async writeStatus(local: V1Pod, status: OwnedPodStatus): Promise<void> {
    if (statusShows(local, status)) return;
    await applyStatus(this.options.client, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: local.metadata!.name!, namespace: local.metadata!.namespace! },
      status,
    });
  }

  private async deleteLocal(local: V1Pod, why: string): Promise<void> {
    const { name, namespace, uid } = local.metadata!;
    try {
      await this.options.client.core.deleteNamespacedPod({
        name: name!,
        namespace: namespace!,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid: uid! } },
      });
      this.logger.debug(
        { pod: `${namespace}/${name}`, node: local.spec?.nodeName, why },
        "local pod deleted",
      );
    } catch (err) {
      // Gone already, or replaced by a pod of the same name (the precondition failed).
      if (!isNotFound(err) && statusCode(err) !== 409) throw err;
    }
  }

  private async deleteRemote(
    peer: PeerClient,
    remote: V1Pod,
    gracePeriodSeconds: number | undefined,
  ): Promise<void> {
    const { name, namespace, uid } = remote.metadata!;
    try {
      await peer.client.core.deleteNamespacedPod({
        name: name!,
        namespace: namespace!,
        ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
        body: { preconditions: { uid: uid! } },
      });
      this.logger.debug({ peering: peer.peering, pod: `${namespace}/${name}` }, "remote pod deleted");
    } catch (err) {
      if (isNotFound(err) || statusCode(err) === 409) return;
      this.logger.warn(
        { peering: peer.peering, pod: `${namespace}/${name}`, error: describeError(err) },
        "remote pod not deleted",
      );
      throw err;
    }
  }

  /** Remote pods of a local pod that no longer exists (or of an earlier pod of its name). */
  private async deleteOrphans(namespace: string, name: string, keepUid: string | undefined): Promise<void> {
    for (const key of this.remotePods.keys()) {
      const replica = this.remoteReplicas.get(key);
      if (replica?.localNamespace !== namespace) continue;
      const remote = this.remotePods.get(key)?.get(replica.remoteNamespace, name);
      if (!remote || remote.metadata?.deletionTimestamp) continue;
      if (keepUid && remote.metadata?.annotations?.[ORIGIN_UID_ANNOTATION] === keepUid) continue;
      await this.deleteRemote(this.options.peerClients.clientFor(replica.peering), remote, undefined);
    }
  }
}
