/**
 * Keeps every registered cluster's status current: a `/readyz` probe with its registered
 * credentials every interval (Ready follows it), and every minute, or when the cluster comes
 * back, its version, nodes, capacity, user CA and tenantry identity. Status is written only when
 * it changes, and at most every heartbeat for the probe times.
 */
import type { V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyStatus,
  type ClusterClient,
  type Condition,
  type ConditionUpdate,
  Controller,
  describeError,
  formatKubeTime,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  sameStoredJson,
  setCondition,
} from "../kube/index.js";
import type { ProbeResult } from "../multicluster/index.js";
import type { Cluster, ClusterStatus } from "./api/cluster.js";
import { type ClusterFacts, capacityText, gatherFacts, probeHealth } from "./probe.js";
import { CLUSTER_LABEL, type ClusterRegistry } from "./registry.js";

export interface ClusterHealthControllerOptions {
  client: ClusterClient;
  registry: ClusterRegistry;
  logger: Logger;
  /** How often each cluster is probed. Default 5 s. */
  probeIntervalMs?: number;
  /** How long a probe may take. Default 3 s. */
  probeTimeoutMs?: number;
  /** How often version, nodes, capacity and CA are read again while the cluster answers. Default 60 s. */
  factsIntervalMs?: number;
  /** How often probe times are written while nothing else changes. Default 30 s. */
  heartbeatMs?: number;
}

interface HealthState {
  credentialsVersion?: string;
  client?: ClusterClient;
  credentialsError?: string;
  probe?: ProbeResult;
  lastProbeAt?: number;
  lastSuccessAt?: number;
  facts?: ClusterFacts;
  factsAt?: number;
  lastWrittenAt?: number;
}

export class ClusterHealthController {
  private readonly controller: Controller;
  private readonly states = new Map<string, HealthState>();
  private readonly probeIntervalMs: number;
  private readonly probeTimeoutMs: number;
  private readonly factsIntervalMs: number;
  private readonly heartbeatMs: number;

  constructor(private readonly options: ClusterHealthControllerOptions) {
    this.probeIntervalMs = options.probeIntervalMs ?? 5_000;
    this.probeTimeoutMs = options.probeTimeoutMs ?? Math.min(3_000, this.probeIntervalMs);
    this.factsIntervalMs = options.factsIntervalMs ?? 60_000;
    this.heartbeatMs = options.heartbeatMs ?? 30_000;
    this.controller = new Controller({
      name: "cluster-registry",
      workers: 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    const { registry } = options;
    this.controller.watch(registry.clusters);
    this.controller.watch(registry.secrets, (secret: V1Secret, cluster) => {
      const name = secret.metadata?.labels?.[CLUSTER_LABEL];
      return name ? [objectKey(cluster, undefined, name)] : [];
    });
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    this.states.clear();
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const name = ctx.ref.name;
    const { registry } = this.options;
    const cluster = registry.get(name);
    if (!cluster) {
      this.states.delete(name);
      return reconcileDone();
    }
    const state = this.states.get(name) ?? {};
    this.states.set(name, state);
    this.loadCredentials(name, state);

    const now = Date.now();
    if (
      state.client &&
      (state.lastProbeAt === undefined || now - state.lastProbeAt >= this.probeIntervalMs * 0.9)
    ) {
      const before = state.probe?.ok;
      state.probe = await probeHealth(state.client, this.probeTimeoutMs);
      state.lastProbeAt = Date.now();
      if (state.probe.ok) state.lastSuccessAt = state.lastProbeAt;
      if (before !== state.probe.ok) {
        ctx.logger.info(
          { cluster: name, ready: state.probe.ok, message: state.probe.message },
          "cluster health changed",
        );
      }
      const cameBack = state.probe.ok && before === false;
      if (
        state.probe.ok &&
        (cameBack || !state.factsAt || state.lastProbeAt - state.factsAt >= this.factsIntervalMs)
      ) {
        state.facts = await gatherFacts(state.client, registry.namespace);
        state.factsAt = Date.now();
      }
    }
    try {
      await this.writeStatus(cluster, state);
    } catch (err) {
      ctx.logger.warn({ cluster: name, error: describeError(err) }, "writing cluster status failed");
      throw err;
    }
    const next = (state.lastProbeAt ?? Date.now()) + this.probeIntervalMs - Date.now();
    return requeueAfter(Math.max(100, next));
  }

  private loadCredentials(name: string, state: HealthState): void {
    const { registry } = this.options;
    const version = registry.credentialsVersion(name);
    if (version === state.credentialsVersion) return;
    state.credentialsVersion = version;
    state.client = undefined;
    state.probe = undefined;
    state.lastProbeAt = undefined;
    state.facts = undefined;
    state.factsAt = undefined;
    try {
      state.client = registry.clientOf(name, { timeoutMs: this.probeTimeoutMs });
      state.credentialsError = undefined;
    } catch (err) {
      state.credentialsError = describeError(err);
    }
  }

  private readyCondition(cluster: Cluster, state: HealthState): ConditionUpdate {
    const generation = cluster.metadata?.generation;
    if (state.credentialsError || !state.client) {
      return {
        type: "Ready",
        status: "False",
        reason: "CredentialsInvalid",
        message: (state.credentialsError ?? "no credentials").slice(0, 1000),
        observedGeneration: generation,
      };
    }
    if (!state.probe) {
      return {
        type: "Ready",
        status: "Unknown",
        reason: "NotProbed",
        message: "not probed yet",
        observedGeneration: generation,
      };
    }
    const problems = state.probe.ok ? (state.facts?.problems ?? []) : [];
    return {
      type: "Ready",
      status: state.probe.ok ? "True" : "False",
      reason: state.probe.ok ? "ClusterReady" : "ClusterUnreachable",
      message: [state.probe.message, ...problems].join("; ").slice(0, 1000),
      observedGeneration: generation,
    };
  }

  private async writeStatus(cluster: Cluster, state: HealthState): Promise<void> {
    const previous = cluster.status ?? {};
    const now = Date.now();
    const conditions = setCondition(
      previous.conditions as Condition[] | undefined,
      this.readyCondition(cluster, state),
      now,
    );
    const facts = state.facts;
    const heartbeatDue = state.lastWrittenAt === undefined || now - state.lastWrittenAt >= this.heartbeatMs;
    const server = state.client?.server ?? previous.server;
    const status: ClusterStatus = {
      observedGeneration: cluster.metadata?.generation,
      conditions,
      ...(server ? { server } : {}),
      // What is not known now stays as last seen: an unreachable cluster keeps its version and capacity.
      ...((facts?.version ?? previous.version) ? { version: facts?.version ?? previous.version } : {}),
      ...((facts?.clusterId ?? previous.clusterId)
        ? { clusterId: facts?.clusterId ?? previous.clusterId }
        : {}),
      ...((facts?.nodes ?? previous.nodes) !== undefined ? { nodes: facts?.nodes ?? previous.nodes } : {}),
      ...((facts?.capacity ?? previous.capacity) ? { capacity: facts?.capacity ?? previous.capacity } : {}),
      ...(facts?.capacity
        ? { capacitySummary: capacityText(facts.capacity) }
        : previous.capacitySummary
          ? { capacitySummary: previous.capacitySummary }
          : {}),
      ...((facts?.userCa ?? previous.userCa) ? { userCa: facts?.userCa ?? previous.userCa } : {}),
      ...(heartbeatDue && state.lastProbeAt
        ? { lastProbeTime: formatKubeTime(state.lastProbeAt) }
        : previous.lastProbeTime
          ? { lastProbeTime: previous.lastProbeTime }
          : {}),
      ...(heartbeatDue && state.lastSuccessAt
        ? { lastHeartbeat: formatKubeTime(state.lastSuccessAt) }
        : previous.lastHeartbeat
          ? { lastHeartbeat: previous.lastHeartbeat }
          : {}),
    };
    if (sameStoredJson(status, cluster.status)) return;
    await applyStatus(this.options.client, {
      apiVersion: cluster.apiVersion,
      kind: cluster.kind,
      metadata: { name: cluster.metadata!.name! },
      status,
    });
    state.lastWrittenAt = now;
  }
}
