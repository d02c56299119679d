/**
 * tenantry's pooled storage on the shared home cluster: pools keep ready volumes, claims of their
 * class are bound at once from them or allocated on demand, released volumes are scrubbed and
 * reused, bad pools are refused naming the field. Each test makes its own pool, class and backing
 * stores (in the run's folder), so tests share nothing but the cluster.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { CoreV1Api } from "@kubernetes/client-node";
import { PROCESS_NODE_NAME } from "../../src/localcluster/index.js";
import { POOLED_PROVISIONER, POOLED_VOLUME_LABEL, STORAGE_API_VERSION } from "../../src/storage/index.js";
import { eventually } from "../support/eventually.js";
import {
  boundClaim,
  claim,
  claimEvents,
  core,
  createPool,
  deletePool,
  homeClient,
  poolSpec,
  readPool,
  readVolume,
  storePath,
  uniqueName,
  volumesOf,
  warmVolumes,
} from "../support/storage.js";

describe("pooled storage", () => {
  const namespace = uniqueName("storage");
  const client = homeClient();
  const pools: string[] = [];
  let api: CoreV1Api;

  const newPool = async (overrides: Parameters<typeof poolSpec>[1] = {}) => {
    const name = uniqueName("pool");
    pools.push(name);
    await createPool(client, poolSpec(name, overrides), name);
    return name;
  };

  before(async () => {
    api = core();
    await api.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await api.deleteNamespace({ name: namespace }).catch(() => {});
    for (const pool of pools) await deletePool(client, pool);
  });

  test("a pool keeps ready volumes and its StorageClass; a claim is bound at once to a ready one", async () => {
    const pool = await newPool({ warm: { min: 2, max: 5 } });
    const storageClass = await eventually(() =>
      client.objects.read({
        apiVersion: "storage.k8s.io/v1",
        kind: "StorageClass",
        metadata: { name: pool },
      }),
    );
    assert.equal((storageClass as { provisioner?: string }).provisioner, POOLED_PROVISIONER);
    const ready = await warmVolumes(client, pool, 2);
    const readyNames = new Set(ready.map((v) => v.metadata!.name!));
    for (const volume of ready) {
      assert.ok(volume.status?.dataPath?.startsWith(storePath(pool, "a")), volume.status?.dataPath);
      assert.ok(
        volume.status?.conditions?.some((c) => c.type === "Allocated" && c.status === "True"),
        JSON.stringify(volume.status),
      );
    }
    await eventually(async () => {
      const status = (await readPool(client, pool)).status;
      assert.equal(status?.sizes?.[0]?.ready, 2, JSON.stringify(status));
      assert.equal(status?.sizes?.[0]?.target, 2);
      assert.ok(
        status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        JSON.stringify(status),
      );
    });

    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("warm", pool) });
    const bound = await boundClaim(api, namespace, "warm");
    const pv = await api.readPersistentVolume({ name: bound.spec!.volumeName! });
    const volumeName = pv.metadata?.labels?.[POOLED_VOLUME_LABEL] ?? "";
    assert.ok(readyNames.has(volumeName), `bound to ready volume ${volumeName}`);
    assert.equal(pv.spec?.claimRef?.uid, bound.metadata?.uid);
    assert.equal(pv.spec?.capacity?.storage, "64Mi");
    assert.equal(pv.spec?.persistentVolumeReclaimPolicy, "Delete");
    assert.deepEqual(JSON.parse(JSON.stringify(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms)), [
      {
        matchExpressions: [{ key: "kubernetes.io/hostname", operator: "In", values: [PROCESS_NODE_NAME] }],
      },
    ]);
    const volume = await readVolume(client, volumeName);
    assert.equal(pv.spec?.local?.path, volume.status?.dataPath);
    assert.equal(volume.spec.claim?.uid, bound.metadata?.uid);
    assert.equal(volume.spec.claim?.keyOwner, `namespace.${namespace}`);
    const events = await claimEvents(api, namespace, "warm");
    assert.ok(
      events.some((e) => e.reason === "ProvisioningSucceeded" && /ready volume/.test(e.message ?? "")),
      JSON.stringify(events.map((e) => e.message)),
    );
    // The node agent prepares the claim's data folder; the supplier makes a new ready volume.
    await eventually(async () => {
      assert.ok(existsSync(volume.status!.dataPath!), "the data folder exists");
      assert.equal((await readVolume(client, volumeName)).status?.phase, "Bound");
    });
    await warmVolumes(client, pool, 2);
  });

  test("an empty pool allocates on demand; a claim larger than every size gets its own size", async () => {
    const pool = await newPool({ warm: { min: 0, max: 0 } });
    await eventually(async () => {
      const status = (await readPool(client, pool)).status;
      assert.equal(status?.sizes?.[0]?.target, 0, JSON.stringify(status));
    });
    assert.deepEqual(await volumesOf(client, pool), [], "nothing is pre-allocated");
    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("cold", pool) });
    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("big", pool, "100Mi") });
    const cold = await boundClaim(api, namespace, "cold");
    const big = await boundClaim(api, namespace, "big");
    const coldPv = await api.readPersistentVolume({ name: cold.spec!.volumeName! });
    assert.equal(coldPv.metadata?.labels?.[POOLED_VOLUME_LABEL], `claim-${cold.metadata!.uid}-a`);
    assert.equal(coldPv.spec?.capacity?.storage, "64Mi");
    const bigPv = await api.readPersistentVolume({ name: big.spec!.volumeName! });
    assert.equal(bigPv.spec?.capacity?.storage, "100Mi");
    const events = await claimEvents(api, namespace, "cold");
    assert.ok(
      events.some((e) => e.reason === "Provisioning" && /on demand on store a/.test(e.message ?? "")),
      JSON.stringify(events.map((e) => e.message)),
    );
  });

  test("a released volume is scrubbed and given to the next claim; surplus ones are destroyed", async () => {
    const pool = await newPool({ warm: { min: 1, max: 1 } });
    const [first] = await warmVolumes(client, pool, 1);
    // The supplier destroys the newest of surplus ready volumes (creation times are whole seconds):
    // the replacement made after this claim must be newer than the first volume.
    await sleep(1100);
    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("reuse-1", pool) });
    const bound = await boundClaim(api, namespace, "reuse-1");
    const pvName = bound.spec!.volumeName!;
    const name = (await api.readPersistentVolume({ name: pvName })).metadata!.labels![POOLED_VOLUME_LABEL]!;
    assert.equal(name, first!.metadata!.name);
    const dataPath = first!.status!.dataPath!;
    await eventually(() => assert.ok(existsSync(dataPath)));
    await writeFile(join(dataPath, "secret.txt"), "left by the first claim");
    await warmVolumes(client, pool, 1);

    await api.deleteNamespacedPersistentVolumeClaim({ namespace, name: "reuse-1" });
    await eventually(() =>
      assert.rejects(
        api.readPersistentVolume({ name: pvName }),
        (err: { code?: number }) => err.code === 404,
      ),
    );
    // Given back and scrubbed: no claim, no data; one ready volume too many, so one of the two goes.
    await eventually(async () => {
      const volumes = await volumesOf(client, pool);
      assert.equal(
        volumes.length,
        1,
        volumes.map((v) => `${v.metadata?.name} ${v.status?.phase}`).join(", "),
      );
      assert.equal(volumes[0]!.status?.phase, "Available");
      assert.equal(volumes[0]!.spec.claim, undefined);
    });
    // The provisioner decides from its cache: wait until the pool's status (written from that
    // cache) shows the volume ready again.
    await eventually(async () => {
      const size = (await readPool(client, pool)).status?.sizes?.[0];
      assert.deepEqual([size?.ready, size?.bound], [1, 0], JSON.stringify(size));
    });
    const reused = (await volumesOf(client, pool))[0]!;
    assert.equal(reused.metadata!.name, name, "the volume given back stays, the newer surplus one went");
    assert.ok(!existsSync(join(dataPath, "secret.txt")), "scrubbed");

    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("reuse-2", pool) });
    const second = await boundClaim(api, namespace, "reuse-2");
    const secondPv = await api.readPersistentVolume({ name: second.spec!.volumeName! });
    assert.equal(secondPv.metadata?.labels?.[POOLED_VOLUME_LABEL], reused.metadata!.name);
    await eventually(async () => assert.deepEqual(await readdir(secondPv.spec!.local!.path), []));
  });

  test("bad pools are refused naming the field", async () => {
    const refused = async (overrides: Parameters<typeof poolSpec>[1], pattern: RegExp) => {
      const name = uniqueName("bad");
      await assert.rejects(createPool(client, poolSpec(name, overrides), name), (err: { body?: unknown }) => {
        const message = String((err.body as { message?: string })?.message ?? err.body);
        assert.match(message, pattern);
        return true;
      });
    };
    await refused(
      { backingStores: [{ name: "a", path: "relative/dir", node: PROCESS_NODE_NAME, capacity: "1Gi" }] },
      /spec\.backingStores\[0\]\.path/,
    );
    await refused(
      { backingStores: [{ name: "a", path: "/srv/../etc", node: PROCESS_NODE_NAME, capacity: "1Gi" }] },
      /spec\.backingStores\[0\]\.path.*'\.\.'/,
    );
    await refused(
      { backingStores: [{ name: "a", path: "/srv/a", capacity: "1Gi" }] },
      /spec\.backingStores\[0\].*exactly one of node or zone/,
    );
    await refused(
      { backingStores: [{ name: "a", path: "/srv/a", node: "n", zone: "z", capacity: "1Gi" }] },
      /exactly one of node or zone/,
    );
    await refused(
      { backingStores: [{ name: "a", path: "/srv/a", node: "n", capacity: "0" }] },
      /spec\.backingStores\[0\]\.capacity.*greater than zero/,
    );
    await refused({ sizes: ["0"] }, /spec\.sizes.*greater than zero/);
    await refused({ sizes: [] }, /spec\.sizes/);
    await refused({ warm: { min: 5, max: 2 } }, /spec\.warm\.min.*must not exceed max/);
    await refused({ encryption: "Sometimes" as never }, /spec\.encryption.*Unsupported value/);
    await refused(
      {
        backingStores: [
          { name: "a", path: "/srv/a", node: "n", capacity: "1Gi" },
          { name: "b", path: "/srv/a", node: "n", capacity: "1Gi" },
        ],
      },
      /spec\.backingStores.*share one path/,
    );
    const list = await client.objects.list(STORAGE_API_VERSION, "VolumePool");
    assert.ok(!list.items.some((p) => p.metadata?.name?.startsWith("bad-")), "nothing was stored");
  });

  test("a claim whose first choice fails is told why: unsupported access mode, no pool", async () => {
    const pool = await newPool({ warm: { min: 0, max: 0 } });
    await api.createNamespacedPersistentVolumeClaim({
      namespace,
      body: claim("shared", pool, "64Mi", { accessModes: ["ReadWriteMany"] }),
    });
    await eventually(async () => {
      const events = await claimEvents(api, namespace, "shared");
      assert.ok(
        events.some(
          (e) => e.reason === "ProvisioningFailed" && /ReadWriteMany is not supported/.test(e.message ?? ""),
        ),
        JSON.stringify(events.map((e) => e.message)),
      );
    });
    assert.equal(
      (await api.readNamespacedPersistentVolumeClaim({ namespace, name: "shared" })).status?.phase,
      "Pending",
    );
  });

  test("the files of a volume are gone with it", async () => {
    const pool = await newPool({ warm: { min: 1, max: 1 } });
    const [volume] = await warmVolumes(client, pool, 1);
    const image = join(storePath(pool, "a"), "images", `${volume!.metadata!.name}.img`);
    const isLoop = volume!.status?.format === "LoopExt4";
    if (isLoop) assert.ok(existsSync(image));
    await deletePool(client, pool);
    await eventually(async () => assert.deepEqual(await volumesOf(client, pool), []));
    assert.ok(!existsSync(image), "the sparse file is removed");
    assert.ok(!existsSync(volume!.status!.dataPath!), "the data folder is removed");
    // (Its mount point is unmounted and removed too: nothing is left mounted below the store.)
    const mounts = await readFile("/proc/self/mountinfo", "utf8");
    assert.ok(!mounts.includes(storePath(pool, "a")), "nothing of the store is mounted");
  });
});
