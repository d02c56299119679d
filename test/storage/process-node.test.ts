/**
 * Pooled volumes under WaitForFirstConsumer, used by process-backed pods of the shared home
 * cluster: the claim waits for its pod, the pod lands on the store's node, writes real bytes into
 * the volume, and (where root, loop devices and fscrypt allow) those bytes are encrypted at rest
 * with the claimant's key and unreadable once the key is removed.
 */
import assert from "node:assert/strict";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { CoreV1Api } from "@kubernetes/client-node";
import { findCondition } from "../../src/kube/index.js";
import { LOCAL_IMAGES, PROCESS_NODE_NAME, PROCESS_NODE_PLACEMENT } from "../../src/localcluster/index.js";
import {
  POOLED_VOLUME_LABEL,
  SELECTED_NODE_ANNOTATION,
  STORAGE_API_VERSION,
} from "../../src/storage/index.js";
import { eventually } from "../support/eventually.js";
import { podReady, processNodePod } from "../support/process-node.js";
import {
  boundClaim,
  claim,
  core,
  createPool,
  deletePool,
  homeClient,
  hostCommand,
  podWithClaim,
  poolSpec,
  readPool,
  readVolume,
  storePath,
  uniqueName,
  warmVolumes,
} from "../support/storage.js";

describe("pooled volumes of process-backed pods", () => {
  const namespace = uniqueName("storage-pods");
  const client = homeClient();
  const pool = uniqueName("pool");
  let api: CoreV1Api;

  before(async () => {
    api = core();
    await api.createNamespace({ body: { metadata: { name: namespace } } });
    await createPool(
      client,
      poolSpec(pool, {
        storageClass: { name: pool, volumeBindingMode: "WaitForFirstConsumer" },
        warm: { min: 2, max: 4 },
      }),
      pool,
    );
    await warmVolumes(client, pool, 2);
  });
  after(async () => {
    await api.deleteNamespace({ name: namespace }).catch(() => {});
    await deletePool(client, pool);
  });

  test("WaitForFirstConsumer: the claim waits for its pod, then binds on the node the scheduler chose", async () => {
    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("later", pool) });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const waiting = await api.readNamespacedPersistentVolumeClaim({ namespace, name: "later" });
    assert.equal(waiting.status?.phase, "Pending", "no volume before a pod uses the claim");
    assert.equal(waiting.spec?.volumeName, undefined);

    await api.createNamespacedPod({
      namespace,
      body: podWithClaim("consumer", "later", PROCESS_NODE_PLACEMENT),
    });
    const bound = await boundClaim(api, namespace, "later", 60_000);
    assert.equal(bound.metadata?.annotations?.[SELECTED_NODE_ANNOTATION], PROCESS_NODE_NAME);
    const pv = await api.readPersistentVolume({ name: bound.spec!.volumeName! });
    assert.deepEqual(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.[0]?.values, [
      PROCESS_NODE_NAME,
    ]);
    await eventually(
      async () => {
        const pod = await api.readNamespacedPod({ namespace, name: "consumer" });
        assert.equal(pod.spec?.nodeName, PROCESS_NODE_NAME);
        assert.ok(podReady(pod), JSON.stringify(pod.status?.containerStatuses));
      },
      { timeoutMs: 60_000 },
    );
  });

  test("a Jupyter Server on the process node writes into a pooled claim: the bytes are in the volume, encrypted at rest", async (t) => {
    await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("work", pool) });
    const token = "pooled-volume-test";
    await api.createNamespacedPod({
      namespace,
      body: processNodePod(
        "notebook",
        [
          {
            name: "notebook",
            image: LOCAL_IMAGES.jupyter,
            args: ["start-notebook.py", `--ServerApp.token=${token}`],
            ports: [{ name: "http", containerPort: 8888 }],
            readinessProbe: { httpGet: { path: "/api", port: "http" as never }, periodSeconds: 1 },
            // Jupyter's root is the volume mounted at /home/jovyan/work.
            volumeMounts: [{ name: "work", mountPath: "/home/jovyan/work" }],
          },
        ],
        { volumes: [{ name: "work", persistentVolumeClaim: { claimName: "work" } }] },
      ),
    });
    const pod = await eventually(
      async () => {
        const p = await api.readNamespacedPod({ namespace, name: "notebook" });
        assert.ok(podReady(p), JSON.stringify(p.status?.containerStatuses));
        return p;
      },
      { timeoutMs: 300_000, intervalMs: 500 },
    );
    const secret = `pooled and encrypted ${Math.random().toString(36).slice(2)}`;
    const put = await fetch(`http://${pod.status?.podIP}:8888/api/contents/notes.txt`, {
      method: "PUT",
      headers: { Authorization: `token ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({ type: "file", format: "text", content: secret }),
    });
    assert.equal(put.status, 201, await put.text());

    const bound = await api.readNamespacedPersistentVolumeClaim({ namespace, name: "work" });
    const pv = await api.readPersistentVolume({ name: bound.spec!.volumeName! });
    const dataPath = pv.spec!.local!.path;
    assert.equal(await readFile(join(dataPath, "notes.txt"), "utf8"), secret, "the bytes are in the volume");
    const volume = await readVolume(client, pv.metadata!.labels![POOLED_VOLUME_LABEL]!);

    if (volume.status?.encrypted !== true) {
      const why = findCondition((await readPool(client, pool)).status?.conditions, "Encrypted");
      return t.skip(`volumes are not encrypted on this machine: ${why?.reason}: ${why?.message}`);
    }
    assert.equal(findCondition(volume.status.conditions, "Encrypted")?.status, "True");
    assert.equal(volume.spec.claim?.keyOwner, `namespace.${namespace}`);
    const key = await api.readNamespacedSecret({
      namespace: "tenantry-system",
      name: volume.spec.claim!.keySecretName,
    });
    assert.equal(Buffer.from(key.data!.key!, "base64").length, 32, "a 32-byte key per tenant");

    // At rest: neither the text nor the file's name is in the backing file.
    await hostCommand("sync", []);
    const image = await readFile(join(storePath(pool, "a"), "images", `${volume.metadata!.name}.img`));
    assert.equal(image.indexOf(Buffer.from(secret)), -1, "the plaintext is not in the backing file");
    assert.equal(image.indexOf(Buffer.from("notes.txt")), -1, "nor is the file's name");

    // With the key removed (fscrypt lock), names and contents are unreadable through the mount.
    await api.deleteNamespacedPod({ namespace, name: "notebook", gracePeriodSeconds: 1 });
    await eventually(
      () =>
        assert.rejects(
          api.readNamespacedPod({ namespace, name: "notebook" }),
          (e: { code?: number }) => e.code === 404,
        ),
      { timeoutMs: 60_000 },
    );
    const lock = await hostCommand("fscrypt", ["lock", dataPath], {
      ...process.env,
      FSCRYPT_CONF: join(storePath(pool, "a"), "fscrypt.conf"),
    });
    assert.equal(lock.code, 0, lock.stderr);
    const names = await readdir(dataPath);
    assert.ok(!names.includes("notes.txt") && names.length > 0, `locked names: ${names}`);
    await assert.rejects(readFile(join(dataPath, names[0]!)), /ENOKEY|key not available|-126/i);

    // The node agent unlocks it again on its next look at the volume (here: a label change).
    await client.objects.patchRaw(
      {
        apiVersion: STORAGE_API_VERSION,
        kind: "PooledVolume",
        metadata: { name: volume.metadata!.name!, labels: { touched: "yes" } },
      },
      "application/merge-patch+json" as never,
    );
    await eventually(async () => assert.equal(await readFile(join(dataPath, "notes.txt"), "utf8"), secret));
  });

  test("the control: with encryption Disabled the pool says so, and written bytes are plain in the backing file", async (t) => {
    const plain = uniqueName("pool");
    await createPool(client, poolSpec(plain, { encryption: "Disabled", warm: { min: 0, max: 0 } }), plain);
    try {
      await api.createNamespacedPersistentVolumeClaim({ namespace, body: claim("plain", plain) });
      const bound = await boundClaim(api, namespace, "plain");
      const pv = await api.readPersistentVolume({ name: bound.spec!.volumeName! });
      const volume = await eventually(async () => {
        const v = await readVolume(client, pv.metadata!.labels![POOLED_VOLUME_LABEL]!);
        assert.equal(v.status?.phase, "Bound");
        return v;
      });
      if (volume.status?.format !== "LoopExt4")
        return t.skip("no loop volumes here: nothing at rest to compare");
      assert.equal(volume.status.encrypted, false);
      const condition = findCondition((await readPool(client, plain)).status?.conditions, "Encrypted");
      assert.deepEqual([condition?.status, condition?.reason], ["False", "Disabled"]);
      const text = `plain bytes ${Math.random().toString(36).slice(2)}`;
      await writeFile(join(pv.spec!.local!.path, "plain.txt"), text);
      await hostCommand("sync", []);
      const image = await readFile(join(storePath(plain, "a"), "images", `${volume.metadata!.name}.img`));
      assert.notEqual(
        image.indexOf(Buffer.from(text)),
        -1,
        "unencrypted, the text is found in the backing file",
      );
    } finally {
      await api.deleteNamespacedPersistentVolumeClaim({ namespace, name: "plain" }).catch(() => {});
      await deletePool(client, plain);
    }
  });
});
