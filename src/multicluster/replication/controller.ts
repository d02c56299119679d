import { createHash } from "node:crypto";
import type { V1Deployment, V1Node } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  addFinalizer,
  applyObject,
  applyStatus,
  type ClusterClient,
  type Condition,
  Controller,
  describeError,
  hasFinalizer,
  Informer,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  removeFinalizer,
  requeueAfter,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { NAMESPACE_OFFLOADING_NAME, type NamespaceOffloading } from "../api/offloading.js";
import {
  REPLICATED_DEPLOYMENT_LABEL,
  type ReplicatedDeployment,
  type ReplicatedDeploymentStatus,
} from "../api/replicated-deployment.js";
import type { MulticlusterInformers } from "../informers.js";
import { namespacesOfMap } from "../offloading/replicas.js";
import { REMOTE_RATE_LIMITER } from "../reflection/replicas.js";
import { deletableObsolete, everyReplicaAvailable, planReplication, type WantedReplica } from "./plan.js";
import {
  type Placement,
  placementKey,
  placementsOf,
  REMOTE_REPLICAS_FINALIZER,
  replicaSetsSummary,
} from "./remote-replicas.js";
import { type Inventory, RemoteReplicaWriter } from "./remote-writer.js";
import { canonicalJson, type ReplicaOutcome, replicationStatus, statusShapeChanged } from "./status.js";

/**
 * How often a ReplicatedDeployment whose pods the providers keep is looked at again: their
 * ReplicaSets are not watched, so this is how their status (and a provider back from a partition)
 * reaches this cluster.
 */
const PROVIDER_STATUS_PERIOD_MS = 10_000;

export interface ReplicationControllerOptions {
  client: ClusterClient;
  /** This cluster's id: the origin label of what it writes in the providers. */
  clusterId: string;
  /** Shared with the offloading controllers, started and stopped by their owner. */
  informers: Pick<MulticlusterInformers, "offloadings" | "virtualNodes" | "maps" | "peerClients">;
  logger: Logger;
  /** ReplicatedDeployments reconciled at once. Default 4. */
  workers?: number;
  /** Replica Deployments applied at once within one reconcile. Default 8. */
  applyConcurrency?: number;
  /** Shortest time between two status writes that only change replica states. Default 1 s. */
  statusIntervalMs?: number;
}

/** What this controller last applied to a replica, so an unchanged replica is not applied again. */
interface AppliedReplica {
  specHash: string;
  uid: string;
  generation: number;
}

/**
 * A replica outcome, whether its failure may go away by retrying (an API error), and, for a replica
 * the providers keep, where its ReplicaSets are.
 */
type Outcome = ReplicaOutcome & { retry?: boolean; placements?: Placement[] };

/**
 * Keeps one Deployment per combination of generation-label values over the virtual nodes a
 * ReplicatedDeployment may use (Liqo thesis, chapter 7): re-evaluated whenever the
 * ReplicatedDeployment, one of its Deployments, a virtual node or the namespace's NamespaceOffloading
 * changes. New replicas are created before obsolete ones are deleted, and those only once the new
 * ones are Available. Deleting the ReplicatedDeployment deletes its replicas (owner references).
 */
export class ReplicatedDeploymentController {
  readonly replicated: Informer<ReplicatedDeployment>;
  private readonly deployments: Informer<V1Deployment>;
  private readonly nodes: Informer<V1Node>;
  private readonly offloadings: Informer<NamespaceOffloading>;
  private readonly remote: RemoteReplicaWriter;
  private readonly controller: Controller;
  private readonly applied = new Map<string, AppliedReplica>();
  /** When each ReplicatedDeployment's status was last written (namespace/name → ms). */
  private readonly statusWrites = new Map<string, number>();
  private readonly statusIntervalMs: number;
  private readonly cluster: string;
  private readonly applyConcurrency: number;
  private unsubscribeNodes?: () => void;

  constructor(private readonly options: ReplicationControllerOptions) {
    const { client } = options;
    this.cluster = client.name;
    this.applyConcurrency = Math.max(1, options.applyConcurrency ?? 8);
    this.statusIntervalMs = options.statusIntervalMs ?? 1_000;
    this.replicated = Informer.forResource<ReplicatedDeployment>(client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "ReplicatedDeployment",
    });
    this.deployments = Informer.forResource<V1Deployment>(client, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      labelSelector: REPLICATED_DEPLOYMENT_LABEL,
    });
    this.nodes = options.informers.virtualNodes;
    this.offloadings = options.informers.offloadings;
    this.remote = new RemoteReplicaWriter(options.informers.peerClients, options.clusterId);
    this.controller = new Controller({
      name: "replicated-deployments",
      workers: options.workers ?? 4,
      logger: options.logger,
      // Some replicas are written in the providers: a provider down is retried as reflection does.
      rateLimiter: REMOTE_RATE_LIMITER(),
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(this.replicated);
    this.controller.watch(this.deployments, (d) => {
      const owner = d.metadata?.labels?.[REPLICATED_DEPLOYMENT_LABEL];
      return owner ? [this.key(d.metadata!.namespace!, owner)] : [];
    });
    this.controller.watch(this.offloadings, (o) => this.keysIn(o.metadata?.namespace));
    // A replica namespace accepted (or gone) in a provider decides where provider-kept replicas go.
    this.controller.watch(options.informers.maps, (map) =>
      namespacesOfMap(map).flatMap((ns) => this.keysIn(ns)),
    );
  }

  async start(): Promise<void> {
    // Nodes change status every heartbeat: only joins, departures and label changes matter (7.1.2).
    this.unsubscribeNodes = this.nodes.addHandler({
      onAdd: () => this.enqueueAll(),
      onDelete: () => this.enqueueAll(),
      onUpdate: (before, after) => {
        if (
          JSON.stringify(before.metadata?.labels ?? {}) !== JSON.stringify(after.metadata?.labels ?? {}) ||
          Boolean(before.metadata?.deletionTimestamp) !== Boolean(after.metadata?.deletionTimestamp)
        ) {
          this.enqueueAll();
        }
      },
    });
    for (const informer of [this.replicated, this.deployments, this.nodes, this.offloadings])
      informer.start();
    await this.nodes.waitForSync();
    await this.controller.start();
  }

  async stop(): Promise<void> {
    this.unsubscribeNodes?.();
    await this.controller.stop();
    await Promise.all([this.replicated.stop(), this.deployments.stop()]);
    this.applied.clear();
    this.statusWrites.clear();
  }

  private key(namespace: string, name: string): string {
    return objectKey(this.cluster, namespace, name);
  }

  private keysIn(namespace: string | undefined): string[] {
    return this.replicated
      .list()
      .filter((rd) => namespace === undefined || rd.metadata?.namespace === namespace)
      .map((rd) => this.key(rd.metadata!.namespace!, rd.metadata!.name!));
  }

  private enqueueAll(): void {
    for (const key of this.keysIn(undefined)) this.controller.enqueue(key);
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const namespace = ctx.ref.namespace!;
    const name = ctx.ref.name;
    const rd = this.replicated.get(namespace, name);
    if (!rd || rd.metadata?.deletionTimestamp) {
      // Its replicas go with it (owner references); nothing may recreate them meanwhile.
      for (const key of this.applied.keys())
        if (key.startsWith(`${namespace}/${name}-`)) this.applied.delete(key);
      // Owner references do not reach the providers: their ReplicaSets are deleted here.
      if (rd && hasFinalizer(rd, REMOTE_REPLICAS_FINALIZER))
        await this.removeProviderReplicas(rd, ctx.logger);
      return reconcileDone();
    }
    const labelled = this.deployments
      .list()
      .filter(
        (d) =>
          d.metadata?.namespace === namespace && d.metadata?.labels?.[REPLICATED_DEPLOYMENT_LABEL] === name,
      );
    const mine = labelled.filter((d) => controllerUid(d) === rd.metadata!.uid);
    const others = new Map(labelled.filter((d) => !mine.includes(d)).map((d) => [d.metadata!.name!, d]));
    const existing = new Map(mine.map((d) => [d.metadata!.name!, d]));

    const plan = planReplication(
      rd,
      this.offloadings.get(namespace, NAMESPACE_OFFLOADING_NAME),
      this.nodes.list(),
    );
    const report = {
      generation: rd.metadata?.generation,
      generationLabels: rd.spec.generationLabels ?? [],
      selectedNodes: plan.selectedNodes,
      unlabelled: plan.unlabelled,
      ...(plan.blocked ? { blocked: plan.blocked } : {}),
    };
    if (plan.blocked?.reason === "InvalidSpec") {
      // A typo in the spec must not take the running replicas down: they stay as they are.
      const wait = await this.writeStatus(rd, { ...report, replicas: [], obsolete: [], untouched: mine });
      return wait ? requeueAfter(wait) : reconcileDone();
    }

    // Provider-kept replicas, or ReplicaSets left in the providers from when they were.
    const provider = rd.spec.podManagement === "Provider";
    let inventory: Inventory | undefined;
    if (provider || hasFinalizer(rd, REMOTE_REPLICAS_FINALIZER)) {
      if (provider) await addFinalizer(this.options.client.objects, rd, REMOTE_REPLICAS_FINALIZER);
      inventory = await this.remote.inventory(rd, this.options.informers.maps.list());
    }
    const outcomes = await eachLimit(plan.wanted, this.applyConcurrency, (wanted) =>
      provider
        ? this.ensureProviderReplica(wanted, inventory!, ctx.logger)
        : this.ensureReplica(wanted, existing.get(wanted.name), others.get(wanted.name), ctx.logger),
    );
    // Provider-kept replicas have no Deployment here: one from before the switch goes like an obsolete one.
    const wantedNames = new Set(provider ? [] : plan.wanted.map((w) => w.name));
    const obsolete = mine.filter((d) => !wantedNames.has(d.metadata!.name!));
    const deletable = deletableObsolete(outcomes, obsolete);
    const deleteErrors: Record<string, string> = {};
    await eachLimit(deletable, this.applyConcurrency, async (d) => {
      const error = await this.deleteReplica(d, ctx.logger);
      if (error) deleteErrors[d.metadata!.name!] = error;
    });
    if (inventory && everyReplicaAvailable(outcomes)) {
      Object.assign(
        deleteErrors,
        await this.removeObsoleteProviderReplicas(rd, outcomes, inventory, ctx.logger),
      );
    }
    const kept = obsolete.filter((d) => !deletable.includes(d) || deleteErrors[d.metadata!.name!]);
    const wait = await this.writeStatus(rd, { ...report, replicas: outcomes, obsolete: kept, deleteErrors });
    const retry = outcomes.filter((o) => o.retry).map((o) => `${o.name}: ${o.error}`);
    const failedDeletes = Object.entries(deleteErrors).map(([n, e]) => `deleting ${n}: ${e}`);
    if (retry.length || failedDeletes.length) throw new Error([...retry, ...failedDeletes].join("; "));
    if (wait) return requeueAfter(wait);
    return provider ? requeueAfter(PROVIDER_STATUS_PERIOD_MS) : reconcileDone();
  }

  /**
   * One replica kept by its providers: a ReplicaSet in each one's replica namespace, with its share
   * of the declared pods; its state summarised as a Deployment's for the status.
   */
  private async ensureProviderReplica(
    wanted: WantedReplica,
    inventory: Inventory,
    logger: Logger,
  ): Promise<Outcome> {
    const base = { combination: wanted.combination, name: wanted.name };
    if (!wanted.deployment) return { ...base, ...(wanted.error ? { error: wanted.error } : {}) };
    const nodes = new Map(this.nodes.list().map((n) => [n.metadata!.name!, n]));
    const found = placementsOf(
      wanted.combination,
      nodes,
      this.options.informers.maps.list(),
      wanted.deployment.metadata!.namespace!,
      wanted.deployment.spec?.replicas ?? 1,
    );
    if (found.error !== undefined) return { ...base, error: found.error };
    const states = await this.remote.sync(wanted.deployment, found.placements, inventory, logger);
    const errors = states.flatMap((s) => (s.error ? [s.error] : []));
    return {
      ...base,
      placements: found.placements,
      deployment: replicaSetsSummary(wanted.name, states),
      ...(errors.length ? { error: errors.join("; "), retry: true } : {}),
    };
  }

  /**
   * Once every wanted replica is Available: the providers' ReplicaSets of combinations (or
   * providers) no longer wanted, or all of them when the replicas are this cluster's Deployments
   * again — then the finalizer goes too. Returns errors by provider.
   */
  private async removeObsoleteProviderReplicas(
    rd: ReplicatedDeployment,
    outcomes: readonly Outcome[],
    inventory: Inventory,
    logger: Logger,
  ): Promise<Record<string, string>> {
    const keep = new Set(
      outcomes.flatMap((o) => (o.placements ?? []).map((p) => placementKey(p.peering, o.combination.hash))),
    );
    const provider = rd.spec.podManagement === "Provider";
    const errors = await this.remote.deleteOthers(inventory, keep, !provider, logger);
    if (!provider && Object.keys(errors).length === 0) {
      await removeFinalizer(this.options.client.objects, rd, REMOTE_REPLICAS_FINALIZER);
    }
    return Object.fromEntries(Object.entries(errors).map(([peering, e]) => [`ReplicaSets in ${peering}`, e]));
  }

  /** The ReplicatedDeployment is being deleted: its ReplicaSets in every provider first. */
  private async removeProviderReplicas(rd: ReplicatedDeployment, logger: Logger): Promise<void> {
    const inventory = await this.remote.inventory(rd, this.options.informers.maps.list());
    const errors = await this.remote.deleteOthers(inventory, new Set(), true, logger);
    if (Object.keys(errors).length) throw new Error(Object.values(errors).join("; "));
    await removeFinalizer(this.options.client.objects, rd, REMOTE_REPLICAS_FINALIZER);
  }

  /** Applies the replica's Deployment unless this controller already did and nobody changed its spec since. */
  private async ensureReplica(
    wanted: WantedReplica,
    current: V1Deployment | undefined,
    foreign: V1Deployment | undefined,
    logger: Logger,
  ): Promise<Outcome> {
    const base = { combination: wanted.combination, name: wanted.name };
    if (!wanted.deployment) return { ...base, ...(wanted.error ? { error: wanted.error } : {}) };
    if (foreign) {
      // An earlier ReplicatedDeployment of the same name: the garbage collector is removing it.
      return {
        ...base,
        error: `Deployment ${wanted.name} still belongs to an earlier ReplicatedDeployment of the same name; created once it is gone`,
      };
    }
    if (current?.metadata?.deletionTimestamp) {
      return {
        ...base,
        deployment: current,
        error: `Deployment ${wanted.name} is being deleted; created again once it is gone`,
      };
    }
    const key = `${wanted.deployment.metadata!.namespace}/${wanted.name}`;
    const specHash = createHash("sha256").update(JSON.stringify(wanted.deployment)).digest("hex");
    const last = this.applied.get(key);
    if (
      current &&
      last?.specHash === specHash &&
      last.uid === current.metadata?.uid &&
      last.generation === current.metadata?.generation
    ) {
      return { ...base, deployment: current };
    }
    try {
      const applied = await applyObject(this.options.client, wanted.deployment);
      this.applied.set(key, {
        specHash,
        uid: applied.metadata!.uid!,
        generation: applied.metadata!.generation ?? 0,
      });
      if (!current) logger.info({ deployment: key, nodes: wanted.combination.nodes }, "replica created");
      return { ...base, deployment: applied };
    } catch (err) {
      const error = describeError(err);
      if (current && selectorChanged(current, wanted.deployment)) {
        // A Deployment's selector cannot change: replace it (the user changed the template's selector).
        const deleteError = await this.deleteReplica(current, logger);
        return {
          ...base,
          deployment: current,
          error: deleteError
            ? `the selector changed and the Deployment could not be deleted to recreate it: ${deleteError}`
            : "the selector changed: the Deployment is deleted and created again",
          retry: true,
        };
      }
      return { ...base, ...(current ? { deployment: current } : {}), error, retry: true };
    }
  }

  /** Deletes a replica (only that very object: uid precondition); returns the error, if any. */
  private async deleteReplica(deployment: V1Deployment, logger: Logger): Promise<string | undefined> {
    const { name, namespace, uid } = deployment.metadata!;
    try {
      await this.options.client.apps.deleteNamespacedDeployment({
        name: name!,
        namespace: namespace!,
        body: { preconditions: { uid: uid! }, propagationPolicy: "Background" },
      });
      this.applied.delete(`${namespace}/${name}`);
      logger.info({ deployment: `${namespace}/${name}` }, "replica deleted");
      return undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      return describeError(err);
    }
  }

  /**
   * Writes the status if it says something new. While replicas only change state (a Deployment
   * becoming Available, its ready count), at most one write per status interval: the status of a
   * ReplicatedDeployment with many replicas is large, and each of their updates would rewrite it.
   * Returns how long to wait before the postponed write, if one was postponed.
   */
  private async writeStatus(
    rd: ReplicatedDeployment,
    report: Parameters<typeof replicationStatus>[0],
  ): Promise<number | undefined> {
    const status = replicationStatus(report, rd.status?.conditions as Condition[] | undefined, new Date());
    if (rd.status && canonicalJson(rd.status) === canonicalJson(status)) return undefined;
    const key = `${rd.metadata!.namespace}/${rd.metadata!.name}`;
    const sinceLast = Date.now() - (this.statusWrites.get(key) ?? 0);
    if (!rd.status || statusShapeChanged(rd.status, status) || sinceLast >= this.statusIntervalMs) {
      await applyStatus(this.options.client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "ReplicatedDeployment",
        metadata: { name: rd.metadata!.name!, namespace: rd.metadata!.namespace! },
        status: status satisfies ReplicatedDeploymentStatus,
      });
      this.statusWrites.set(key, Date.now());
      return undefined;
    }
    return this.statusIntervalMs - sinceLast;
  }
}

function controllerUid(deployment: V1Deployment): string | undefined {
  return deployment.metadata?.ownerReferences?.find((r) => r.controller)?.uid;
}

function selectorChanged(current: V1Deployment, wanted: V1Deployment): boolean {
  return canonicalJson(current.spec?.selector ?? {}) !== canonicalJson(wanted.spec?.selector ?? {});
}

/** `fn` over `items`, at most `limit` at a time, results in the items' order. */
export async function eachLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
