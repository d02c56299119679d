/**
 * The NamespaceMap controller (Liqo thesis, figure 6.2, step 3): one NamespaceMap per Peering;
 * creates in the provider, with only the privileges of this cluster's tenant there, every remote
 * namespace the map's desiredMapping asks for, deletes those no longer asked for, probes the
 * existing ones, and records the outcome in the map's currentMapping.
 *
 * Each reconcile only acts on the difference between desired and current; existing replicas are
 * probed on a timer, not at every reconcile, so the work per request stays constant however many
 * replicas a peer already holds (the thesis's chapter-8 curve grew with them).
 */
import { PatchStrategy, type V1Namespace } from "@kubernetes/client-node";
import pLimit from "p-limit";
import type { Logger } from "pino";
import {
  type ClusterClient,
  type Controller,
  describeError,
  formatKubeTime,
  isAlreadyExists,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  statusCode,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import type { CurrentMapping, MappingPhase, NamespaceMap } from "../api/offloading.js";
import type { Peering } from "../api/peering.js";
import { type MulticlusterInformers, offloadingController } from "../informers.js";
import { PEERING_LABEL, peeringOwnerReference } from "../virtual-node.js";
import { ORIGIN_CLUSTER_ID_LABEL, ORIGIN_NAMESPACE_LABEL } from "./labels.js";

export interface NamespaceMapControllerOptions {
  client: ClusterClient;
  informers: MulticlusterInformers;
  clusterId: string;
  logger: Logger;
  /** How often existing replicas are checked in the provider. Default 10 s. */
  probeIntervalMs?: number;
  /** Remote calls in flight per map. Default 16. */
  concurrency?: number;
  workers?: number;
}

/** How long one replica's requests to the provider may take before it counts as not answering. */
const REMOTE_DEADLINE_MS = 10_000;

/** `work`'s result, or `fallback` if it has not settled within `ms` (the work itself goes on). */
async function withDeadline<T>(work: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

type Outcome = { phase: MappingPhase; message?: string } | "gone";

export class NamespaceMapController {
  private readonly controller: Controller;
  private readonly cluster: string;
  private readonly probeIntervalMs: number;
  private readonly lastProbe = new Map<string, number>();
  /** Replicas whose deletion this replica of tenantry asked for: `<map>/<local namespace>`. */
  private readonly deleting = new Set<string>();

  constructor(private readonly options: NamespaceMapControllerOptions) {
    const { informers } = options;
    this.cluster = options.client.name;
    this.probeIntervalMs = options.probeIntervalMs ?? 10_000;
    this.controller = offloadingController("namespace-map", options, 8, (ctx) => this.reconcile(ctx));
    this.controller.watch(informers.peerings, (p) => [this.key(p.metadata!.name!)]);
    this.controller.watch(informers.maps);
    this.controller.watch(informers.peerSecrets, (s) => {
      const peering = s.metadata?.labels?.[PEERING_LABEL];
      return peering ? [this.key(peering)] : [];
    });
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private key(peering: string): string {
    return objectKey(this.cluster, this.options.informers.namespace, peering);
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const name = ctx.ref.name;
    const { informers } = this.options;
    const peering = informers.peerings.get(undefined, name);
    if (!peering || peering.metadata?.deletionTimestamp) {
      // The map goes with its Peering (owner reference); the provider's tenant takes the replicas with it.
      this.lastProbe.delete(name);
      return reconcileDone();
    }
    if (!informers.maps.get(informers.namespace, name)) {
      await this.createMap(peering);
      return reconcileDone();
    }
    // Read fresh: acting on a stale desiredMapping would recreate a replica just withdrawn.
    let map: NamespaceMap;
    try {
      map = (await this.options.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceMap",
        metadata: { name, namespace: informers.namespace },
      })) as unknown as NamespaceMap;
    } catch (err) {
      if (isNotFound(err)) return reconcileDone();
      throw err;
    }
    const desired = map.spec?.desiredMapping ?? {};
    const current = map.status?.currentMapping ?? {};
    const now = Date.now();
    const probeDue = now - (this.lastProbe.get(name) ?? 0) >= this.probeIntervalMs;

    const cluster = peering.spec.remoteClusterName;
    const { remote, unreachable } = this.remoteOf(peering);

    const work: { local: string; act: () => Promise<Outcome> }[] = [];
    for (const [local, remoteName] of Object.entries(desired)) {
      const entry = current[local];
      const settled = entry?.phase === "Accepted" && entry.remoteNamespace === remoteName;
      if (settled && !probeDue && !unreachable) continue;
      work.push({
        local,
        act: () =>
          remote
            ? settled
              ? this.probe(remote, local, remoteName, cluster)
              : this.ensure(remote, local, remoteName, peering)
            : Promise.resolve({ phase: "CreationLoopBackOff", message: unreachable }),
      });
    }
    for (const [local, entry] of Object.entries(current)) {
      const wanted = desired[local];
      if (wanted === entry.remoteNamespace) continue;
      // No longer requested here (or renamed, which only a recreated offloading can do): remove it.
      work.push({
        local,
        act: () =>
          remote
            ? this.remove(
                remote,
                name,
                local,
                entry.remoteNamespace,
                entry.phase === "Terminating" && entry.lastTransitionTime
                  ? Date.parse(entry.lastTransitionTime)
                  : undefined,
              )
            : Promise.resolve({ phase: "Terminating", message: unreachable }),
      });
    }
    if (probeDue) this.lastProbe.set(name, now);

    const changes: Record<string, CurrentMapping | null> = {};
    await pLimit(this.options.concurrency ?? 16).map(work, async ({ local, act }) => {
      const outcome = await withDeadline(act(), REMOTE_DEADLINE_MS, {
        phase: "CreationLoopBackOff",
        message: `cluster ${cluster} does not answer: no answer within ${REMOTE_DEADLINE_MS} ms`,
      });
      ctx.logger.debug({ map: name, local, outcome }, "replica");
      const before = current[local];
      if (outcome === "gone") {
        if (before) changes[local] = null;
        return;
      }
      const changed = mappingChange(before, outcome, desired[local] ?? before!.remoteNamespace);
      if (changed) changes[local] = changed;
    });
    if (Object.keys(changes).length) await this.patchCurrent(map, changes);

    const after = { ...current, ...changes };
    const entries = Object.values(after).filter((e): e is CurrentMapping => !!e);
    // Creations and deletions under way are followed closely; failures are retried less often.
    if (entries.some((e) => e.phase === "Terminating") || Object.keys(desired).some((l) => !after[l])) {
      return requeueAfter(1_000);
    }
    if (entries.some((e) => e.phase === "CreationLoopBackOff")) return requeueAfter(5_000);
    return Object.keys(desired).length ? requeueAfter(this.probeIntervalMs) : reconcileDone();
  }

  /** The provider's client as this peering, or why there is none (the peering's probe says it does not answer). */
  private remoteOf(peering: Peering): { remote?: ClusterClient; unreachable?: string } {
    const health = peering.status?.conditions?.find((c) => c.type === "Ready");
    if (health?.status === "False" && health.reason === "PeerUnreachable") {
      // The peering's own probe (with a deadline) says the provider does not answer: say so for
      // every replica now, rather than send requests that may hang until it is back.
      return {
        unreachable: `cluster ${peering.spec.remoteClusterName} does not answer: ${health.message ?? "unreachable"}`,
      };
    }
    try {
      return { remote: this.options.informers.peerClients.clientFor(peering.metadata!.name!).client };
    } catch (err) {
      return { unreachable: describeError(err) };
    }
  }

  private async createMap(peering: Peering): Promise<void> {
    const name = peering.metadata!.name!;
    try {
      await this.options.client.objects.create({
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceMap",
        metadata: {
          name,
          namespace: this.options.informers.namespace,
          labels: { [PEERING_LABEL]: name, "app.kubernetes.io/managed-by": "tenantry" },
          ownerReferences: [peeringOwnerReference(peering)],
        },
        spec: {},
      } as never);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  private async patchCurrent(
    map: NamespaceMap,
    changes: Record<string, CurrentMapping | null>,
  ): Promise<void> {
    await this.options.client.objects.patchSubresource(
      {
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceMap",
        metadata: { name: map.metadata!.name!, namespace: map.metadata!.namespace! },
        status: { currentMapping: changes },
      } as never,
      "status",
      PatchStrategy.MergePatch,
    );
  }

  private originLabels(local: string): Record<string, string> {
    return { [ORIGIN_CLUSTER_ID_LABEL]: this.options.clusterId, [ORIGIN_NAMESPACE_LABEL]: local };
  }

  /**
   * Whether a remote namespace is the replica of `local`. The peer can read only its own tenant's
   * namespaces in the provider, and only this cluster creates namespaces there; the origin labels
   * tell replicas apart, and a namespace without them still belongs to this cluster.
   */
  private isOurs(namespace: V1Namespace, local: string): boolean {
    const labels = namespace.metadata?.labels ?? {};
    if (labels[ORIGIN_NAMESPACE_LABEL] === undefined) return true;
    return (
      labels[ORIGIN_CLUSTER_ID_LABEL] === this.options.clusterId && labels[ORIGIN_NAMESPACE_LABEL] === local
    );
  }

  /** Creates the remote namespace, or accepts it when it already is this replica. */
  private async ensure(
    remote: ClusterClient,
    local: string,
    name: string,
    peering: Peering,
  ): Promise<Outcome> {
    const where = `namespace ${name} in cluster ${peering.spec.remoteClusterName}`;
    try {
      await remote.core.createNamespace({ body: { metadata: { name, labels: this.originLabels(local) } } });
      return { phase: "Accepted" };
    } catch (err) {
      if (!isAlreadyExists(err))
        return { phase: "CreationLoopBackOff", message: `creating ${where}: ${describeError(err)}` };
    }
    return this.probe(remote, local, name, peering.spec.remoteClusterName);
  }

  /** Checks that the replica still exists, is active and is ours. */
  private async probe(remote: ClusterClient, local: string, name: string, cluster: string): Promise<Outcome> {
    try {
      const namespace = await remote.core.readNamespace({ name });
      if (!this.isOurs(namespace, local)) {
        return {
          phase: "CreationLoopBackOff",
          message: `namespace ${name} already exists in cluster ${cluster} and is not the replica of ${local}: choose another namespaceMappingStrategy`,
        };
      }
      if (namespace.metadata?.deletionTimestamp) {
        return {
          phase: "CreationLoopBackOff",
          message: `namespace ${name} is being deleted in cluster ${cluster}`,
        };
      }
      return { phase: "Accepted" };
    } catch (err) {
      if (statusCode(err) === 403) {
        // The peer reads only its own tenant's namespaces, and gets access to a new one a moment
        // after creating it: unreadable is someone else's namespace, or one not granted yet.
        return {
          phase: "CreationLoopBackOff",
          message: `namespace ${name} exists in cluster ${cluster} but this cluster may not read it: it is not the replica of ${local} (choose another namespaceMappingStrategy), or the provider has not granted access to it yet`,
        };
      }
      if (isNotFound(err))
        return {
          phase: "CreationLoopBackOff",
          message: `namespace ${name} is missing in cluster ${cluster}; creating it again`,
        };
      return {
        phase: "CreationLoopBackOff",
        message: `cluster ${cluster} does not answer: ${describeError(err)}`,
      };
    }
  }

  /**
   * Deletes the replica; "gone" once it no longer exists. The provider removes the peer's read
   * access to a namespace together with its contents, so once deletion was asked for (or has been
   * under way for a while), an unreadable replica counts as gone.
   */
  private async remove(
    remote: ClusterClient,
    map: string,
    local: string,
    name: string,
    terminatingSince: number | undefined,
  ): Promise<Outcome> {
    const key = `${map}/${local}`;
    let namespace: V1Namespace;
    try {
      namespace = await remote.core.readNamespace({ name });
    } catch (err) {
      if (isNotFound(err)) {
        this.deleting.delete(key);
        return "gone";
      }
      const asked =
        this.deleting.has(key) || (terminatingSince !== undefined && Date.now() - terminatingSince > 30_000);
      if (statusCode(err) === 403 && asked) {
        this.deleting.delete(key);
        return "gone";
      }
      return { phase: "Terminating", message: `reading namespace ${name}: ${describeError(err)}` };
    }
    if (!this.isOurs(namespace, local)) return "gone";
    if (namespace.metadata?.deletionTimestamp) {
      this.deleting.add(key);
      return { phase: "Terminating" };
    }
    try {
      await remote.core.deleteNamespace({ name });
      this.deleting.add(key);
      return { phase: "Terminating" };
    } catch (err) {
      if (isNotFound(err)) return "gone";
      return { phase: "Terminating", message: `deleting namespace ${name}: ${describeError(err)}` };
    }
  }
}

/** A replica's new status entry, or undefined when the outcome changes nothing. */
function mappingChange(
  before: CurrentMapping | undefined,
  outcome: Exclude<Outcome, "gone">,
  remoteNamespace: string,
): CurrentMapping | undefined {
  if (
    before &&
    before.phase === outcome.phase &&
    before.remoteNamespace === remoteNamespace &&
    (before.message ?? "") === (outcome.message ?? "")
  ) {
    return undefined;
  }
  return {
    remoteNamespace,
    phase: outcome.phase,
    ...(outcome.message ? { message: outcome.message.slice(0, 4000) } : {}),
    lastTransitionTime:
      before?.phase === outcome.phase && before.lastTransitionTime
        ? before.lastTransitionTime
        : formatKubeTime(new Date()),
  };
}
