import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1PersistentVolumeClaim, V1StorageClass } from "@kubernetes/client-node";
import type { PooledVolume } from "../api/pooled-volume.js";
import { keyOwnerOf, renderPersistentVolume, storeServesNode, unsupported, volumeNameFor } from "./render.js";

const claim = (
  spec: Partial<NonNullable<V1PersistentVolumeClaim["spec"]>> = {},
): V1PersistentVolumeClaim => ({
  metadata: { name: "data", namespace: "team-a", uid: "1234" },
  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } }, ...spec },
});

const volume: PooledVolume = {
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "PooledVolume",
  metadata: { name: "pool-abcde" },
  spec: {
    provisioner: "storage.tenantry.dev/pooled",
    pool: "pool",
    storageClassName: "fast",
    store: { name: "a", path: "/srv/a", node: "node-1" },
    size: "2Gi",
    encryption: "Required",
  },
  status: { phase: "Available", dataPath: "/srv/a/mounts/pool-abcde/data" },
};

const storageClass: V1StorageClass = {
  metadata: { name: "fast" },
  provisioner: "storage.tenantry.dev/pooled",
  reclaimPolicy: "Retain",
};

describe("provisioner rendering", () => {
  test("the PersistentVolume is local on the data folder, pinned to the store's node, pre-bound to the claim", () => {
    const pv = renderPersistentVolume(claim(), storageClass, volume, "storage.tenantry.dev/pooled");
    assert.equal(pv.metadata?.name, volumeNameFor("1234"));
    assert.equal(pv.metadata?.name, "pvc-1234");
    assert.equal(pv.metadata?.labels?.["storage.tenantry.dev/pooled-volume"], "pool-abcde");
    assert.equal(
      pv.metadata?.annotations?.["pv.kubernetes.io/provisioned-by"],
      "storage.tenantry.dev/pooled",
    );
    assert.deepEqual(pv.spec?.local, { path: "/srv/a/mounts/pool-abcde/data" });
    assert.deepEqual(pv.spec?.capacity, { storage: "2Gi" }, "the volume's size, which holds the request");
    assert.equal(pv.spec?.persistentVolumeReclaimPolicy, "Retain", "the class's reclaim policy");
    assert.equal(pv.spec?.storageClassName, "fast");
    assert.deepEqual(pv.spec?.nodeAffinity, {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: ["node-1"] }] },
        ],
      },
    });
    assert.deepEqual(pv.spec?.claimRef, {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      namespace: "team-a",
      name: "data",
      uid: "1234",
    });
  });

  test("a zone store pins the volume to its zone", () => {
    const zoned = {
      ...volume,
      spec: { ...volume.spec, store: { name: "z", path: "/nfs/z", zone: "eu-west-b" } },
    };
    const pv = renderPersistentVolume(claim(), storageClass, zoned, "p/q");
    assert.deepEqual(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions, [
      { key: "topology.kubernetes.io/zone", operator: "In", values: ["eu-west-b"] },
    ]);
  });

  test("the key is the tenant's for a tenant namespace, else the namespace's", () => {
    assert.deepEqual(
      keyOwnerOf("acme-dev", { metadata: { name: "acme-dev", labels: { "tenantry.dev/tenant": "acme" } } }),
      {
        kind: "tenant",
        name: "acme",
        keyOwner: "tenant.acme",
        keySecretName: "tenantry-volume-key-t-acme",
      },
    );
    assert.deepEqual(keyOwnerOf("plain", undefined), {
      kind: "namespace",
      name: "plain",
      keyOwner: "namespace.plain",
      keySecretName: "tenantry-volume-key-n-plain",
    });
  });

  test("a store serves a node when it is that node's or in its zone; Immediate binding takes any", () => {
    const node = { metadata: { name: "n1", labels: { "topology.kubernetes.io/zone": "z1" } } };
    assert.equal(storeServesNode({ node: "n1" }, node, "n1"), true);
    assert.equal(storeServesNode({ node: "n2" }, node, "n1"), false);
    assert.equal(storeServesNode({ zone: "z1" }, node, "n1"), true);
    assert.equal(storeServesNode({ zone: "z2" }, node, "n1"), false);
    assert.equal(storeServesNode({ zone: "z1" }, undefined, "gone"), false, "an unknown node is in no zone");
    assert.equal(storeServesNode({ node: "n2" }, undefined, undefined), true);
  });

  test("claims the pooled provisioner cannot serve are told why", () => {
    assert.equal(unsupported(claim()), undefined);
    assert.equal(unsupported(claim({ accessModes: ["ReadWriteOncePod"] })), undefined);
    assert.match(unsupported(claim({ volumeMode: "Block" })) ?? "", /volumeMode Block is not supported/);
    assert.match(
      unsupported(claim({ accessModes: ["ReadWriteMany"] })) ?? "",
      /ReadWriteMany is not supported/,
    );
    assert.match(unsupported(claim({ selector: { matchLabels: { a: "b" } } })) ?? "", /selector/);
    assert.match(
      unsupported(claim({ dataSource: { kind: "VolumeSnapshot", name: "s" } })) ?? "",
      /data source/,
    );
    assert.match(unsupported(claim({ resources: {} })) ?? "", /requests no storage/);
  });
});
