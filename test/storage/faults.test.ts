/**
 * Faults of pooled storage on the shared home cluster: a backing store whose disk is full, every
 * store exhausted, a storage system killed in the middle of a burst of claims, and machines where
 * encryption (or loop devices) cannot be had. Tests that need a storage system of their own run one
 * in a child process under their own provisioner name, which the shared tenantry leaves alone.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { chown, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { CoreV1Api } from "@kubernetes/client-node";
import { findCondition, silentLogger } from "../../src/kube/index.js";
import { PROCESS_NODE_NAME } from "../../src/localcluster/index.js";
import {
  POOLED_VOLUME_LABEL,
  type PooledVolume,
  probeHost,
  STORAGE_API_VERSION,
  VOLUME_FILES_FINALIZER,
} from "../../src/storage/index.js";
import { testEnvironment } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import {
  boundClaim,
  claim,
  claimEvents,
  core,
  createPool,
  deletePool,
  homeClient,
  hostCommand,
  poolSpec,
  readPool,
  startStorageChild,
  storePath,
  uniqueName,
  volumesOf,
} from "../support/storage.js";

const testProvisioner = () => `storage.tenantry.dev/${uniqueName("test")}`;

describe("pooled storage faults", () => {
  const namespace = uniqueName("storage-faults");
  const client = homeClient();
  const pools: string[] = [];
  let api: CoreV1Api;
  let loopVolumes = false;

  before(async () => {
    api = core();
    await api.createNamespace({ body: { metadata: { name: namespace } } });
    loopVolumes = (await probeHost({ installTools: false, logger: silentLogger })).loop.ok;
  });
  after(async () => {
    await api.deleteNamespace({ name: namespace }).catch(() => {});
    for (const pool of pools) await deletePool(client, pool);
  });

  const newPool = async (name: string, overrides: Parameters<typeof poolSpec>[1]) => {
    pools.push(name);
    await createPool(client, poolSpec(name, overrides), name);
  };

  test("a store whose disk is full: the next store takes the volume", async (t) => {
    if (!loopVolumes)
      return t.skip("no loop volumes here: a Directory volume never fills a disk at allocation");
    const pool = uniqueName("pool");
    // Store a is a real 256 KiB filesystem: formatting a 64 MiB sparse file there runs out of space.
    const tiny = storePath(pool, "a");
    await mkdir(tiny, { recursive: true });
    const mounted = await hostCommand("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", tiny]);
    assert.equal(mounted.code, 0, mounted.stderr);
    try {
      await newPool(pool, {
        warm: { min: 0, max: 0 },
        backingStores: [
          { name: "a", path: tiny, node: PROCESS_NODE_NAME, capacity: "10Gi" },
          { name: "b", path: storePath(pool, "b"), node: PROCESS_NODE_NAME, capacity: "10Gi" },
        ],
      });
      await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("spill", pool) });
      const bound = await boundClaim(api, namespace, "spill", 60_000);
      const pv = await api.readPersistentVolume({ name: bound.spec!.volumeName! });
      assert.equal(pv.metadata?.labels?.[POOLED_VOLUME_LABEL], `claim-${bound.metadata!.uid}-b`);
      const status = await eventually(async () => {
        const s = (await readPool(client, pool)).status;
        const a = s?.stores?.find((store) => store.name === "a");
        assert.equal(a?.exhausted, true, JSON.stringify(s?.stores));
        return s;
      });
      assert.match(status?.stores?.[0]?.reason ?? "", /disk is full/);
      const failed = (await volumesOf(client, pool)).find((v) => v.spec.store.name === "a");
      assert.equal(
        failed?.status?.reason,
        "StoreFull",
        "the failed volume stays as the mark of a full store",
      );
    } finally {
      // The claim's volume stays while the claim holds it, even with its pool gone.
      await api.deleteNamespacedPersistentVolumeClaim({ namespace, name: "spill" }).catch(() => {});
      await deletePool(client, pool);
      await eventually(async () => assert.deepEqual(await volumesOf(client, pool), []));
      await hostCommand("umount", [tiny]);
    }
  });

  test("every store exhausted: the claim stays Pending with an Event saying why, the pool says so too", async () => {
    const pool = uniqueName("pool");
    await newPool(pool, {
      warm: { min: 0, max: 0 },
      backingStores: [{ name: "a", path: storePath(pool, "a"), node: PROCESS_NODE_NAME, capacity: "64Mi" }],
    });
    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("fits", pool) });
    await boundClaim(api, namespace, "fits");
    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("no-room", pool) });
    await eventually(async () => {
      const events = await claimEvents(api, namespace, "no-room");
      assert.ok(
        events.some(
          (e) =>
            e.type === "Warning" &&
            e.reason === "ProvisioningFailed" &&
            (e.message ?? "").includes("no backing store has room for 64Mi: a: 64Mi of 64Mi allocated"),
        ),
        JSON.stringify(events.map((e) => e.message)),
      );
    });
    assert.equal(
      (await api.readNamespacedPersistentVolumeClaim({ namespace, name: "no-room" })).status?.phase,
      "Pending",
    );
    await eventually(async () => {
      const condition = findCondition((await readPool(client, pool)).status?.conditions, "StoresAvailable");
      assert.deepEqual(
        [condition?.status, condition?.reason],
        ["False", "Exhausted"],
        JSON.stringify(condition),
      );
    });
    // Room again (the first claim released): the waiting claim is served.
    await api.deleteNamespacedPersistentVolumeClaim({ namespace, name: "fits" });
    await boundClaim(api, namespace, "no-room", 90_000);
  });

  test("a burst of claims beyond a store's capacity binds exactly what fits, the rest wait saying why", async () => {
    const pool = uniqueName("pool");
    // 512Mi holds eight volumes of 64Mi; twelve claims arrive at once, handled by many workers.
    await newPool(pool, {
      warm: { min: 0, max: 0 },
      backingStores: [{ name: "a", path: storePath(pool, "a"), node: PROCESS_NODE_NAME, capacity: "512Mi" }],
    });
    const names = Array.from({ length: 12 }, (_, i) => `cap-${pool}-${i}`.slice(0, 63));
    await Promise.all(
      names.map((name) => api.createNamespacedPersistentVolumeClaim({ namespace, body: claim(name, pool) })),
    );
    const phases = async () =>
      Promise.all(
        names.map(
          async (name) => (await api.readNamespacedPersistentVolumeClaim({ namespace, name })).status?.phase,
        ),
      );
    await eventually(async () => assert.equal((await phases()).filter((p) => p === "Bound").length, 8), {
      timeoutMs: 120_000,
    });
    await eventually(async () => {
      const events = (await Promise.all(names.map((name) => claimEvents(api, namespace, name)))).flat();
      assert.ok(
        events.some((e) =>
          /no backing store has room for 64Mi: a: 512Mi of 512Mi allocated/.test(e.message ?? ""),
        ),
        JSON.stringify(events.map((e) => e.message)),
      );
    });
    // Still eight after the waiting claims were tried again, and no more allocated than the store holds.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    assert.equal((await phases()).filter((p) => p === "Bound").length, 8);
    const volumes = await volumesOf(client, pool);
    assert.equal(volumes.length, 8, volumes.map((v) => v.metadata?.name).join(", "));
    await Promise.all(names.map((name) => api.deleteNamespacedPersistentVolumeClaim({ namespace, name })));
  });

  test("a storage system killed in the middle of a burst leaves no orphan: the next one finishes the work", async (t) => {
    const provisioner = testProvisioner();
    const pool = uniqueName("pool");
    const store = storePath(pool, "a");
    // Room for the burst, the warm volumes and the ghost below: 4Gi holds 64 volumes of 64Mi.
    await newPool(pool, {
      provisioner,
      warm: { min: 3, max: 10 },
      backingStores: [{ name: "a", path: store, node: PROCESS_NODE_NAME, capacity: "4Gi" }],
    });
    let child = await startStorageChild(provisioner);
    try {
      await eventually(async () => assert.ok((await volumesOf(client, pool)).length >= 3));
      const names = Array.from({ length: 30 }, (_, i) => `burst-${i}`);
      await Promise.all(
        names.map((name) =>
          api.createNamespacedPersistentVolumeClaim({ namespace, body: claim(name, pool) }),
        ),
      );
      // Killed as soon as the first volumes are provisioned, with the rest of the burst mid-way.
      await eventually(
        async () => {
          const pvs = (await api.listPersistentVolume()).items.filter(
            (pv) => pv.spec?.storageClassName === pool,
          );
          assert.ok(pvs.length >= 1);
        },
        { intervalMs: 20 },
      );
      await child.kill("SIGKILL");
      const bound = await Promise.all(
        names.map(
          async (name) => (await api.readNamespacedPersistentVolumeClaim({ namespace, name })).status?.phase,
        ),
      );
      t.diagnostic(`at the kill: ${bound.filter((p) => p === "Bound").length} of 30 claims bound`);

      // What a crash can leave besides: files of no volume, a volume given to a claim deleted meanwhile.
      await mkdir(join(store, "images"), { recursive: true });
      await writeFile(join(store, "images", "ghost.img.partial"), "half-formatted");
      await client.objects.create<PooledVolume>({
        apiVersion: STORAGE_API_VERSION,
        kind: "PooledVolume",
        metadata: {
          name: `claim-00000000-dead-${pool}-a`.slice(0, 250),
          finalizers: [VOLUME_FILES_FINALIZER],
        },
        spec: {
          provisioner,
          pool,
          storageClassName: pool,
          store: { name: "a", path: store, node: PROCESS_NODE_NAME },
          size: "64Mi",
          encryption: "IfAvailable",
          claim: {
            namespace,
            name: "deleted-meanwhile",
            uid: "00000000-dead-0000-0000-000000000000",
            keyOwner: `namespace.${namespace}`,
            keySecretName: `tenantry-volume-key-n-${namespace}`,
          },
        },
      });

      child = await startStorageChild(provisioner);
      const claims = await Promise.all(names.map((name) => boundClaim(api, namespace, name, 120_000))).catch(
        (err: Error) => {
          throw new Error(
            `${err.message}\n--- the restarted storage system's log:\n${child.log().slice(-6000)}`,
          );
        },
      );
      const volumes = await eventually(
        async () => {
          const all = await volumesOf(client, pool);
          const given = all.filter((v) => v.spec.claim);
          assert.equal(given.length, 30, `${given.length} volumes given`);
          assert.ok(
            all.every((v) => v.status?.phase === (v.spec.claim ? "Bound" : "Available")),
            all.map((v) => `${v.metadata?.name}: ${v.status?.phase} ${v.spec.claim?.name ?? "-"}`).join(", "),
          );
          return all;
        },
        { timeoutMs: 90_000 },
      );
      // Exactly one volume per claim, the one its PersistentVolume names.
      const byClaim = new Map(
        volumes.filter((v) => v.spec.claim).map((v) => [v.spec.claim!.uid, v.metadata!.name!]),
      );
      for (const c of claims) {
        const pv = await api.readPersistentVolume({ name: c.spec!.volumeName! });
        assert.equal(
          pv.metadata?.labels?.[POOLED_VOLUME_LABEL],
          byClaim.get(c.metadata!.uid!),
          c.metadata?.name,
        );
      }
      // On disk: the files of exactly these volumes, each mounted once; no ghost, no half-made file.
      await eventually(async () => {
        const loop = (await volumesOf(client, pool))
          .filter((v) => v.status?.format === "LoopExt4")
          .map((v) => `${v.metadata!.name}.img`);
        const images = existsSync(join(store, "images")) ? (await readdir(join(store, "images"))).sort() : [];
        assert.deepEqual(images, loop.sort());
        const mountinfo = await readFile("/proc/self/mountinfo", "utf8");
        const mounted = mountinfo.split("\n").filter((line) => line.includes(` ${join(store, "mounts")}/`));
        assert.equal(mounted.length, loop.length);
      });
    } finally {
      await child.kill();
    }
  });

  test("where encryption cannot be had, the pool says why and Required makes no plain volume", async (t) => {
    if (process.getuid?.() !== 0) return t.skip("needs root to start a storage system as another user");
    // A storage system without root (uid 65534): no loop devices, no encryption. Its kubeconfig and
    // the IfAvailable pool's store are in a folder of its own: the test run's folder is root's alone
    // (mode 0700), so uid 65534 could make no file below it.
    const noRoot = testProvisioner();
    const required = uniqueName("pool");
    const allowed = uniqueName("pool");
    const nobodyDir = await mkdtemp(join(tmpdir(), "tenantry-nobody-"));
    const kubeconfig = join(nobodyDir, "kubeconfig");
    await writeFile(
      kubeconfig,
      await readFile(testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig),
    );
    await chown(nobodyDir, 65534, 65534);
    await chown(kubeconfig, 65534, 65534);
    await newPool(required, { provisioner: noRoot, encryption: "Required", warm: { min: 1, max: 1 } });
    const allowedStore = join(nobodyDir, "store-a");
    await mkdir(allowedStore);
    await chown(allowedStore, 65534, 65534);
    await newPool(allowed, {
      provisioner: noRoot,
      encryption: "IfAvailable",
      warm: { min: 1, max: 1 },
      backingStores: [{ name: "a", path: allowedStore, node: PROCESS_NODE_NAME, capacity: "1Gi" }],
    });
    const nobody = await startStorageChild(noRoot, { uid: 65534, kubeconfig });
    // A child of its own on a loaded machine: its first volumes take a while.
    const slowChild = { timeoutMs: 90_000 };
    const withLog = (err: Error) => {
      throw new Error(`${err.message}\n--- the storage system's log:\n${nobody.log().slice(-6000)}`);
    };
    try {
      await eventually(async () => {
        const conditions = (await readPool(client, required)).status?.conditions;
        const encrypted = findCondition(conditions, "Encrypted");
        assert.deepEqual(
          [encrypted?.status, encrypted?.reason],
          ["False", "NoRoot"],
          JSON.stringify(conditions),
        );
        assert.match(encrypted?.message ?? "", /no volume is made.*uid 65534/);
        assert.equal(findCondition(conditions, "Ready")?.status, "False");
      }, slowChild).catch(withLog);
      const made = await volumesOf(client, required);
      assert.ok(
        made.every((v) => v.status?.phase === "Failed" && !v.status.dataPath),
        "no plain volume",
      );
      await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("must-encrypt", required) });
      await eventually(async () => {
        const events = await claimEvents(api, namespace, "must-encrypt");
        assert.ok(
          events.some((e) => e.reason === "ProvisioningFailed" && /NoRoot/.test(e.message ?? "")),
          JSON.stringify(events.map((e) => e.message)),
        );
      }, slowChild).catch(withLog);
      assert.equal(
        (await api.readNamespacedPersistentVolumeClaim({ namespace, name: "must-encrypt" })).status?.phase,
        "Pending",
      );
      // IfAvailable: plain folders, and the pool says so.
      await eventually(async () => {
        const conditions = (await readPool(client, allowed)).status?.conditions;
        const encrypted = findCondition(conditions, "Encrypted");
        assert.deepEqual(
          [encrypted?.status, encrypted?.reason],
          ["False", "NoRoot"],
          JSON.stringify(conditions),
        );
        assert.match(encrypted?.message ?? "", /not encrypted/);
      }, slowChild).catch(withLog);
      await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("may-be-plain", allowed) });
      const bound = await boundClaim(api, namespace, "may-be-plain", 90_000).catch(withLog);
      const pv = await api.readPersistentVolume({ name: bound.spec!.volumeName! });
      assert.ok(pv.spec?.local?.path?.startsWith(join(allowedStore, "dirs")), pv.spec?.local?.path);
    } finally {
      await nobody.kill();
      await rm(nobodyDir, { recursive: true, force: true });
    }

    // A storage system as root but without the fscrypt tool (and not allowed to install it).
    if (!(await probeHost({ installTools: false, logger: silentLogger })).loop.ok)
      return t.diagnostic("no loop devices here: the missing-fscrypt case is not tried");
    const noFscrypt = testProvisioner();
    const withoutTool = uniqueName("pool");
    await newPool(withoutTool, { provisioner: noFscrypt, encryption: "Required", warm: { min: 1, max: 1 } });
    const bin = await mkdtemp(join(tmpdir(), "tenantry-bin-"));
    for (const [name, target] of [
      ["sh", "/bin/sh"],
      ["mount", "/usr/bin/mount"],
      ["umount", "/usr/bin/umount"],
      ["mkfs.ext4", "/usr/sbin/mkfs.ext4"],
    ])
      await symlink(target!, join(bin, name!));
    const toolless = await startStorageChild(noFscrypt, { path: bin });
    try {
      await eventually(async () => {
        const encrypted = findCondition(
          (await readPool(client, withoutTool)).status?.conditions,
          "Encrypted",
        );
        assert.deepEqual(
          [encrypted?.status, encrypted?.reason],
          ["False", "NoFscrypt"],
          JSON.stringify(encrypted),
        );
        assert.match(encrypted?.message ?? "", /fscrypt is not installed/);
      }, slowChild).catch((err: Error) => {
        throw new Error(`${err.message}\n--- the storage system's log:\n${toolless.log().slice(-6000)}`);
      });
    } finally {
      await toolless.kill();
      await rm(bin, { recursive: true, force: true });
    }
  });
});
