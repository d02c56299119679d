import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PooledVolume } from "../api/pooled-volume.js";
import type { VolumePool } from "../api/volume-pool.js";
import { chooseStore } from "./sizing.js";
import { newPooledVolume, STORE_FULL_MS, storeUses } from "./stores.js";
import { renderStorageClass } from "./supplier.js";

const NOW = Date.parse("2030-01-01T00:00:00Z");

const pool: VolumePool = {
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "VolumePool",
  metadata: { name: "pool", uid: "pool-uid" },
  spec: {
    storageClass: { name: "fast" },
    sizes: ["1Gi"],
    backingStores: [
      { name: "a", path: "/srv/a", node: "n1", capacity: "2Gi" },
      { name: "b", path: "/srv/b", node: "n2", capacity: "10Gi" },
      { name: "c", path: "/nfs/c", zone: "z1", capacity: "10Gi" },
    ],
    encryption: "IfAvailable",
  },
};

function volumeOn(
  store: string,
  size: string,
  status: PooledVolume["status"] = { phase: "Available" },
): PooledVolume {
  const made = newPooledVolume(pool, pool.spec.backingStores.find((s) => s.name === store)!, 0n, "p/q");
  return { ...made, spec: { ...made.spec, size }, status };
}

describe("backing store use", () => {
  test("volumes count on their store; failed ones take nothing", () => {
    const uses = storeUses(
      pool,
      [
        volumeOn("a", "1Gi"),
        volumeOn("a", "1Gi", { phase: "Bound" }),
        volumeOn("b", "1Gi", { phase: "Failed", reason: "NoFscrypt" }),
      ],
      NOW,
    );
    assert.deepEqual(
      uses.map((u) => [u.store.name, u.volumes, u.allocated, u.capacity, u.fullReason]),
      [
        ["a", 2, 2n * 1024n ** 3n, 2n * 1024n ** 3n, undefined],
        ["b", 0, 0n, 10n * 1024n ** 3n, undefined],
        ["c", 0, 0n, 10n * 1024n ** 3n, undefined],
      ],
    );
    assert.equal(chooseStore(uses, 1024n ** 3n)?.store.name, "b", "a is at capacity, b is next");
  });

  test("a store whose disk was found full is skipped for a while, then tried again", () => {
    const full = (ago: number) =>
      volumeOn("a", "1Gi", {
        phase: "Failed",
        reason: "StoreFull",
        message: "the store's disk is full",
        conditions: [
          {
            type: "Allocated",
            status: "False",
            reason: "StoreFull",
            message: "",
            lastTransitionTime: new Date(NOW - ago).toISOString(),
          },
        ],
      });
    assert.equal(storeUses(pool, [full(1000)], NOW)[0]?.fullReason, "the store's disk is full");
    assert.equal(storeUses(pool, [full(STORE_FULL_MS + 1000)], NOW)[0]?.fullReason, undefined);
  });

  test("a new volume carries its finalizer, the store's place, and its claim when made for one", () => {
    const store = pool.spec.backingStores[2]!;
    const made = newPooledVolume(pool, store, 3n * 1024n ** 3n, "storage.tenantry.dev/pooled", {
      namespace: "ns",
      name: "data",
      uid: "u-1",
      keyOwner: "namespace.ns",
      keySecretName: "tenantry-volume-key-n-ns",
    });
    assert.equal(made.metadata?.name, "claim-u-1-c");
    assert.deepEqual(made.metadata?.finalizers, ["storage.tenantry.dev/files"]);
    assert.deepEqual(made.spec.store, { name: "c", path: "/nfs/c", zone: "z1" });
    assert.equal(made.spec.size, "3Gi");
    assert.equal(made.spec.encryption, "IfAvailable");
    assert.equal(made.spec.claim?.uid, "u-1");
    const warm = newPooledVolume(pool, pool.spec.backingStores[0]!, 1024n ** 3n, "p/q");
    assert.equal(warm.metadata?.generateName, "pool-");
    assert.equal(warm.spec.claim, undefined);
  });

  test("the pool's StorageClass allows the stores' nodes and zones and names the pool", () => {
    const storageClass = renderStorageClass(pool);
    assert.equal(storageClass.provisioner, "storage.tenantry.dev/pooled");
    assert.deepEqual(storageClass.parameters, { pool: "pool" });
    assert.equal(storageClass.volumeBindingMode, "WaitForFirstConsumer");
    assert.equal(storageClass.reclaimPolicy, "Delete");
    assert.deepEqual(storageClass.allowedTopologies, [
      { matchLabelExpressions: [{ key: "kubernetes.io/hostname", values: ["n1", "n2"] }] },
      { matchLabelExpressions: [{ key: "topology.kubernetes.io/zone", values: ["z1"] }] },
    ]);
    assert.equal(storageClass.metadata?.ownerReferences?.[0]?.uid, "pool-uid");
    assert.equal(storageClass.metadata?.annotations, undefined, "not the default class unless asked");
    const byDefault = renderStorageClass({
      ...pool,
      spec: { ...pool.spec, storageClass: { name: "fast", default: true } },
    });
    assert.equal(byDefault.metadata?.annotations?.["storageclass.kubernetes.io/is-default-class"], "true");
  });
});
