/**
 * The node agent: the part of storage that touches disks (Vasilenko & Kurapati §4: the Supplier's
 * allocation and the Driver's mount and unlock). It makes each PooledVolume of its node real —
 * sparse file, ext4, loop mount, fscrypt — prepares the data folder of the claim it is given to
 * under that claim's tenant key, scrubs it when it comes back, and destroys it when it is deleted.
 * Everything it does is decided from the PooledVolume's spec and the files on disk, so a kill at any
 * point is repaired by the next reconcile; files of volumes that no longer exist are removed.
 */
import { isDeepStrictEqual } from "node:util";
import type { Logger } from "pino";
import { errorMessage } from "../../common/index.js";
import {
  applyStatusUnlessGone,
  type ClusterClient,
  type Condition,
  Controller,
  objectKey,
  type ReconcileResult,
  reconcileDone,
  removeFinalizer,
  requeueAfter,
  setCondition,
} from "../../kube/index.js";
import { STORAGE_API_VERSION } from "../api/crds.js";
import { KEY_DATA, POOLED_PROVISIONER, VOLUME_FILES_FINALIZER } from "../api/names.js";
import type { PooledVolume, PooledVolumeStatus, VolumeFormat } from "../api/pooled-volume.js";
import type { StorageInformers } from "../informers.js";
import { bytesOf } from "../supplier/sizing.js";
import { type Capability, CapabilityCache, type HostCapabilities } from "./capabilities.js";
import {
  allocateDirectory,
  allocateImage,
  destroyDirectory,
  destroyImage,
  mountImage,
  prepareDirectoryData,
  preparedFor,
  prepareLoopData,
  StoreFullError,
  setupFscrypt,
  VolumeBusyError,
  volumePaths,
  volumesOnStore,
} from "./volume-files.js";

export interface NodeAgentOptions {
  client: ClusterClient;
  informers: StorageInformers;
  /** The provisioner name whose volumes this agent serves. */
  provisioner: string;
  /**
   * The node this agent runs on: it serves the volumes of stores on that node. Undefined: this
   * machine is every node (the embedded default), so it serves every store, node or zone.
   */
  node?: string;
  /** Install Debian's fscrypt package when it is missing (root only). */
  installTools?: boolean;
  /** How often files without a PooledVolume are looked for. Default 60 s. */
  sweepIntervalMs?: number;
  logger: Logger;
  /** Probe results to use instead of trying the machine (shared by several agents in one process). */
  capabilities?: CapabilityCache;
}

/** Why the agent retries a volume it could not make (the machine may change: fscrypt installed, …). */
const CAPABILITY_RETRY_MS = 5 * 60_000;
const SWEEP_KEY = "sweep";

export class NodeAgent {
  private readonly controller: Controller;
  private readonly capabilities: CapabilityCache;
  private readonly sweepIntervalMs: number;
  private readonly logger: Logger;

  constructor(private readonly options: NodeAgentOptions) {
    this.logger = options.logger.child({ component: "storage-node-agent", node: options.node ?? "*" });
    this.sweepIntervalMs = options.sweepIntervalMs ?? 60_000;
    this.capabilities =
      options.capabilities ??
      new CapabilityCache({ installTools: options.installTools ?? false, logger: this.logger });
    this.controller = new Controller({
      name: "storage-node-agent",
      workers: 4,
      logger: this.logger,
      reconcile: (_key, ctx) => (ctx.ref.cluster === SWEEP_KEY ? this.sweep() : this.reconcile(ctx.ref.name)),
    });
    this.controller.watch(options.informers.volumes, (volume) =>
      this.serves(volume) ? [objectKey("volume", undefined, volume.metadata!.name!)] : [],
    );
    // A key Secret that appears late lets the volumes waiting for it go on.
    this.controller.watch(options.informers.keys, (secret) =>
      options.informers.volumes
        .list()
        .filter((v) => this.serves(v) && v.spec.claim?.keySecretName === secret.metadata?.name)
        .map((v) => objectKey("volume", undefined, v.metadata!.name!)),
    );
    this.controller.watch(options.informers.pools, () => []);
  }

  async start(): Promise<void> {
    await this.controller.start();
    this.controller.enqueue(objectKey(SWEEP_KEY, undefined, SWEEP_KEY));
  }

  stop(): Promise<void> {
    return this.controller.stop({ timeoutMs: 10_000 });
  }

  /** Whether this agent serves the volume: its provisioner, and its store on this node (or any, embedded). */
  serves(volume: PooledVolume): boolean {
    if (volume.spec.provisioner !== this.options.provisioner) return false;
    if (this.options.node === undefined) return true;
    return volume.spec.store.node === this.options.node;
  }

  private async reconcile(name: string): Promise<ReconcileResult> {
    const volume = this.options.informers.volumes.get(undefined, name);
    if (!volume || !this.serves(volume)) return reconcileDone();
    if (volume.metadata?.deletionTimestamp) return this.destroy(volume);

    const caps = await this.capabilities.get();
    const status = volume.status ?? {};
    const format = status.format ? { format: status.format } : chooseFormat(volume, caps);
    if ("failed" in format) return this.fail(volume, format.failed, caps);
    // Once a volume is made, whether it is encrypted is a fact of its files, not of the latest probe:
    // an encrypted folder is unlocked even if a probe failed meanwhile, a plain one stays plain.
    const encrypt =
      status.format && status.encrypted !== undefined
        ? status.encrypted
        : format.format === "LoopExt4" && volume.spec.encryption !== "Disabled" && caps.encryption.ok;
    if (format.format === "LoopExt4" && volume.spec.encryption === "Required" && !encrypt)
      return this.fail(volume, caps.encryption as Extract<Capability, { ok: false }>, caps);
    const paths = volumePaths(volume.spec.store.path, name);

    let next: PooledVolumeStatus = { ...status, format: format.format, encrypted: encrypt };
    try {
      if (format.format === "LoopExt4") {
        await allocateImage(paths, bytesOf(volume.spec.size));
        await mountImage(paths);
        if (encrypt) await setupFscrypt(paths);
      } else await allocateDirectory(paths);
    } catch (err) {
      if (err instanceof StoreFullError)
        return this.fail(volume, { ok: false, reason: "StoreFull", message: err.message }, caps);
      throw err;
    }
    next = withCondition(
      next,
      volume,
      "Allocated",
      "True",
      "Allocated",
      allocatedMessage(format.format, volume),
    );
    next.dataPath = format.format === "LoopExt4" ? paths.loopData : paths.dirData;

    const claim = volume.spec.claim;
    const onDisk = await preparedFor(paths, format.format);
    if (onDisk && onDisk !== claim?.uid) {
      // Given back (or given to another claim): scrubbed before anyone sees it again.
      await this.scrub(volume, format.format, paths);
      next = { ...next };
      delete next.preparedFor;
      next = withCondition(
        next,
        volume,
        "Attached",
        "False",
        "Scrubbed",
        "the previous claim's data was destroyed",
      );
    }
    if (claim) {
      let key: Buffer | undefined;
      if (encrypt) {
        key = this.keyOf(claim.keySecretName);
        if (!key) {
          await this.writeStatus(volume, {
            ...withCondition(
              next,
              volume,
              "Attached",
              "False",
              "WaitingForKey",
              `waiting for Secret ${claim.keySecretName}`,
            ),
            phase: "Bound",
          });
          return reconcileDone();
        }
      }
      if (format.format === "LoopExt4") await prepareLoopData(paths, key, claim.keyOwner, claim.uid);
      else await prepareDirectoryData(paths, claim.uid);
      next.preparedFor = claim.uid;
      next.phase = "Bound";
      next = withCondition(
        next,
        volume,
        "Attached",
        "True",
        "Attached",
        `mounted and unlocked for claim ${claim.namespace}/${claim.name}`,
      );
    } else {
      delete next.preparedFor;
      next.phase = "Available";
    }
    next = withCondition(next, volume, ...encryptionCondition(volume, format.format, encrypt, caps));
    delete next.reason;
    delete next.message;
    await this.writeStatus(volume, next);
    return reconcileDone();
  }

  private keyOf(secretName: string): Buffer | undefined {
    const secret = this.options.informers.keys.get(this.options.informers.namespace, secretName);
    const data = secret?.data?.[KEY_DATA];
    if (!data) return undefined;
    const key = Buffer.from(data, "base64");
    return key.length === 32 ? key : undefined;
  }

  /** Destroys the previous claim's data: a fresh filesystem in a fresh sparse file (no old block survives). */
  private async scrub(volume: PooledVolume, format: VolumeFormat, paths: ReturnType<typeof volumePaths>) {
    this.logger.info({ volume: volume.metadata!.name }, "scrubbing a released volume");
    if (format === "LoopExt4") {
      await destroyImage(paths);
      await allocateImage(paths, bytesOf(volume.spec.size));
      await mountImage(paths);
      if (volume.status?.encrypted) await setupFscrypt(paths);
    } else {
      await destroyDirectory(paths);
      await allocateDirectory(paths);
    }
  }

  private async destroy(volume: PooledVolume): Promise<ReconcileResult> {
    const name = volume.metadata!.name!;
    const paths = volumePaths(volume.spec.store.path, name);
    try {
      await destroyImage(paths);
      await destroyDirectory(paths);
    } catch (err) {
      if (err instanceof VolumeBusyError) {
        this.logger.warn({ volume: name, error: err.message }, "volume busy, destroying later");
        return requeueAfter(10_000);
      }
      throw err;
    }
    await removeFinalizer(
      this.options.client.objects,
      { ...volume, apiVersion: STORAGE_API_VERSION, kind: "PooledVolume" },
      VOLUME_FILES_FINALIZER,
    );
    return reconcileDone();
  }

  private async fail(
    volume: PooledVolume,
    why: Extract<Capability, { ok: false }>,
    caps: HostCapabilities,
  ): Promise<ReconcileResult> {
    let next: PooledVolumeStatus = {
      ...(volume.status ?? {}),
      phase: "Failed",
      reason: why.reason,
      message: why.message,
    };
    next = withCondition(next, volume, "Allocated", "False", why.reason, why.message);
    if (!caps.encryption.ok)
      next = withCondition(
        next,
        volume,
        "Encrypted",
        "False",
        caps.encryption.reason,
        caps.encryption.message,
      );
    await this.writeStatus(volume, next);
    return requeueAfter(why.reason === "StoreFull" ? 60_000 : CAPABILITY_RETRY_MS);
  }

  private async writeStatus(volume: PooledVolume, status: PooledVolumeStatus): Promise<void> {
    const next = { ...status, observedGeneration: volume.metadata?.generation ?? 0 };
    if (isDeepStrictEqual(stripUndefined(next), stripUndefined(volume.status ?? {}))) return;
    await applyStatusUnlessGone(this.options.client, {
      apiVersion: STORAGE_API_VERSION,
      kind: "PooledVolume",
      metadata: { name: volume.metadata!.name! },
      status: next,
    });
  }

  /**
   * Removes files no PooledVolume owns: a volume is always recorded before its files are made and
   * its finalizer holds it until they are gone, so files without one are left by a crash (or by a
   * volume deleted while no agent ran). Only stores of pools this agent serves are looked at.
   */
  private async sweep(): Promise<ReconcileResult> {
    const { informers } = this.options;
    const stores = new Map<string, string>();
    for (const pool of informers.pools.list()) {
      if ((pool.spec.provisioner ?? POOLED_PROVISIONER) !== this.options.provisioner) continue;
      for (const store of pool.spec.backingStores)
        if (this.options.node === undefined || store.node === this.options.node)
          stores.set(store.path, store.name);
    }
    for (const volume of informers.volumes.list())
      if (this.serves(volume)) stores.set(volume.spec.store.path, volume.spec.store.name);
    for (const path of stores.keys()) {
      for (const name of await volumesOnStore(path)) {
        if (informers.volumes.get(undefined, name)) continue;
        const paths = volumePaths(path, name);
        try {
          await destroyImage(paths);
          await destroyDirectory(paths);
          this.logger.info(
            { store: path, volume: name },
            "removed the files of a volume that no longer exists",
          );
        } catch (err) {
          this.logger.warn(
            { store: path, volume: name, error: errorMessage(err) },
            "could not remove orphaned files",
          );
        }
      }
    }
    return requeueAfter(this.sweepIntervalMs);
  }
}

function chooseFormat(
  volume: PooledVolume,
  caps: HostCapabilities,
): { format: VolumeFormat } | { failed: Extract<Capability, { ok: false }> } {
  if (caps.loop.ok) return { format: "LoopExt4" };
  if (volume.spec.encryption === "Required") return { failed: caps.loop };
  return { format: "Directory" };
}

function allocatedMessage(format: VolumeFormat, volume: PooledVolume): string {
  return format === "LoopExt4"
    ? `${volume.spec.size} sparse file formatted as ext4 and loop-mounted on store ${volume.spec.store.name}`
    : `a plain folder on store ${volume.spec.store.name} (loop devices unavailable: no size limit)`;
}

function encryptionCondition(
  volume: PooledVolume,
  format: VolumeFormat,
  encrypted: boolean,
  caps: HostCapabilities,
): [string, "True" | "False", string, string] {
  if (encrypted)
    return volume.spec.claim
      ? ["Encrypted", "True", "Encrypted", `fscrypt, key of ${volume.spec.claim.keyOwner}`]
      : [
          "Encrypted",
          "True",
          "Ready",
          "fscrypt is set up; the data folder is encrypted with the claimant's key",
        ];
  if (volume.spec.encryption === "Disabled")
    return ["Encrypted", "False", "Disabled", "the pool asks for no encryption"];
  const why = format === "Directory" ? caps.loop : caps.encryption;
  return why.ok
    ? ["Encrypted", "False", "Unavailable", "encryption is not available"]
    : ["Encrypted", "False", why.reason, `not encrypted (the pool allows it): ${why.message}`];
}

function withCondition(
  status: PooledVolumeStatus,
  volume: PooledVolume,
  type: string,
  conditionStatus: "True" | "False",
  reason: string,
  message: string,
): PooledVolumeStatus {
  return {
    ...status,
    conditions: setCondition(
      status.conditions as Condition[] | undefined,
      {
        type,
        status: conditionStatus,
        reason,
        message,
        observedGeneration: volume.metadata?.generation ?? 0,
      },
      Date.now(),
    ),
  };
}

function stripUndefined(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value));
}
