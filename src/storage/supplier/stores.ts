import { STORAGE_API_VERSION } from "../api/crds.js";
import { VOLUME_FILES_FINALIZER } from "../api/names.js";
import type { ClaimRef, PooledVolume } from "../api/pooled-volume.js";
import type { BackingStore, VolumePool } from "../api/volume-pool.js";
import { bytesOf, type StoreUse, sizeText } from "./sizing.js";

/**
 * A new PooledVolume of the pool on `store`: named after its claim when it is made for one (so a
 * retry finds it), else given a generated name. Its finalizer is there from the start: files are
 * only ever made for a volume that holds one.
 */
export function newPooledVolume(
  pool: VolumePool,
  store: BackingStore,
  size: bigint,
  provisioner: string,
  claim?: ClaimRef,
): PooledVolume {
  return {
    apiVersion: STORAGE_API_VERSION,
    kind: "PooledVolume",
    metadata: {
      ...(claim
        ? { name: `claim-${claim.uid}-${store.name}` }
        : { generateName: `${pool.metadata!.name!.slice(0, 200)}-` }),
      finalizers: [VOLUME_FILES_FINALIZER],
    },
    spec: {
      provisioner,
      pool: pool.metadata!.name!,
      storageClassName: pool.spec.storageClass.name,
      store: {
        name: store.name,
        path: store.path,
        ...(store.node ? { node: store.node } : { zone: store.zone! }),
      },
      size: sizeText(size),
      encryption: pool.spec.encryption ?? "Required",
      ...(claim ? { claim } : {}),
    },
  };
}

/** How long a store whose disk was found full is skipped. */
export const STORE_FULL_MS = 10 * 60_000;

/**
 * Each backing store of the pool, in the pool's order, with what its volumes take (a failed volume
 * has no file and takes nothing) and whether its disk was recently found full.
 */
export function storeUses(pool: VolumePool, volumes: readonly PooledVolume[], now = Date.now()): StoreUse[] {
  return pool.spec.backingStores.map((store) => {
    let allocated = 0n;
    let count = 0;
    let fullReason: string | undefined;
    for (const volume of volumes) {
      if (volume.spec.store.name !== store.name || volume.spec.store.path !== store.path) continue;
      if (volume.status?.phase === "Failed") {
        if (volume.status.reason === "StoreFull") {
          const at = Date.parse(
            volume.status.conditions?.find((c) => c.type === "Allocated")?.lastTransitionTime ?? "",
          );
          if (Number.isNaN(at) || now - at < STORE_FULL_MS) fullReason = volume.status.message ?? "disk full";
        }
        continue;
      }
      allocated += bytesOf(volume.spec.size);
      count++;
    }
    return {
      store,
      capacity: bytesOf(store.capacity),
      allocated,
      volumes: count,
      ...(fullReason ? { fullReason } : {}),
    };
  });
}
