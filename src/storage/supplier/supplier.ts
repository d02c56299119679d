/**
 * The Supplier (Vasilenko & Kurapati §4): keeps each pool's StorageClass in place and, for each of its
 * sizes, as many ready volumes as the advisor's forecast asks for, allocated on the pool's backing
 * stores in turn (the node agent makes the files). Volumes beyond the target, of sizes or stores
 * the pool no longer has, or of pools that are gone are destroyed once no claim holds them. The
 * pool's status says how many volumes of each size are ready, what each store holds, whether the
 * volumes are encrypted and, when not, why.
 */
import { isDeepStrictEqual } from "node:util";
import type { V1StorageClass } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  applyStatusUnlessGone,
  type ClusterClient,
  type Condition,
  type ConditionUpdate,
  Controller,
  describeError,
  ignoreNotFound,
  objectKey,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  setCondition,
} from "../../kube/index.js";
import type { Advisor } from "../advisor/advisor.js";
import { STORAGE_API_VERSION } from "../api/crds.js";
import { DEFAULT_CLASS_ANNOTATION, HOSTNAME_LABEL, POOLED_PROVISIONER, ZONE_LABEL } from "../api/names.js";
import type { PooledVolume } from "../api/pooled-volume.js";
import type { VolumePool, VolumePoolStatus } from "../api/volume-pool.js";
import type { StorageInformers } from "../informers.js";
import type { StorageMetrics } from "../metrics.js";
import type { VolumeLedger } from "./ledger.js";
import {
  bytesOf,
  chooseStore,
  demandBySize,
  noStoreMessage,
  type StoreUse,
  sizeText,
  warmPolicy,
  warmTarget,
} from "./sizing.js";
import { newPooledVolume, STORE_FULL_MS, storeUses } from "./stores.js";

export interface SupplierOptions {
  client: ClusterClient;
  informers: StorageInformers;
  advisor: Advisor;
  provisioner: string;
  metrics: StorageMetrics;
  logger: Logger;
  /** The pools' volumes as bin filling sees them, shared with the provisioner. */
  ledger: VolumeLedger;
}

/** Most volumes created or deleted for one pool in one reconcile (the rest follow at once). */
const BATCH = 64;
/** Reasons of failures that come from the machine (no use making more volumes there). */
const MACHINE_REASONS = new Set([
  "NoRoot",
  "NoLoopDevices",
  "NoMkfs",
  "NoFscrypt",
  "LoopMountFailed",
  "EncryptionFailed",
  "EncryptionNotEffective",
]);

type PoolSizeStatus = NonNullable<VolumePoolStatus["sizes"]>[number];

/** What one reconcile did for the pool's sizes: what each has, why a store had no room, whether more are to make. */
interface Supply {
  sizes: PoolSizeStatus[];
  noRoom?: string;
  more: boolean;
}

export class Supplier {
  private readonly controller: Controller;
  private readonly informers: StorageInformers;
  private readonly logger: Logger;
  private unsubscribe?: () => void;

  constructor(private readonly options: SupplierOptions) {
    this.informers = options.informers;
    this.logger = options.logger.child({ component: "storage-supplier" });
    this.controller = new Controller({
      name: "storage-supplier",
      workers: 2,
      logger: this.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx.ref.name),
    });
    const poolKey = (name: string) => [objectKey("pool", undefined, name)];
    this.controller.watch(this.informers.pools, (pool) => poolKey(pool.metadata!.name!));
    this.controller.watch(this.informers.volumes, (volume) =>
      volume.spec.provisioner === options.provisioner ? poolKey(volume.spec.pool) : [],
    );
    this.controller.watch(this.informers.classes, (storageClass) => {
      const owner = storageClass.metadata?.ownerReferences?.find((o) => o.kind === "VolumePool");
      return owner ? poolKey(owner.name) : [];
    });
  }

  async start(): Promise<void> {
    this.unsubscribe = this.options.advisor.onForecast(() => {
      for (const pool of this.informers.pools.list())
        this.controller.enqueue(objectKey("pool", undefined, pool.metadata!.name!));
    });
    await this.controller.start();
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    await this.controller.stop({ timeoutMs: 10_000 });
  }

  private async reconcile(name: string): Promise<ReconcileResult> {
    const pool = this.informers.pools.get(undefined, name);
    // With those created but not in the cache yet: a lagging cache must not buy more volumes.
    const volumes = this.options.ledger
      .volumesOf(name)
      .filter((v) => v.spec.provisioner === this.options.provisioner);
    if (
      !pool ||
      pool.metadata?.deletionTimestamp ||
      (pool.spec.provisioner ?? POOLED_PROVISIONER) !== this.options.provisioner
    ) {
      // A pool that is gone (or not ours any more): its free volumes go; given ones stay until released.
      if (!pool || pool.metadata?.deletionTimestamp)
        await this.deleteVolumes(volumes.filter((v) => !v.spec.claim && !v.metadata?.deletionTimestamp));
      return reconcileDone();
    }
    const now = Date.now();
    const classProblem = await this.ensureStorageClass(pool);

    const sizes = pool.spec.sizes.map((s) => bytesOf(s));
    const misfits = misfitVolumes(pool, volumes, sizes, now);
    await this.deleteVolumes(misfits.slice(0, BATCH));
    const misfitNames = new Set(misfits.map((v) => v.metadata!.name!));
    const live = volumes.filter((v) => !misfitNames.has(v.metadata!.name!) && !v.metadata?.deletionTimestamp);

    const uses = storeUses(pool, live, now);
    const supply = await this.supplySizes(pool, sizes, live, uses, classProblem);

    const smallest = sizes.reduce((a, b) => (b < a ? b : a), sizes[0]!);
    const conditions = [
      storesCondition(uses, smallest),
      encryptionCondition(pool, live),
      readyCondition(classProblem, live, supply),
    ];
    const status = poolStatus(pool, conditions, supply.sizes, storesStatus(uses, smallest), now);
    if (!(await this.writeStatus(pool, status))) return reconcileDone();
    if (supply.more || misfits.length > BATCH) return requeueAfter(100);
    return reconcileDone();
  }

  /** Each of the pool's sizes brought toward its target of ready volumes, in turn. */
  private async supplySizes(
    pool: VolumePool,
    sizes: readonly bigint[],
    live: readonly PooledVolume[],
    uses: StoreUse[],
    classProblem: string | undefined,
  ): Promise<Supply> {
    const demand = demandBySize(this.options.advisor.demand(pool.spec.storageClass.name), sizes);
    const policy = warmPolicy(pool.spec.warm);
    const supply: Supply = { sizes: [], more: false };
    for (const size of sizes) {
      const forecast = demand.get(size) ?? 0;
      const target = classProblem ? 0 : warmTarget(forecast, policy);
      const supplied = await this.supplySize(pool, size, live, uses, forecast, target);
      supply.sizes.push(supplied.status);
      if (supplied.noRoom !== undefined) supply.noRoom = supplied.noRoom;
      supply.more ||= supplied.more;
    }
    return supply;
  }

  /**
   * One size: volumes made up to its target, or its newest ready ones destroyed down to it (at most
   * BATCH either way); what it has, whether no store had room, and whether more are still to make.
   */
  private async supplySize(
    pool: VolumePool,
    size: bigint,
    live: readonly PooledVolume[],
    uses: StoreUse[],
    forecast: number,
    target: number,
  ): Promise<{ status: PoolSizeStatus; noRoom: string | undefined; more: boolean }> {
    const { ready, allocating, failed, stuck, bound } = volumesOfSize(live, size);
    const deficit = target - ready.length - allocating.length - stuck.length;
    let noRoom: string | undefined;
    if (deficit > 0) {
      noRoom = await this.makeVolumes(pool, uses, size, Math.min(deficit, BATCH));
    } else if (ready.length > target) {
      // Fewer are needed now: the newest ready ones go (the oldest have proven their files).
      const surplus = ready
        .sort((a, b) =>
          String(b.metadata?.creationTimestamp).localeCompare(String(a.metadata?.creationTimestamp)),
        )
        .slice(0, Math.min(ready.length - target, BATCH));
      await this.deleteVolumes(surplus);
    }
    const status: PoolSizeStatus = {
      size: sizeText(size),
      ready: ready.length,
      allocating: allocating.length,
      bound,
      failed: failed.length,
      target,
      forecast: forecast.toFixed(2),
    };
    this.recordSize(pool.metadata!.name!, status);
    return { status, noRoom, more: deficit > BATCH };
  }

  /** Up to count volumes of the size, each on the store with room chosen for it; when none has room, why. */
  private async makeVolumes(
    pool: VolumePool,
    uses: StoreUse[],
    size: bigint,
    count: number,
  ): Promise<string | undefined> {
    for (let i = 0; i < count; i++) {
      const chosen = chooseStore(uses, size);
      if (!chosen) return noStoreMessage(uses, size);
      await this.createVolume(pool, chosen.store, size);
      chosen.allocated += size;
      chosen.volumes++;
    }
    return undefined;
  }

  /** A size's volumes by state, and its target, as metrics. */
  private recordSize(pool: string, status: PoolSizeStatus): void {
    for (const state of ["ready", "allocating", "bound", "failed"] as const)
      this.options.metrics.poolVolumes.set({ pool, size: status.size, state }, status[state]);
    this.options.metrics.poolTarget.set({ pool, size: status.size }, status.target);
  }

  /** The pool's status, written when it changed; false when the pool is gone. */
  private async writeStatus(pool: VolumePool, status: VolumePoolStatus): Promise<boolean> {
    if (isDeepStrictEqual(JSON.parse(JSON.stringify(status)), JSON.parse(JSON.stringify(pool.status ?? {}))))
      return true;
    const stored = await applyStatusUnlessGone(this.options.client, {
      apiVersion: STORAGE_API_VERSION,
      kind: "VolumePool",
      metadata: { name: pool.metadata!.name! },
      status,
    });
    return stored !== undefined;
  }

  /**
   * The pool's StorageClass: created, and re-created when a field that cannot change does (binding
   * mode, reclaim policy, allowed topologies). A class of the same name that is not the pool's is
   * left alone and reported.
   */
  private async ensureStorageClass(pool: VolumePool): Promise<string | undefined> {
    const desired = renderStorageClass(pool);
    const name = desired.metadata!.name!;
    const current = this.informers.classes.get(undefined, name);
    if (current) {
      const ownedByPool = current.metadata?.ownerReferences?.some((o) => o.uid === pool.metadata!.uid);
      if (!ownedByPool || current.provisioner !== desired.provisioner)
        return `StorageClass ${name} exists and is not this pool's (provisioner ${current.provisioner}): rename the pool's class or delete that one`;
      const immutable = (c: V1StorageClass) => ({
        parameters: c.parameters ?? {},
        reclaimPolicy: c.reclaimPolicy ?? "Delete",
        volumeBindingMode: c.volumeBindingMode ?? "Immediate",
        allowedTopologies: c.allowedTopologies ?? [],
      });
      if (
        !isDeepStrictEqual(
          JSON.parse(JSON.stringify(immutable(current))),
          JSON.parse(JSON.stringify(immutable(desired))),
        )
      ) {
        this.logger.info(
          { pool: pool.metadata!.name, storageClass: name },
          "re-creating the pool's StorageClass",
        );
        await ignoreNotFound(
          this.options.client.objects.delete({
            apiVersion: "storage.k8s.io/v1",
            kind: "StorageClass",
            metadata: { name },
          }),
        );
      } else if (
        (current.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] ?? "false") ===
        (desired.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] ?? "false")
      )
        return undefined;
    }
    try {
      await applyObject(this.options.client, desired);
    } catch (err) {
      return `StorageClass ${name} could not be written: ${describeError(err)}`;
    }
    return undefined;
  }

  private async createVolume(
    pool: VolumePool,
    store: VolumePool["spec"]["backingStores"][number],
    size: bigint,
  ): Promise<void> {
    const body = newPooledVolume(pool, store, size, this.options.provisioner);
    await this.options.ledger.create(body, (volume) => this.options.client.objects.create(volume));
  }

  private async deleteVolumes(volumes: PooledVolume[]): Promise<void> {
    await Promise.all(
      // A volume still being created has no name yet: the next reconcile sees it.
      volumes
        .filter((volume) => volume.metadata?.name)
        .map(async (volume) => {
          await ignoreNotFound(
            this.options.client.objects.delete({
              apiVersion: STORAGE_API_VERSION,
              kind: "PooledVolume",
              metadata: { name: volume.metadata!.name! },
            }),
          );
        }),
    );
  }
}

/** Volumes that no longer fit the pool's spec, once free. */
function misfitVolumes(
  pool: VolumePool,
  volumes: readonly PooledVolume[],
  sizes: readonly bigint[],
  now: number,
): PooledVolume[] {
  const storeNames = new Set(pool.spec.backingStores.map((s) => `${s.name}\u0000${s.path}`));
  return volumes.filter(
    (v) =>
      !v.spec.claim &&
      !v.metadata?.deletionTimestamp &&
      (!storeNames.has(`${v.spec.store.name}\u0000${v.spec.store.path}`) ||
        (!sizes.includes(bytesOf(v.spec.size)) && v.status?.phase !== "Failed") ||
        (v.status?.reason === "StoreFull" && now - failedAt(v) > STORE_FULL_MS)),
  );
}

/** The size's volumes: the free ones by phase, and how many are bound. */
function volumesOfSize(live: readonly PooledVolume[], size: bigint) {
  const ofSize = live.filter((v) => bytesOf(v.spec.size) === size);
  const free = ofSize.filter((v) => !v.spec.claim);
  const ready = free.filter((v) => v.status?.phase === "Available");
  const allocating = free.filter((v) => !v.status?.phase || v.status.phase === "Allocating");
  // Failures of the machine count as made (more would fail alike); a full store's do not (the next store is tried).
  const failed = free.filter((v) => v.status?.phase === "Failed");
  const stuck = failed.filter((v) => v.status?.reason !== "StoreFull");
  return { ready, allocating, failed, stuck, bound: ofSize.length - free.length };
}

/** Whether a backing store has room for a volume of the smallest size. */
function storesCondition(uses: readonly StoreUse[], smallest: bigint): ConditionUpdate {
  return chooseStore(uses, smallest) !== undefined
    ? { type: "StoresAvailable", status: "True", reason: "Room", message: "a backing store has room" }
    : {
        type: "StoresAvailable",
        status: "False",
        reason: "Exhausted",
        message: noStoreMessage(uses, smallest),
      };
}

/** Ready once the class is the pool's and every size has its target of ready volumes; else the first thing in the way. */
function readyCondition(
  classProblem: string | undefined,
  live: readonly PooledVolume[],
  supply: Supply,
): ConditionUpdate {
  const short = supply.sizes.filter((s) => s.ready < s.target);
  const machine = live.find(
    (v) => v.status?.phase === "Failed" && MACHINE_REASONS.has(v.status.reason ?? ""),
  );
  return classProblem
    ? { type: "Ready", status: "False", reason: "StorageClassConflict", message: classProblem }
    : machine
      ? {
          type: "Ready",
          status: "False",
          reason: machine.status!.reason!,
          message: `volumes cannot be made: ${machine.status!.message ?? ""}`,
        }
      : supply.noRoom
        ? { type: "Ready", status: "False", reason: "Exhausted", message: supply.noRoom }
        : short.length
          ? {
              type: "Ready",
              status: "False",
              reason: "Filling",
              message: short.map((s) => `${s.size}: ${s.ready} of ${s.target} ready`).join(", "),
            }
          : {
              type: "Ready",
              status: "True",
              reason: "Ready",
              message: "every size has its ready volumes",
            };
}

/** What each backing store holds, and whether it is exhausted (full, or no room for the smallest size). */
function storesStatus(uses: readonly StoreUse[], smallest: bigint): NonNullable<VolumePoolStatus["stores"]> {
  return uses.map((use) => {
    const reason =
      use.fullReason ?? (use.allocated + smallest > use.capacity ? "capacity reached" : undefined);
    return {
      name: use.store.name,
      volumes: use.volumes,
      allocated: sizeText(use.allocated),
      capacity: sizeText(use.capacity),
      exhausted: reason !== undefined,
      ...(reason ? { reason } : {}),
    };
  });
}

/** The pool's status: the conditions set on those it has, for the pool's generation. */
function poolStatus(
  pool: VolumePool,
  conditions: readonly ConditionUpdate[],
  sizes: PoolSizeStatus[],
  stores: NonNullable<VolumePoolStatus["stores"]>,
  now: number,
): VolumePoolStatus {
  const generation = pool.metadata?.generation ?? 0;
  let statusConditions = (pool.status?.conditions ?? []) as Condition[];
  for (const condition of conditions)
    statusConditions = setCondition(statusConditions, { ...condition, observedGeneration: generation }, now);
  return { observedGeneration: generation, conditions: statusConditions, sizes, stores };
}

function failedAt(volume: PooledVolume): number {
  const at = Date.parse(
    volume.status?.conditions?.find((c) => c.type === "Allocated")?.lastTransitionTime ?? "",
  );
  return Number.isNaN(at) ? 0 : at;
}

/** The pool's StorageClass: allowed topologies are the stores' nodes and zones, so the scheduler only picks nodes a store serves. */
export function renderStorageClass(pool: VolumePool): V1StorageClass {
  const nodes = [...new Set(pool.spec.backingStores.flatMap((s) => (s.node ? [s.node] : [])))].sort();
  const zones = [...new Set(pool.spec.backingStores.flatMap((s) => (s.zone ? [s.zone] : [])))].sort();
  const allowedTopologies = [
    ...(nodes.length ? [{ matchLabelExpressions: [{ key: HOSTNAME_LABEL, values: nodes }] }] : []),
    ...(zones.length ? [{ matchLabelExpressions: [{ key: ZONE_LABEL, values: zones }] }] : []),
  ];
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: {
      name: pool.spec.storageClass.name,
      ...(pool.spec.storageClass.default ? { annotations: { [DEFAULT_CLASS_ANNOTATION]: "true" } } : {}),
      ownerReferences: [
        {
          apiVersion: STORAGE_API_VERSION,
          kind: "VolumePool",
          name: pool.metadata!.name!,
          uid: pool.metadata!.uid!,
        },
      ],
    },
    provisioner: pool.spec.provisioner ?? POOLED_PROVISIONER,
    parameters: { pool: pool.metadata!.name! },
    reclaimPolicy: pool.spec.storageClass.reclaimPolicy ?? "Delete",
    volumeBindingMode: pool.spec.storageClass.volumeBindingMode ?? "WaitForFirstConsumer",
    allowVolumeExpansion: false,
    allowedTopologies,
  };
}

/** Whether the pool's volumes are encrypted, and when not why (never silent when it was asked for). */
function encryptionCondition(pool: VolumePool, volumes: readonly PooledVolume[]): ConditionUpdate {
  const mode = pool.spec.encryption ?? "Required";
  if (mode === "Disabled")
    return {
      type: "Encrypted",
      status: "False",
      reason: "Disabled",
      message: "the pool asks for no encryption",
    };
  const failed = volumes.find(
    (v) => v.status?.phase === "Failed" && MACHINE_REASONS.has(v.status.reason ?? ""),
  );
  if (failed)
    return {
      type: "Encrypted",
      status: "False",
      reason: failed.status!.reason!,
      message: `encryption is required and not possible here, so no volume is made: ${failed.status!.message ?? ""}`,
    };
  const plain = volumes.find((v) => v.status?.encrypted === false && v.status.phase !== "Failed");
  if (plain) {
    const why = plain.status?.conditions?.find((c) => c.type === "Encrypted");
    return {
      type: "Encrypted",
      status: "False",
      reason: why?.reason ?? "Unavailable",
      message: why?.message ?? "volumes are not encrypted",
    };
  }
  if (volumes.some((v) => v.status?.encrypted === true))
    return {
      type: "Encrypted",
      status: "True",
      reason: "Fscrypt",
      message: "volumes are encrypted with fscrypt, one key per tenant",
    };
  return {
    type: "Encrypted",
    status: "Unknown",
    reason: "NoVolumeYet",
    message: "no volume has been made yet",
  };
}
