import type { KubernetesObject, V1Node, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { formatQuantity, parseQuantity } from "../common/index.js";
import {
  applyObject,
  applyStatus,
  type ClusterClient,
  type Condition,
  type ConditionUpdate,
  Controller,
  describeError,
  type Informer,
  isAlreadyExists,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  setCondition,
  statusCode,
} from "../kube/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { Peering, PeeringStatus } from "./api/peering.js";
import type { MulticlusterInformers } from "./informers.js";
import {
  checkRemoteIdentity,
  type IdentityCheck,
  KUBECONFIG_KEY,
  loadPeerCredentials,
  type PeerCredentials,
  type ProbeResult,
  probeReadyz,
} from "./remote.js";
import {
  addTaintPatch,
  hasVirtualNodeTaint,
  type NodeReadiness,
  newVirtualNode,
  nodeCapacity,
  nodeLease,
  nodeStatusStale,
  PEERING_LABEL,
  virtualNodeMetadata,
  virtualNodeName,
  virtualNodeStatus,
} from "./virtual-node.js";

export interface PeeringControllerOptions {
  client: ClusterClient;
  /** Peerings, virtual nodes and credentials Secrets, shared with the other multi-cluster controllers. */
  informers: Pick<MulticlusterInformers, "peerings" | "virtualNodes" | "peerSecrets">;
  /** tenantry's namespace here (the credentials Secrets) and in the providers (their identity). */
  namespace: string;
  logger: Logger;
  /** How often each provider's /readyz is probed and the virtual node's Lease renewed. Default 5 s. */
  probeIntervalMs?: number;
  /** How long a probe may take. Default 3 s. */
  probeTimeoutMs?: number;
  /** Status heartbeats while nothing changes (node Ready condition, Peering lastHeartbeat). Default 30 s. */
  statusHeartbeatMs?: number;
  /** How often the provider's identity is read again while it answers. Default 60 s. */
  identityRecheckMs?: number;
  /**
   * The cluster registry, when this cluster keeps one: a provider registered there (found by its
   * cluster id) gets the registry's labels on its virtual node instead of those exchanged at
   * peering, so offloading selects clusters by the same labels as logical clouds do.
   */
  clusterLabels?: ClusterLabelSource;
}

/** Labels of clusters by their tenantry identity, and the informer whose changes may change them. */
export interface ClusterLabelSource {
  informer: Informer<KubernetesObject>;
  /** The cluster id an informer object stands for. */
  clusterIdOf(obj: KubernetesObject): string | undefined;
  labelsOf(clusterId: string): Record<string, string> | undefined;
}

/** What the controller remembers of one peering between reconciles (this replica only). */
interface PeerState {
  credentialsVersion?: string;
  credentials?: PeerCredentials;
  credentialsError?: string;
  lastProbeAt?: number;
  probe?: ProbeResult;
  lastHeartbeat?: Date;
  identity?: IdentityCheck;
  identityAt?: number;
  lastLeaseAt?: number;
}

/**
 * One virtual node per Peering: created tainted, labelled with the provider's labels, showing the
 * capacity the provider grants, its Ready condition following the provider's health (probed with
 * the peer's own credentials), its Lease renewed so the node lifecycle controller sees it alive.
 * Deleting the Peering deletes the node (owner reference; also at once here).
 */
export class PeeringController {
  readonly peerings: Informer<Peering>;
  private readonly nodes: Informer<V1Node>;
  private readonly secrets: Informer<V1Secret>;
  private readonly controller: Controller;
  private readonly states = new Map<string, PeerState>();
  private readonly cluster: string;
  private readonly probeIntervalMs: number;
  private readonly probeTimeoutMs: number;
  private readonly heartbeatMs: number;
  private readonly identityRecheckMs: number;

  constructor(private readonly options: PeeringControllerOptions) {
    const { client } = options;
    this.cluster = client.name;
    this.probeIntervalMs = options.probeIntervalMs ?? 5_000;
    this.probeTimeoutMs = options.probeTimeoutMs ?? Math.min(3_000, this.probeIntervalMs);
    this.heartbeatMs = options.statusHeartbeatMs ?? 30_000;
    this.identityRecheckMs = options.identityRecheckMs ?? 60_000;
    this.peerings = options.informers.peerings;
    this.nodes = options.informers.virtualNodes;
    this.secrets = options.informers.peerSecrets;
    this.controller = new Controller({
      name: "peerings",
      workers: 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    const byPeeringLabel = (o: V1Node | V1Secret) => {
      const peering = o.metadata?.labels?.[PEERING_LABEL];
      return peering ? [this.key(peering)] : [];
    };
    this.controller.watch(this.peerings);
    this.controller.watch(this.nodes, byPeeringLabel);
    this.controller.watch(this.secrets, (secret) => [
      ...byPeeringLabel(secret),
      ...this.peerings
        .list()
        .filter((p) => p.spec.kubeconfigSecretRef.name === secret.metadata?.name)
        .map((p) => this.key(p.metadata!.name!)),
    ]);
    const registry = options.clusterLabels;
    if (registry) {
      this.controller.watch(registry.informer, (cluster) => {
        const id = registry.clusterIdOf(cluster);
        return id
          ? this.peerings
              .list()
              .filter((p) => p.spec.remoteClusterId === id)
              .map((p) => this.key(p.metadata!.name!))
          : [];
      });
    }
  }

  /** The peering with the provider's labels from the cluster registry, when it has them. */
  private withRegistryLabels(peering: Peering): Peering {
    const labels = this.options.clusterLabels?.labelsOf(peering.spec.remoteClusterId);
    return labels ? { ...peering, spec: { ...peering.spec, labels } } : peering;
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    this.states.clear();
  }

  private key(name: string): string {
    return objectKey(this.cluster, undefined, name);
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const name = ctx.ref.name;
    const stored = this.peerings.get(undefined, name);
    if (!stored || stored.metadata?.deletionTimestamp) {
      await this.removeNodes(name, undefined);
      this.states.delete(name);
      return reconcileDone();
    }
    const peering = this.withRegistryLabels(stored);
    const state = this.states.get(name) ?? {};
    this.states.set(name, state);
    const now = Date.now();
    this.loadCredentials(peering, state, ctx.logger);

    // Probe when one is due (events in between reuse the last result).
    const credentials = state.credentials;
    if (
      credentials &&
      (state.lastProbeAt === undefined || now - state.lastProbeAt >= this.probeIntervalMs * 0.9)
    ) {
      const before = state.probe?.ok;
      state.probe = await probeReadyz(credentials.kubeConfig, this.probeTimeoutMs);
      state.lastProbeAt = Date.now();
      if (state.probe.ok) state.lastHeartbeat = new Date(state.lastProbeAt);
      if (before !== state.probe.ok) {
        ctx.logger.info(
          { peering: name, healthy: state.probe.ok, message: state.probe.message },
          "provider health changed",
        );
      }
      if (
        state.probe.ok &&
        (!state.identity ||
          state.identityAt === undefined ||
          state.lastProbeAt - state.identityAt >= this.identityRecheckMs)
      ) {
        state.identity = await checkRemoteIdentity(
          credentials.kubeConfig,
          this.options.namespace,
          peering.spec.remoteClusterId,
          this.probeTimeoutMs,
        );
        state.identityAt = Date.now();
      }
    }

    const readiness = this.readiness(peering, state);
    let nodeError: string | undefined;
    let node: V1Node | undefined;
    try {
      node = await this.ensureNode(peering, readiness);
      await this.removeNodes(name, virtualNodeName(peering.spec.remoteClusterName));
    } catch (err) {
      nodeError = describeError(err);
      ctx.logger.warn({ peering: name, error: nodeError }, "virtual node not in place");
    }
    if (
      node &&
      (state.lastLeaseAt === undefined || Date.now() - state.lastLeaseAt >= this.probeIntervalMs * 0.9)
    ) {
      try {
        await applyObject(this.options.client, nodeLease(node, new Date()));
        state.lastLeaseAt = Date.now();
      } catch (err) {
        nodeError ??= `renewing Lease ${node.metadata!.name}: ${describeError(err)}`;
      }
    }
    await this.writeStatus(peering, state, readiness, nodeError);
    if (nodeError) throw new Error(nodeError);
    const nextProbe = (state.lastProbeAt ?? Date.now()) + this.probeIntervalMs - Date.now();
    return requeueAfter(Math.max(100, nextProbe));
  }

  private loadCredentials(peering: Peering, state: PeerState, logger: Logger): void {
    const ref = peering.spec.kubeconfigSecretRef.name;
    const secret = this.secrets.get(this.options.namespace, ref);
    const data = secret?.data?.[KUBECONFIG_KEY];
    const version = secret ? `${secret.metadata?.uid}/${secret.metadata?.resourceVersion}` : "absent";
    if (version === state.credentialsVersion) return;
    state.credentialsVersion = version;
    state.credentials = undefined;
    state.probe = undefined;
    state.lastProbeAt = undefined;
    state.identity = undefined;
    state.identityAt = undefined;
    if (!secret) {
      state.credentialsError = `Secret ${this.options.namespace}/${ref} does not exist (or lacks label ${PEERING_LABEL})`;
    } else if (!data) {
      state.credentialsError = `Secret ${this.options.namespace}/${ref} has no key "${KUBECONFIG_KEY}"`;
    } else {
      try {
        state.credentials = loadPeerCredentials(Buffer.from(data, "base64").toString());
        state.credentialsError = undefined;
      } catch (err) {
        state.credentialsError = `Secret ${this.options.namespace}/${ref}: ${describeError(err)}`;
      }
    }
    if (state.credentialsError)
      logger.warn({ peering: peering.metadata!.name, error: state.credentialsError }, "no credentials");
  }

  private readiness(peering: Peering, state: PeerState): NodeReadiness & { healthy: boolean | undefined } {
    const remote = `provider "${peering.spec.remoteClusterName}"`;
    if (state.credentialsError || !state.credentials) {
      return {
        ready: false,
        healthy: undefined,
        reason: "CredentialsInvalid",
        message: state.credentialsError ?? "no credentials",
      };
    }
    const expiresAt = state.credentials.expiresAt;
    if (expiresAt && expiresAt.getTime() <= Date.now()) {
      return {
        ready: false,
        healthy: state.probe?.ok,
        reason: "CredentialsExpired",
        message: `the client certificate for ${remote} expired at ${expiresAt.toISOString()}: an expired certificate cannot be renewed; make the peering again (tenantry unpeer, then tenantry peer)`,
      };
    }
    if (!state.probe?.ok) {
      return {
        ready: false,
        healthy: state.probe ? false : undefined,
        reason: "PeerUnreachable",
        message: state.probe?.message ?? `${remote} not probed yet`,
      };
    }
    if (state.identity && !state.identity.ok) {
      return { ready: false, healthy: true, reason: state.identity.reason, message: state.identity.message };
    }
    return {
      ready: true,
      healthy: true,
      reason: "PeerReady",
      message: `${remote} (${peering.spec.remoteClusterId}) is ready`,
    };
  }

  /** Creates the node (tainted from the start), applies its metadata, restores the taint, keeps its status. */
  private async ensureNode(peering: Peering, readiness: NodeReadiness): Promise<V1Node> {
    const { client } = this.options;
    const nodeName = virtualNodeName(peering.spec.remoteClusterName);
    let node = this.nodes.get(undefined, nodeName);
    const owner = node?.metadata?.labels?.[PEERING_LABEL];
    if (node && owner !== peering.metadata!.name) {
      throw new Error(
        `node ${nodeName} exists and belongs to ${owner ? `peering "${owner}"` : "no peering"}`,
      );
    }
    if (!node) {
      try {
        node = await client.core.createNode({ body: newVirtualNode(peering) });
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        node = await client.core.readNode({ name: nodeName });
        if (node.metadata?.labels?.[PEERING_LABEL] !== peering.metadata!.name) {
          throw new Error(
            `node ${nodeName} exists and does not belong to peering "${peering.metadata!.name}"`,
          );
        }
      }
    }
    node = (await applyObject(client, virtualNodeMetadata(peering))) as V1Node;
    if (!hasVirtualNodeTaint(node)) {
      try {
        node = await client.objects.jsonPatch<V1Node>(node, addTaintPatch(node));
      } catch (err) {
        // Someone changed the node meanwhile: the next reconcile sees the new version.
        const code = statusCode(err);
        if (code !== 409 && code !== 422) throw err;
      }
    }
    const now = new Date();
    if (nodeStatusStale(node, peering, readiness, now, this.heartbeatMs)) {
      node = (await applyStatus(client, virtualNodeStatus(peering, readiness, node, now))) as V1Node;
    }
    return node;
  }

  /** Deletes the virtual nodes of a peering other than `keep` (all of them when the peering is gone). */
  private async removeNodes(peering: string, keep: string | undefined): Promise<void> {
    for (const node of this.nodes.list()) {
      const name = node.metadata!.name!;
      if (
        node.metadata?.labels?.[PEERING_LABEL] !== peering ||
        name === keep ||
        node.metadata?.deletionTimestamp
      )
        continue;
      try {
        await this.options.client.core.deleteNode({ name });
        this.options.logger.info({ peering, node: name }, "virtual node deleted");
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }

  private async writeStatus(
    peering: Peering,
    state: PeerState,
    readiness: NodeReadiness & { healthy: boolean | undefined },
    nodeError: string | undefined,
  ): Promise<void> {
    const generation = peering.metadata!.generation;
    const nodeName = virtualNodeName(peering.spec.remoteClusterName);
    const ready: ConditionUpdate = nodeError
      ? {
          type: "Ready",
          status: "False",
          reason: "VirtualNodeFailed",
          message: nodeError.slice(0, 1000),
          observedGeneration: generation,
        }
      : {
          type: "Ready",
          status: readiness.ready ? "True" : "False",
          reason: readiness.reason,
          message: readiness.ready ? `${readiness.message}; virtual node ${nodeName}` : readiness.message,
          observedGeneration: generation,
        };
    const healthy: ConditionUpdate =
      readiness.healthy === undefined
        ? {
            type: "Healthy",
            status: "Unknown",
            reason: "NotProbed",
            message: readiness.message,
            observedGeneration: generation,
          }
        : readiness.healthy
          ? {
              type: "Healthy",
              status: "True",
              reason: "ProbeSucceeded",
              message: state.probe!.message,
              observedGeneration: generation,
            }
          : {
              type: "Healthy",
              status: "False",
              reason: "ProbeFailed",
              message: state.probe!.message,
              observedGeneration: generation,
            };
    const now = new Date();
    const previous = (peering.status?.conditions ?? []) as Condition[];
    const conditions = setCondition(setCondition(previous, ready, now), healthy, now);
    const status: PeeringStatus = {
      observedGeneration: generation,
      conditions,
      virtualNode: nodeName,
      capacitySummary: capacitySummary(peering.spec.resources),
      labelSummary: Object.entries(peering.spec.labels ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .sort()
        .join(", "),
      ...(state.credentials?.expiresAt
        ? { credentialsExpireAt: formatTime(state.credentials.expiresAt) }
        : {}),
      ...(state.lastHeartbeat
        ? { lastHeartbeat: formatTime(state.lastHeartbeat) }
        : peering.status?.lastHeartbeat
          ? { lastHeartbeat: peering.status.lastHeartbeat }
          : {}),
    };
    if (!this.statusChanged(peering.status, status, now)) return;
    await applyStatus(this.options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "Peering",
      metadata: { name: peering.metadata!.name! },
      status,
    });
  }

  /** Whether the status says something new, or its heartbeat is older than the heartbeat period. */
  private statusChanged(current: PeeringStatus | undefined, next: PeeringStatus, now: Date): boolean {
    if (!current || !sameStatus(current, next)) return true;
    if (!next.lastHeartbeat || next.lastHeartbeat === current.lastHeartbeat) return false;
    if (!current.lastHeartbeat) return true;
    return now.getTime() - Date.parse(current.lastHeartbeat) >= this.heartbeatMs;
  }
}

/** Equal apart from the heartbeat and transition times (field order on the wire does not matter). */
function sameStatus(a: PeeringStatus, b: PeeringStatus): boolean {
  const fields = [
    "observedGeneration",
    "virtualNode",
    "capacitySummary",
    "labelSummary",
    "credentialsExpireAt",
  ] as const;
  if (fields.some((f) => a[f] !== b[f])) return false;
  const conditions = (s: PeeringStatus) =>
    (s.conditions ?? [])
      .map((c) => [c.type, c.status, c.reason, c.message, c.observedGeneration ?? null].join("\u0000"))
      .sort()
      .join("\n");
  return conditions(a) === conditions(b);
}

/** `cpu=8, memory=16Gi, pods=100`. */
export function capacitySummary(resources: Record<string, string | number>): string {
  return Object.entries(nodeCapacity(resources))
    .map(([name, amount]) => {
      try {
        return `${name}=${formatQuantity(parseQuantity(amount), name === "memory" || name.endsWith("storage"))}`;
      } catch {
        return `${name}=${amount}`;
      }
    })
    .sort()
    .join(", ");
}

function formatTime(time: Date): string {
  return time.toISOString().replace(/\.\d+Z$/, "Z");
}
