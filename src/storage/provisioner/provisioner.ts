/**
 * The Provisioner (Vasilenko & Kurapati §4): an external provisioner for the classes of tenantry's pools.
 * A claim of such a class gets a ready volume of its pool at once — the volume is given to the claim
 * (PooledVolume spec.claim, a compare-and-swap) and a `local` PersistentVolume on its data folder,
 * pre-bound to the claim, is created; when the pool has none, a volume is allocated on demand on
 * the first backing store with room (on the node the scheduler chose, under WaitForFirstConsumer).
 * A released volume (reclaim policy Delete) is taken back: given back to the pool, where the node
 * agent scrubs it, and its PersistentVolume deleted. Every step is recorded in the PooledVolume
 * first, so a restart at any point continues from there.
 */
import { randomBytes } from "node:crypto";
import type { V1PersistentVolume, V1StorageClass } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  type ClusterClient,
  Controller,
  describeError,
  Expectations,
  isAlreadyExists,
  isConflict,
  isNotFound,
  objectKey,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  statusCode,
} from "../../kube/index.js";
import { STORAGE_API_VERSION } from "../api/crds.js";
import {
  KEY_DATA,
  KEY_OWNER_LABEL,
  POOLED_VOLUME_LABEL,
  PROVISIONED_BY_ANNOTATION,
  SELECTED_NODE_ANNOTATION,
} from "../api/names.js";
import type { ClaimRef, PooledVolume } from "../api/pooled-volume.js";
import type { VolumePool } from "../api/volume-pool.js";
import type { StorageEvents } from "../events.js";
import { BY_CLAIM_UID, BY_CLASS, BY_POOL, type StorageInformers } from "../informers.js";
import type { StorageMetrics } from "../metrics.js";
import type { VolumeLedger } from "../supplier/ledger.js";
import { bytesOf, chooseStore, fitSize, noStoreMessage, onDemandSize, sizeText } from "../supplier/sizing.js";
import { newPooledVolume, storeUses } from "../supplier/stores.js";
import { keyOwnerOf, renderPersistentVolume, storeServesNode, unsupported, volumeNameFor } from "./render.js";

export interface ProvisionerOptions {
  client: ClusterClient;
  informers: StorageInformers;
  provisioner: string;
  events: StorageEvents;
  metrics: StorageMetrics;
  logger: Logger;
  /** The pools' volumes as bin filling sees them, shared with the supplier. */
  ledger: VolumeLedger;
  /** Claims handled at once. Default 16. */
  workers?: number;
}

const CLAIM = "claim";
const PV = "pv";
const VOLUME = "volume";
/** An assignment whose claim and PersistentVolume are both gone is taken back after this long. */
const STALE_ASSIGNMENT_MS = 30_000;
/** Longest the cache may take to show a volume given to a claim. */
const RESERVATION_MS = 5_000;

export class PooledProvisioner {
  private readonly controller: Controller;
  private readonly informers: StorageInformers;
  private readonly logger: Logger;
  /**
   * Ready volumes this provisioner is giving to a claim (by volume name, the claim's uid): ended
   * once the cache shows the volume given (from then the cache speaks for it, and a volume given
   * back later must be free for the next claim at once) or gone.
   */
  private readonly reserved = new Expectations<string>({
    ttlMs: RESERVATION_MS,
    seen: (name) => {
      const volume = this.informers.volumes.get(undefined, name);
      return !volume || !!volume.spec.claim;
    },
  });
  /** When each claim was first seen, for the provisioning-time histogram. */
  private readonly firstSeen = new Map<string, number>();
  private readonly staleSince = new Map<string, number>();
  private unsubscribe?: () => void;

  constructor(private readonly options: ProvisionerOptions) {
    this.informers = options.informers;
    this.logger = options.logger.child({ component: "storage-provisioner" });
    this.controller = new Controller({
      name: "storage-provisioner",
      workers: options.workers ?? 16,
      logger: this.logger,
      reconcile: (_key, ctx) => {
        switch (ctx.ref.cluster) {
          case CLAIM:
            return this.reconcileClaim(ctx.ref.namespace!, ctx.ref.name);
          case PV:
            return this.reconcilePersistentVolume(ctx.ref.name);
          default:
            return this.reconcileVolume(ctx.ref.name);
        }
      },
    });
    const { informers } = this;
    // A claim's or its PersistentVolume's change may leave a volume given to it without use: look again.
    const volumesGivenTo = (uid: string | undefined) =>
      uid
        ? informers.volumes
            .byIndex(BY_CLAIM_UID, uid)
            .filter((v) => v.spec.provisioner === options.provisioner)
            .map((v) => objectKey(VOLUME, undefined, v.metadata!.name!))
        : [];
    this.controller.watch(informers.claims, (claim) => {
      const keys = volumesGivenTo(claim.metadata?.uid);
      if (!claim.spec?.volumeName && claim.status?.phase === "Pending")
        keys.push(objectKey(CLAIM, claim.metadata!.namespace, claim.metadata!.name!));
      return keys;
    });
    this.controller.watch(informers.persistentVolumes, (pv) =>
      pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] === options.provisioner
        ? [objectKey(PV, undefined, pv.metadata!.name!), ...volumesGivenTo(pv.spec?.claimRef?.uid)]
        : [],
    );
    this.controller.watch(informers.volumes, (volume) => {
      if (volume.spec.provisioner !== options.provisioner) return [];
      const keys = [objectKey(VOLUME, undefined, volume.metadata!.name!)];
      const claim = volume.spec.claim;
      if (claim) keys.push(objectKey(CLAIM, claim.namespace, claim.name));
      else if (volume.status?.phase === "Available") keys.push(...this.pendingClaimsOfPool(volume.spec.pool));
      return keys;
    });
    this.controller.watch(informers.classes, (storageClass) =>
      storageClass.provisioner === options.provisioner
        ? this.pendingClaimsOfClass(storageClass.metadata!.name!)
        : [],
    );
    this.controller.watch(informers.pools, (pool) => this.pendingClaimsOfClass(pool.spec.storageClass.name));
    this.controller.watch(informers.nodes, () => []);
    this.controller.watch(informers.namespaces, () => []);
    this.controller.watch(informers.keys, () => []);
  }

  start(): Promise<void> {
    const settle = (volume: PooledVolume) => this.reserved.observe(volume.metadata!.name!);
    this.unsubscribe = this.informers.volumes.addHandler({
      onAdd: settle,
      onUpdate: (_old, volume) => settle(volume),
    });
    return this.controller.start();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    await this.controller.stop({ timeoutMs: 10_000 });
  }

  private pendingClaimsOfClass(className: string): string[] {
    return this.informers.claims
      .byIndex(BY_CLASS, className)
      .filter((c) => !c.spec?.volumeName && c.status?.phase === "Pending")
      .map((c) => objectKey(CLAIM, c.metadata!.namespace, c.metadata!.name!));
  }

  private pendingClaimsOfPool(poolName: string): string[] {
    const pool = this.informers.pools.get(undefined, poolName);
    return pool ? this.pendingClaimsOfClass(pool.spec.storageClass.name) : [];
  }

  private ourClass(name: string | undefined): V1StorageClass | undefined {
    if (!name) return undefined;
    const storageClass = this.informers.classes.get(undefined, name);
    return storageClass?.provisioner === this.options.provisioner ? storageClass : undefined;
  }

  private poolOf(storageClass: V1StorageClass): VolumePool | undefined {
    const named = storageClass.parameters?.pool;
    const pool = named ? this.informers.pools.get(undefined, named) : undefined;
    return pool && pool.spec.storageClass.name === storageClass.metadata!.name ? pool : undefined;
  }

  private async reconcileClaim(namespace: string, name: string): Promise<ReconcileResult> {
    const claim = this.informers.claims.get(namespace, name);
    if (!claim || claim.metadata?.deletionTimestamp) return reconcileDone();
    if (claim.spec?.volumeName || claim.status?.phase !== "Pending") {
      this.firstSeen.delete(claim.metadata!.uid!);
      return reconcileDone();
    }
    const storageClass = this.ourClass(claim.spec?.storageClassName);
    if (!storageClass) return reconcileDone();
    const uid = claim.metadata!.uid!;
    // Its PersistentVolume is made: the PV controller binds it. (Taking another volume now would
    // leave that one given to a claim that never uses it.)
    if (this.informers.persistentVolumes.get(undefined, volumeNameFor(uid))) return reconcileDone();
    if (!this.firstSeen.has(uid)) this.firstSeen.set(uid, performance.now());
    const pool = this.poolOf(storageClass);
    const target = {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      namespace,
      name,
      uid,
    };
    if (!pool) {
      this.options.events.warning(
        target,
        "ProvisioningFailed",
        `no VolumePool serves StorageClass ${storageClass.metadata!.name}`,
      );
      return requeueAfter(30_000);
    }
    const selectedNode = claim.metadata?.annotations?.[SELECTED_NODE_ANNOTATION];
    if (storageClass.volumeBindingMode === "WaitForFirstConsumer" && !selectedNode) return reconcileDone();
    const refused = unsupported(claim);
    if (refused) {
      this.options.events.warning(target, "ProvisioningFailed", refused);
      this.options.metrics.provisioningFailures.inc({ pool: pool.metadata!.name!, reason: "Unsupported" });
      return reconcileDone();
    }

    let volume = this.assignedVolume(uid);
    let source: "pool" | "on_demand" = "pool";
    if (!volume) {
      const owner = keyOwnerOf(namespace, this.informers.namespaces.get(undefined, namespace));
      await this.ensureKey(owner);
      const claimRef: ClaimRef = {
        namespace,
        name,
        uid,
        keyOwner: owner.keyOwner,
        keySecretName: owner.keySecretName,
      };
      const node = selectedNode ? this.informers.nodes.get(undefined, selectedNode) : undefined;
      const eligible = (store: Parameters<typeof storeServesNode>[0]) =>
        storeServesNode(store, node, selectedNode);
      const request = bytesOf(claim.spec!.resources!.requests!.storage!);
      const sizes = pool.spec.sizes.map((s) => bytesOf(s));
      const size = fitSize(request, sizes);
      volume = size === undefined ? undefined : await this.takeWarm(pool, size, eligible, claimRef);
      if (!volume) {
        source = "on_demand";
        const wanted = size ?? onDemandSize(request);
        // No await between choosing the store and the ledger counting the volume on it.
        const uses = storeUses(pool, this.options.ledger.volumesOf(pool.metadata!.name!));
        const store = chooseStore(uses, wanted, eligible);
        if (!store) {
          const where = selectedNode ? `node "${selectedNode}"` : "";
          const message = noStoreMessage(uses, wanted, eligible, where);
          this.options.events.warning(
            target,
            "ProvisioningFailed",
            `pool ${pool.metadata!.name}: ${message}`,
          );
          this.options.metrics.provisioningFailures.inc({ pool: pool.metadata!.name!, reason: "NoRoom" });
          return requeueAfter(30_000);
        }
        volume = await this.allocateOnDemand(pool, store.store, wanted, claimRef);
        this.options.events.normal(
          target,
          "Provisioning",
          `allocating a ${sizeText(wanted)} volume on demand on store ${store.store.name} of pool ${pool.metadata!.name}`,
        );
      }
    } else if (volume.metadata?.name?.startsWith("claim-")) source = "on_demand";

    if (volume.status?.phase === "Failed") return this.volumeFailed(target, pool, volume);
    // The PersistentVolume names the data folder, which exists once the file is allocated.
    if (!volume.status?.dataPath) return reconcileDone();
    const pv = renderPersistentVolume(claim, storageClass, volume, this.options.provisioner);
    try {
      await this.options.client.core.createPersistentVolume({ body: pv });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      return reconcileDone();
    }
    // The reservation stays until the cache shows the volume given to the claim: a reconcile of
    // the same claim before then must find this volume, not take another.
    const started = this.firstSeen.get(uid);
    this.firstSeen.delete(uid);
    if (started !== undefined)
      this.options.metrics.provisionSeconds.observe({ source }, (performance.now() - started) / 1000);
    this.options.metrics.provisioned.inc({ pool: pool.metadata!.name!, source });
    this.options.events.normal(
      target,
      "ProvisioningSucceeded",
      `Successfully provisioned volume ${pv.metadata!.name} (${source === "pool" ? "ready volume" : "allocated on demand"} ${volume.metadata!.name}, store ${volume.spec.store.name}${volume.status.encrypted ? ", encrypted" : ""})`,
    );
    return reconcileDone();
  }

  /** The claim's volume failed: say why; a full store's volume is given back and the next store tried. */
  private async volumeFailed(
    target: Parameters<StorageEvents["warning"]>[0],
    pool: VolumePool,
    volume: PooledVolume,
  ): Promise<ReconcileResult> {
    this.options.events.warning(
      target,
      "ProvisioningFailed",
      `volume ${volume.metadata!.name}: ${volume.status?.reason}: ${volume.status?.message ?? ""}`,
    );
    this.options.metrics.provisioningFailures.inc({
      pool: pool.metadata!.name!,
      reason: volume.status?.reason ?? "Failed",
    });
    if (volume.status?.reason === "StoreFull") {
      // Its store's disk is full: the claim lets go of it (it stays, failed, as the mark that the
      // store is full), and the next try takes the next store.
      await this.giveBack(volume);
      return requeueAfter(1_000);
    }
    return requeueAfter(60_000);
  }

  private assignedVolume(claimUid: string): PooledVolume | undefined {
    const assigned = this.informers.volumes
      .byIndex(BY_CLAIM_UID, claimUid)
      .find((v) => v.spec.provisioner === this.options.provisioner);
    if (assigned) return assigned;
    for (const [name, uid] of this.reserved.pending()) {
      if (uid !== claimUid) continue;
      const volume = this.informers.volumes.get(undefined, name);
      // Not in the cache yet as given to this claim: what we wrote is what it holds.
      if (volume) return volume;
    }
    return undefined;
  }

  /** Gives a ready volume of `size` to the claim (compare-and-swap on its resourceVersion). */
  private async takeWarm(
    pool: VolumePool,
    size: bigint,
    eligible: (store: PooledVolume["spec"]["store"]) => boolean,
    claim: ClaimRef,
  ): Promise<PooledVolume | undefined> {
    const candidates = this.informers.volumes
      .byIndex(BY_POOL, pool.metadata!.name!)
      .filter(
        (v) =>
          v.spec.provisioner === this.options.provisioner &&
          !v.spec.claim &&
          !v.metadata?.deletionTimestamp &&
          v.status?.phase === "Available" &&
          v.status.dataPath &&
          !this.reserved.has(v.metadata!.name!) &&
          bytesOf(v.spec.size) === size &&
          eligible(v.spec.store),
      );
    for (const candidate of candidates) {
      const name = candidate.metadata!.name!;
      this.reserved.expect(name, claim.uid);
      let current: PooledVolume | undefined = candidate;
      // The cache may lag behind the volume's last status write: on a failed swap, look again once.
      for (let attempt = 0; current && attempt < 2; attempt++) {
        try {
          const updated = await this.options.client.objects.jsonPatch<PooledVolume>(
            { apiVersion: STORAGE_API_VERSION, kind: "PooledVolume", metadata: { name } },
            [
              { op: "test", path: "/metadata/resourceVersion", value: current.metadata!.resourceVersion },
              { op: "add", path: "/spec/claim", value: claim },
            ],
          );
          return { ...updated, status: updated.status ?? current.status };
        } catch (err) {
          if (!(isConflict(err) || isNotFound(err) || statusCode(err) === 422)) {
            this.reserved.forget(name);
            throw err;
          }
          current = attempt === 0 && !isNotFound(err) ? await this.readFree(name) : undefined;
        }
      }
      this.reserved.forget(name);
    }
    return undefined;
  }

  /** The volume as stored now, if it is still free and ready. */
  private async readFree(name: string): Promise<PooledVolume | undefined> {
    try {
      const volume = await this.options.client.objects.read<PooledVolume>({
        apiVersion: STORAGE_API_VERSION,
        kind: "PooledVolume",
        metadata: { name },
      });
      const free =
        !volume.spec.claim && !volume.metadata?.deletionTimestamp && volume.status?.phase === "Available";
      return free ? volume : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** A volume made for this claim alone; named after the claim and the store, so that a retry finds it. */
  private async allocateOnDemand(
    pool: VolumePool,
    store: VolumePool["spec"]["backingStores"][number],
    size: bigint,
    claim: ClaimRef,
  ): Promise<PooledVolume> {
    const body = newPooledVolume(pool, store, size, this.options.provisioner, claim);
    return this.options.ledger.create(body, async () => {
      try {
        return await this.options.client.objects.create(body);
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        return (await this.options.client.objects.read(body as never)) as PooledVolume;
      }
    });
  }

  /** The claimant's 32-byte volume key, made once (a random key in a Secret of tenantry's namespace). */
  private async ensureKey(owner: ReturnType<typeof keyOwnerOf>): Promise<void> {
    const { namespace } = this.informers;
    if (this.informers.keys.get(namespace, owner.keySecretName)) return;
    try {
      await this.options.client.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: {
            name: owner.keySecretName,
            namespace,
            labels: { [KEY_OWNER_LABEL]: owner.kind },
            annotations: { [KEY_OWNER_LABEL]: owner.keyOwner },
          },
          type: "Opaque",
          data: { [KEY_DATA]: randomBytes(32).toString("base64") },
        },
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
  }

  /** A released PersistentVolume of ours (reclaim policy Delete): its volume goes back to the pool, then it is deleted. */
  private async reconcilePersistentVolume(name: string): Promise<ReconcileResult> {
    const pv = this.informers.persistentVolumes.get(undefined, name);
    if (!pv || pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] !== this.options.provisioner)
      return reconcileDone();
    if (pv.status?.phase !== "Released" || pv.spec?.persistentVolumeReclaimPolicy !== "Delete")
      return reconcileDone();
    const volumeName = pv.metadata?.labels?.[POOLED_VOLUME_LABEL];
    const volume = volumeName ? this.informers.volumes.get(undefined, volumeName) : undefined;
    if (volume?.spec.claim && volume.spec.claim.uid === pv.spec?.claimRef?.uid) await this.giveBack(volume);
    await this.deletePersistentVolume(pv);
    return reconcileDone();
  }

  /**
   * A volume given to a claim that no longer exists and has no PersistentVolume (a claim deleted
   * while still pending, a restart between the two steps, a Retain volume deleted by hand) is
   * taken back — after a grace period, so that a claim the cache has not shown yet is not mistaken.
   */
  private async reconcileVolume(name: string): Promise<ReconcileResult> {
    const volume = this.informers.volumes.get(undefined, name);
    const claim = volume?.spec.claim;
    if (!volume || !claim || volume.metadata?.deletionTimestamp) {
      this.staleSince.delete(name);
      return reconcileDone();
    }
    const verdict = assignmentState(
      name,
      this.informers.claims.byIndex(BY_CLAIM_UID, claim.uid).length > 0,
      this.informers.persistentVolumes.get(undefined, volumeNameFor(claim.uid)),
    );
    if (verdict === "in-use") {
      this.staleSince.delete(name);
      return reconcileDone();
    }
    if (verdict === "superseded") {
      this.staleSince.delete(name);
      this.logger.info(
        { volume: name, claim: `${claim.namespace}/${claim.name}` },
        "taking back a volume given to a claim whose PersistentVolume is another volume's",
      );
      await this.giveBack(volume);
      return reconcileDone();
    }
    const since = this.staleSince.get(name) ?? Date.now();
    this.staleSince.set(name, since);
    const wait = since + STALE_ASSIGNMENT_MS - Date.now();
    if (wait > 0) return requeueAfter(wait);
    this.staleSince.delete(name);
    this.logger.info(
      { volume: name, claim: `${claim.namespace}/${claim.name}` },
      "taking back a volume whose claim is gone",
    );
    await this.giveBack(volume);
    return reconcileDone();
  }

  private async giveBack(volume: PooledVolume): Promise<void> {
    try {
      await this.options.client.objects.jsonPatch(
        { apiVersion: STORAGE_API_VERSION, kind: "PooledVolume", metadata: { name: volume.metadata!.name! } },
        [
          { op: "test", path: "/spec/claim/uid", value: volume.spec.claim!.uid },
          { op: "remove", path: "/spec/claim" },
        ],
      );
    } catch (err) {
      if (isNotFound(err) || statusCode(err) === 422) return;
      throw err;
    }
  }

  private async deletePersistentVolume(pv: V1PersistentVolume): Promise<void> {
    try {
      await this.options.client.core.deletePersistentVolume({ name: pv.metadata!.name! });
    } catch (err) {
      if (!isNotFound(err)) {
        this.logger.warn(
          { pv: pv.metadata!.name, error: describeError(err) },
          "could not delete a released volume",
        );
        throw err;
      }
    }
  }
}

/**
 * Whether a volume given to a claim is still the claim's: `in-use` while the claim exists and its
 * PersistentVolume (if made) is this volume's; `superseded` when that PersistentVolume is another
 * volume's (the claim got that one: this one is free again at once); `orphaned` when neither the
 * claim nor its PersistentVolume exists (taken back after a grace period, for a lagging cache).
 */
export function assignmentState(
  volumeName: string,
  claimExists: boolean,
  pv: V1PersistentVolume | undefined,
): "in-use" | "superseded" | "orphaned" {
  const pvVolume = pv?.metadata?.labels?.[POOLED_VOLUME_LABEL];
  if (pv && pvVolume !== undefined && pvVolume !== volumeName) return "superseded";
  return claimExists || pv ? "in-use" : "orphaned";
}
