/**
 * Backups of a runtime end to end on the home cluster: an echo runtime on the process node gets a
 * file in its volume; a RuntimeBackup puts its metadata and the volume's data in the test run's
 * versitygw (encrypted, verified) through an agent Job in the runtime's namespace; the runtime is
 * deleted, claim and all; a RuntimeRestore brings the Runtime, its claim and the same bytes back
 * and starts it. An agent killed mid-way fails its backup with the reason, and nothing is lost.
 * A runtime of another cluster is refused with the reason, and a policy says it leaves it alone.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import {
  type BackupPolicy,
  type RuntimeBackup,
  type RuntimeRestore,
  S3ObjectStore,
} from "../../src/backup/index.js";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { type Runtime, runtimePlacement } from "../../src/runtimes/index.js";
import { echoServiceWithVolume, volumeDirOf } from "../support/backups.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { RUNTIMES_API as API, adminCall as call, clusterClient, removeObject } from "../support/runtimes.js";

describe("runtime backups and restores", () => {
  const home = clusterClient();
  const tenant = uniqueName("bkt");
  const user = uniqueName("bob");
  const password = "backup-secret-1";
  const service = uniqueName("echo");
  let identity: BuiltinIdentity;
  let token: string;
  const placed = (instance: string) => runtimePlacement({ tenant, user, service, instance });
  const path = (instance: string) => `/services/${user}/${service}/${instance}`;
  const store = new S3ObjectStore({ ...testEnvironment().objectStore, bucket: "tenantry-backups-home" });

  const readRuntime = (instance: string) =>
    home.objects.read({ apiVersion: API, kind: "Runtime", metadata: placed(instance) }) as Promise<Runtime>;
  const start = async (instance: string) => {
    const posted = await call("POST", path(instance), token, {});
    assert.ok([201, 202].includes(posted.status), JSON.stringify(posted.body));
    await eventually(async () => assert.equal((await readRuntime(instance)).status?.phase, "Running"), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
  };
  const volumeDir = (instance: string) => volumeDirOf(home, placed(instance));
  const create = async <T>(kind: string, instance: string, name: string, spec: object) =>
    (await home.objects.create({
      apiVersion: API,
      kind,
      metadata: { name, namespace: placed(instance).namespace },
      spec,
    } as KubernetesObject)) as T;
  const finished = async <T extends RuntimeBackup | RuntimeRestore>(
    kind: string,
    instance: string,
    name: string,
  ) => {
    let last: T | undefined;
    await eventually(
      async () => {
        last = (await home.objects.read({
          apiVersion: API,
          kind,
          metadata: { name, namespace: placed(instance).namespace },
        })) as T;
        // Always a message: without one, assert builds its own from the source (tens of seconds
        // of CPU under tsx), which stalled this loop past its deadline.
        assert.ok(
          ["Completed", "Failed"].includes(last.status?.phase ?? ""),
          `not finished: ${JSON.stringify(last.status ?? null)}`,
        );
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    return last!;
  };

  before(async () => {
    identity = await sharedBuiltinIdentity();
    await identity.createUser({ name: user, password, tenant, tenantAdmin: false });
    token = (await identity.login({ username: user, password })).token;
    await home.objects.create(echoServiceWithVolume(service));
  });

  after(async () => {
    for (const runtime of (await home.objects.list(API, "Runtime")).items as Runtime[]) {
      if (runtime.spec.service === service) await removeObject(home, runtime);
    }
    await removeObject(home, { apiVersion: API, kind: "RuntimeService", metadata: { name: service } });
    await removeObject(home, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: placed("x").namespace },
    });
    await removeObject(home, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await identity?.deleteUser(user).catch(() => {});
    await stopSharedBuiltinIdentity();
    store.close();
  });

  test("a backup keeps the runtime's metadata and data; deleted, it is restored byte for byte and runs again", async () => {
    await start("one");
    const dir = await volumeDir("one");
    const notes = `written before the backup ${randomBytes(8).toString("hex")}\n`;
    const blob = randomBytes(3 * 1024 * 1024 + 17);
    await writeFile(join(dir, "notes.txt"), notes);
    await writeFile(join(dir, "blob.bin"), blob);

    await create("RuntimeBackup", "one", "one-first", { runtime: placed("one").name });
    const backup = await finished<RuntimeBackup>("RuntimeBackup", "one", "one-first");
    assert.equal(backup.status?.phase, "Completed", JSON.stringify(backup.status));
    assert.equal(backup.status?.volumes?.length, 1);
    assert.equal(backup.status?.volumes?.[0]?.files, 2);
    assert.ok((backup.status?.metadataObjects ?? 0) >= 2, "the Runtime and its claim at least");
    const location = backup.status!.location!;
    assert.ok(location.startsWith(`${tenant}/${user}/${service}/one/one-first`), location);
    const keys = (await store.list(`${location}/`)).map((o) => o.key);
    assert.ok(keys.includes(`${location}/manifest.json`), keys.join(", "));
    assert.ok(keys.includes(`${location}/volumes/${placed("one").name}-data.tar.enc`), keys.join(", "));
    // The agent's Secret with the store's credentials is gone with the backup done.
    await assert.rejects(
      home.core.readNamespacedSecret({ name: "one-first-agent", namespace: placed("one").namespace }),
    );

    // Deleted, claim and all: the backup stays.
    assert.equal((await call("DELETE", path("one"), token)).status, 202);
    await eventually(async () => assert.equal((await call("GET", path("one"), token)).status, 404), {
      timeoutMs: 60_000,
    });
    await eventually(
      () =>
        assert.rejects(
          home.core.readNamespacedPersistentVolumeClaim({
            name: `${placed("one").name}-data`,
            namespace: placed("one").namespace,
          }),
        ),
      { timeoutMs: 60_000 },
    );

    await create("RuntimeRestore", "one", "one-back", { backup: "one-first", startAfter: true });
    const restore = await finished<RuntimeRestore>("RuntimeRestore", "one", "one-back");
    assert.equal(restore.status?.phase, "Completed", JSON.stringify(restore.status));
    await eventually(async () => assert.equal((await readRuntime("one")).status?.phase, "Running"), {
      timeoutMs: 120_000,
    });
    const restored = await volumeDir("one");
    assert.notEqual(restored, dir, "a new volume");
    assert.equal(await readFile(join(restored, "notes.txt"), "utf8"), notes);
    assert.ok((await readFile(join(restored, "blob.bin"))).equals(blob));
  });

  test("an agent killed mid-way fails the backup with the reason; the volume's data is untouched", async () => {
    await start("two");
    const dir = await volumeDir("two");
    const big = randomBytes(160 * 1024 * 1024);
    await writeFile(join(dir, "big.bin"), big);
    await create("RuntimeBackup", "two", "two-killed", { runtime: placed("two").name });
    // The agent is a process of the process node; its command line names the backup's key.
    let killed = false;
    await eventually(
      () => {
        const pids = execFileSync("pgrep", ["-f", "two-killed/volumes/"], { encoding: "utf8" }).trim();
        assert.ok(pids, "the agent runs");
        for (const pid of pids.split("\n")) process.kill(Number(pid), "SIGKILL");
        killed = true;
      },
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    assert.ok(killed);
    const backup = await finished<RuntimeBackup>("RuntimeBackup", "two", "two-killed");
    assert.equal(backup.status?.phase, "Failed");
    assert.equal(backup.status?.reason, "AgentFailed");
    assert.match(backup.status?.message ?? "", /ended before finishing: exit code 137/);
    assert.ok((await readFile(join(dir, "big.bin"))).equals(big));
    assert.equal((await readRuntime("two")).status?.phase, "Running");
  });

  test("an idle runtime is backed up, then stopped; started again it has its data", async () => {
    await start("three");
    const dir = await volumeDir("three");
    await writeFile(join(dir, "idle.txt"), "before going idle\n");
    await home.objects.create({
      apiVersion: API,
      kind: "BackupPolicy",
      metadata: { name: service },
      spec: { service, retention: 3, idle: { timeoutSeconds: 60, action: "Stop" } },
    } as KubernetesObject);
    try {
      await eventually(
        async () => {
          const runtime = await readRuntime("three");
          assert.equal(runtime.spec.desiredState, "Stopped");
          assert.equal(runtime.status?.phase, "Stopped");
        },
        { timeoutMs: 240_000, intervalMs: 2000 },
      );
      const backups = (await home.objects.list(API, "RuntimeBackup", placed("three").namespace))
        .items as RuntimeBackup[];
      const idle = backups.find((b) => b.spec.runtime === placed("three").name && b.spec.trigger === "Idle");
      assert.equal(idle?.status?.phase, "Completed", "stopped only after a completed backup");
      await start("three");
      assert.equal(await readFile(join(await volumeDir("three"), "idle.txt"), "utf8"), "before going idle\n");
    } finally {
      await removeObject(home, { apiVersion: API, kind: "BackupPolicy", metadata: { name: service } });
    }
  });

  test("a runtime of another cluster is refused with the reason; a policy leaves it alone and says so", async () => {
    const remote = uniqueName("edgeecho");
    const kubeconfig = uniqueName("edge-kubeconfig");
    const edge = clusterClient("edge-1");
    const placedRemote = runtimePlacement({ tenant, user, service: remote, instance: "one" });
    await home.core.createNamespacedSecret({
      namespace: "tenantry-system",
      body: {
        metadata: { name: kubeconfig },
        stringData: {
          kubeconfig: readFileSync(
            testEnvironment().clusters.find((c) => c.name === "edge-1")!.kubeconfig,
            "utf8",
          ),
        },
      },
    });
    const serviceObject = echoServiceWithVolume(remote) as KubernetesObject & { spec: object };
    serviceObject.spec = {
      ...serviceObject.spec,
      cluster: { name: "edge-1", kubeconfigSecretRef: { name: kubeconfig } },
    };
    await home.objects.create(serviceObject);
    try {
      await eventually(async () => {
        const posted = await call("POST", `/services/${user}/${remote}/one`, token, {});
        assert.ok([201, 202].includes(posted.status), JSON.stringify(posted.body));
      });
      await eventually(async () => {
        const runtime = (await home.objects.read({
          apiVersion: API,
          kind: "Runtime",
          metadata: placedRemote,
        })) as Runtime;
        assert.equal(runtime.status?.cluster, "edge-1", JSON.stringify(runtime.status));
      });
      await home.objects.create({
        apiVersion: API,
        kind: "RuntimeBackup",
        metadata: { name: "remote-one", namespace: placedRemote.namespace },
        spec: { runtime: placedRemote.name },
      } as KubernetesObject);
      let backup: RuntimeBackup | undefined;
      await eventually(async () => {
        backup = (await home.objects.read({
          apiVersion: API,
          kind: "RuntimeBackup",
          metadata: { name: "remote-one", namespace: placedRemote.namespace },
        })) as RuntimeBackup;
        assert.equal(backup.status?.phase, "Failed", JSON.stringify(backup.status));
      });
      assert.equal(backup!.status?.reason, "RemoteCluster");
      assert.match(backup!.status?.message ?? "", /runs in cluster edge-1, where its claims are/);

      await home.objects.create({
        apiVersion: API,
        kind: "BackupPolicy",
        metadata: { name: remote },
        spec: { service: remote, schedule: "* * * * *", retention: 1, idle: { timeoutSeconds: 60 } },
      } as KubernetesObject);
      const ready = await eventually(
        async () => {
          const policy = (await home.objects.read({
            apiVersion: API,
            kind: "BackupPolicy",
            metadata: { name: remote },
          })) as BackupPolicy;
          const condition = policy.status?.conditions?.find((c) => c.type === "Ready");
          assert.match(condition?.message ?? "", /in cluster edge-1 are neither backed up nor torn down/);
          return condition!;
        },
        { timeoutMs: 60_000 },
      );
      assert.equal(ready.status, "True");
      const backups = (await home.objects.list(API, "RuntimeBackup", placedRemote.namespace))
        .items as RuntimeBackup[];
      assert.deepEqual(
        backups.filter((b) => b.spec.runtime === placedRemote.name).map((b) => b.metadata?.name),
        ["remote-one"],
        "no scheduled backup of it",
      );
    } finally {
      await removeObject(home, { apiVersion: API, kind: "BackupPolicy", metadata: { name: remote } });
      await removeObject(home, { apiVersion: API, kind: "Runtime", metadata: placedRemote });
      await removeObject(home, serviceObject);
      await removeObject(edge, {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: placedRemote.namespace },
      });
      await removeObject(home, {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: kubeconfig, namespace: "tenantry-system" },
      });
    }
  });
});
