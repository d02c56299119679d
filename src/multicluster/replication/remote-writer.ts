/**
 * The writes of provider-kept replicas, through each Peering's client (the peer user: owner of
 * this cluster's tenant in the provider, so admin of its replica namespaces and of nothing else).
 * Each provider's ReplicaSets are listed once per reconcile; what is written is decided from that.
 */
import { createHash } from "node:crypto";
import type { V1Deployment, V1ReplicaSet } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  ClusterClient,
  describeError,
  isNotFound,
  withRequestDeadline,
} from "../../kube/index.js";
import type { NamespaceMap } from "../api/offloading.js";
import type { ReplicatedDeployment } from "../api/replicated-deployment.js";
import { acceptedReplicas } from "../offloading/replicas.js";
import type { PeerClient, PeerClients } from "../peer-clients.js";
import {
  type Placement,
  type PlacementState,
  placementKey,
  remoteReplicaSet,
  remoteSelector,
  replicaHashOf,
  replicaSetAvailable,
} from "./remote-replicas.js";

/** What one provider's replica namespace holds of a ReplicatedDeployment, or why it could not be read. */
interface ProviderInventory {
  remoteNamespace: string;
  sets: V1ReplicaSet[];
  error?: string;
}

export type Inventory = Map<string, ProviderInventory>;

/**
 * Every request to a provider has a deadline: a provider cut off from this cluster fails its
 * replicas' work (retried with backoff) instead of holding the reconcile, and the other providers'.
 */
const PROVIDER_REQUEST_TIMEOUT_MS = 10_000;

export class RemoteReplicaWriter {
  /** Spec hash of what was last applied, by `<peering>/<namespace>/<name>`, with the uid and generation seen. */
  private readonly applied = new Map<string, { specHash: string; uid: string; generation: number }>();

  /** The peering's client, as a copy whose every request is bounded; one per client (a new Secret, a new one). */
  private readonly bounded = new WeakMap<ClusterClient, PeerClient>();

  constructor(
    private readonly peerClients: PeerClients,
    private readonly originClusterId: string,
  ) {}

  private clientFor(peering: string): PeerClient {
    const peer = this.peerClients.clientFor(peering);
    let bounded = this.bounded.get(peer.client);
    if (!bounded) {
      const client = new ClusterClient(`${peer.client.name}-replicas`, peer.client.kubeConfig);
      withRequestDeadline(client.kubeConfig, PROVIDER_REQUEST_TIMEOUT_MS);
      bounded = { ...peer, client };
      this.bounded.set(peer.client, bounded);
    }
    return bounded;
  }

  /** The ReplicaSets of `rd` in every provider holding an accepted replica of its namespace. */
  async inventory(rd: ReplicatedDeployment, maps: readonly NamespaceMap[]): Promise<Inventory> {
    const inventory: Inventory = new Map();
    await Promise.all(
      acceptedReplicas(maps, rd.metadata!.namespace!).map(async (replica) => {
        const entry: ProviderInventory = { remoteNamespace: replica.remoteNamespace, sets: [] };
        inventory.set(replica.peering, entry);
        try {
          const peer = this.clientFor(replica.peering);
          const list = await peer.client.apps.listNamespacedReplicaSet({
            namespace: replica.remoteNamespace,
            labelSelector: remoteSelector(rd.metadata!.name!),
          });
          entry.sets = list.items;
        } catch (err) {
          entry.error = `cluster ${replica.peering}: ${describeError(err)}`;
        }
      }),
    );
    return inventory;
  }

  /**
   * Applies the ReplicaSet of each placement (unless this writer already did and nobody changed it
   * since) and deletes the replica's ReplicaSets of an earlier template once the current one is
   * available, as a Deployment's rollout ends.
   */
  async sync(
    deployment: V1Deployment,
    placements: readonly Placement[],
    inventory: Inventory,
    logger: Logger,
  ): Promise<PlacementState[]> {
    return Promise.all(
      placements.map(async (placement): Promise<PlacementState> => {
        const found = inventory.get(placement.peering);
        if (!found) return { placement, error: `cluster ${placement.peering}: no accepted replica` };
        if (found.error) return { placement, error: found.error };
        try {
          const peer = this.clientFor(placement.peering);
          const account = deployment.spec?.template.spec?.serviceAccountName;
          const wanted = remoteReplicaSet(
            deployment,
            placement,
            this.originClusterId,
            !account ||
              account === "default" ||
              (await accountExists(peer, placement.remoteNamespace, account)),
          );
          const replicaHash = replicaHashOf(wanted);
          const mine = found.sets.filter((s) => replicaHashOf(s) === replicaHash);
          const current = await this.ensure(
            peer,
            wanted,
            mine.find((s) => s.metadata?.name === wanted.metadata!.name),
            logger,
          );
          if (replicaSetAvailable(current)) {
            for (const old of mine.filter((s) => s.metadata?.name !== wanted.metadata!.name))
              await this.delete(peer, old, logger);
          }
          return { placement, current };
        } catch (err) {
          return { placement, error: `cluster ${placement.peering}: ${describeError(err)}` };
        }
      }),
    );
  }

  private async ensure(
    peer: PeerClient,
    wanted: V1ReplicaSet,
    current: V1ReplicaSet | undefined,
    logger: Logger,
  ): Promise<V1ReplicaSet> {
    const key = `${peer.peering}/${wanted.metadata!.namespace}/${wanted.metadata!.name}`;
    const specHash = createHash("sha256").update(JSON.stringify(wanted)).digest("hex");
    const last = this.applied.get(key);
    if (
      current &&
      last?.specHash === specHash &&
      last.uid === current.metadata?.uid &&
      last.generation === current.metadata?.generation
    ) {
      return current;
    }
    const applied = await applyObject(peer.client, wanted);
    this.applied.set(key, {
      specHash,
      uid: applied.metadata!.uid!,
      generation: applied.metadata!.generation ?? 0,
    });
    if (!current) logger.info({ replicaSet: key }, "provider replica created");
    return applied;
  }

  /**
   * Deletes the ReplicaSets of `inventory` that `keep` (by `<peering>/<replica hash>`) does not
   * name; returns the errors by peering. A provider that could not be read is an error only when
   * `everything` must go (otherwise its obsolete ReplicaSets wait for the next reconcile).
   */
  async deleteOthers(
    inventory: Inventory,
    keep: ReadonlySet<string>,
    everything: boolean,
    logger: Logger,
  ): Promise<Record<string, string>> {
    const errors: Record<string, string> = {};
    for (const [peering, found] of inventory) {
      if (found.error) {
        if (everything) errors[peering] = found.error;
        continue;
      }
      const unwanted = found.sets.filter((s) => !keep.has(placementKey(peering, replicaHashOf(s))));
      if (!unwanted.length) continue;
      try {
        const peer = this.clientFor(peering);
        for (const set of unwanted) await this.delete(peer, set, logger);
      } catch (err) {
        errors[peering] = `cluster ${peering}: ${describeError(err)}`;
      }
    }
    return errors;
  }

  /** Deletes one ReplicaSet, that very object (uid precondition), its pods with it. */
  private async delete(peer: PeerClient, set: V1ReplicaSet, logger: Logger): Promise<void> {
    const { name, namespace, uid } = set.metadata!;
    try {
      await peer.client.apps.deleteNamespacedReplicaSet({
        name: name!,
        namespace: namespace!,
        body: { preconditions: { uid: uid! }, propagationPolicy: "Background" },
      });
      logger.info({ replicaSet: `${peer.peering}/${namespace}/${name}` }, "provider replica deleted");
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.applied.delete(`${peer.peering}/${namespace}/${name}`);
  }
}

async function accountExists(peer: PeerClient, namespace: string, name: string): Promise<boolean> {
  try {
    await peer.client.core.readNamespacedServiceAccount({ name, namespace });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}
