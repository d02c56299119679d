/**
 * Idle teardown with action Delete, end to end on the home cluster with real bytes: an echo
 * runtime on the process node has files in its volume; idle, it is stopped, backed up (verified)
 * and its claim, Secrets and ConfigMaps are removed while its Runtime stays, Stopped with the
 * reason. Started again through the Admin API, the start's progress events show the restore
 * before it runs. A restore from a corrupted object fails that start with the reason and changes
 * nothing in the backup; the next start, with the object whole again, brings the same bytes back.
 * A teardown whose backup agent is killed mid-way removes nothing: the runtime stays stopped with
 * its claim and says why, and its next start resumes with the same data. A policy's cron schedule
 * backs a runtime up at each slot and keeps `retention` of them.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { type BackupPolicy, type RuntimeBackup, S3ObjectStore } from "../../src/backup/index.js";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { RUNTIME_LABEL, type Runtime, runtimePlacement } from "../../src/runtimes/index.js";
import { echoServiceWithVolume, volumeDirOf } from "../support/backups.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { RUNTIMES_API as API, adminCall as call, clusterClient, removeObject } from "../support/runtimes.js";

interface ProgressEvent {
  phase: string;
  message: string;
  ready: boolean;
  failed: boolean;
  steps: { name: string; state: string; message?: string }[];
}

describe("idle teardown that deletes, the restore at the next start, and schedules", () => {
  const home = clusterClient();
  const tenant = uniqueName("bkd");
  const user = uniqueName("dora");
  const password = "teardown-secret-1";
  const service = uniqueName("echo");
  const scheduled = uniqueName("sched");
  const faulty = uniqueName("faulty");
  const unusable = uniqueName("never");
  let identity: BuiltinIdentity;
  let token: string;
  const placed = runtimePlacement({ tenant, user, service, instance: "one" });
  const placedScheduled = runtimePlacement({ tenant, user, service: scheduled, instance: "one" });
  const placedFaulty = runtimePlacement({ tenant, user, service: faulty, instance: "one" });
  const path = `/services/${user}/${service}/one`;
  const store = new S3ObjectStore({ ...testEnvironment().objectStore, bucket: "tenantry-backups-home" });

  const readRuntime = () =>
    home.objects.read({ apiVersion: API, kind: "Runtime", metadata: placed }) as Promise<Runtime>;
  const claims = async () =>
    (
      await home.core.listNamespacedPersistentVolumeClaim({
        namespace: placed.namespace,
        labelSelector: `${RUNTIME_LABEL}=${placed.name}`,
      })
    ).items;
  const volumeDir = () => volumeDirOf(home, placed);
  /** POSTs a start and follows its progress stream to its end (ready, or failed). */
  const startAndFollow = async (): Promise<ProgressEvent[]> => {
    const posted = await call("POST", path, token, {});
    assert.ok([201, 202].includes(posted.status), JSON.stringify(posted.body));
    // The stream ends at once on what the Admin API's cache still holds of the last start.
    await eventually(async () => {
      const { body } = await call("GET", path, token);
      const view = (body.runtime ?? body) as { desiredState: string; phase: string };
      assert.equal(view.desiredState, "Running");
      assert.notEqual(view.phase, "Failed");
    });
    const res = await fetch(`${testEnvironment().tenantry.runtimesAdminUrl}${path}/progress`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    return (await res.text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => JSON.parse(e.slice(6)) as ProgressEvent);
  };
  const volumesStep = (events: ProgressEvent[]) =>
    events.map((e) => e.steps.find((s) => s.name === "Volumes")?.message ?? "");

  before(async () => {
    identity = await sharedBuiltinIdentity();
    await identity.createUser({ name: user, password, tenant, tenantAdmin: false });
    token = (await identity.login({ username: user, password })).token;
    await home.objects.create(echoServiceWithVolume(service));
    await home.objects.create(echoServiceWithVolume(scheduled));
    await home.objects.create(echoServiceWithVolume(faulty));
  });

  after(async () => {
    for (const name of [service, scheduled, unusable, faulty])
      await removeObject(home, { apiVersion: API, kind: "BackupPolicy", metadata: { name } });
    await removeObject(home, { apiVersion: API, kind: "Runtime", metadata: placed });
    await removeObject(home, { apiVersion: API, kind: "Runtime", metadata: placedScheduled });
    await removeObject(home, { apiVersion: API, kind: "Runtime", metadata: placedFaulty });
    for (const name of [service, scheduled, faulty])
      await removeObject(home, { apiVersion: API, kind: "RuntimeService", metadata: { name } });
    await removeObject(home, { apiVersion: "v1", kind: "Namespace", metadata: { name: placed.namespace } });
    await removeObject(home, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await identity?.deleteUser(user).catch(() => {});
    await stopSharedBuiltinIdentity();
    store.close();
  });

  test("idle, it is backed up and its claim removed; started again, its data is restored first", async () => {
    const posted = await call("POST", path, token, {});
    assert.ok([201, 202].includes(posted.status), JSON.stringify(posted.body));
    await eventually(async () => assert.equal((await readRuntime()).status?.phase, "Running"), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    const dir = await volumeDir();
    const notes = `written before going idle ${randomBytes(8).toString("hex")}\n`;
    const blob = randomBytes(2 * 1024 * 1024 + 5);
    await writeFile(join(dir, "notes.txt"), notes);
    await writeFile(join(dir, "blob.bin"), blob);

    await home.objects.create({
      apiVersion: API,
      kind: "BackupPolicy",
      metadata: { name: service },
      spec: { service, retention: 1, idle: { timeoutSeconds: 60, action: "Delete" } },
    } as KubernetesObject);

    // Torn down: stopped, backed up, its claim gone; the Runtime stays and says why.
    const tornDown = await eventually(
      async () => {
        const runtime = await readRuntime();
        assert.equal(runtime.status?.phase, "Stopped", JSON.stringify(runtime.status));
        assert.equal(runtime.status?.reason, "IdleTornDown", runtime.status?.message);
        assert.deepEqual(await claims(), []);
        return runtime;
      },
      { timeoutMs: 300_000, intervalMs: 2000 },
    );
    assert.match(tornDown.status?.message ?? "", /backed up to .* \(verified\)/);
    const backupName = tornDown.metadata!.annotations!["tenantry.dev/restore-from"]!;
    const backup = (await home.objects.read({
      apiVersion: API,
      kind: "RuntimeBackup",
      metadata: { name: backupName, namespace: placed.namespace },
    })) as RuntimeBackup;
    assert.equal(backup.status?.phase, "Completed", "removed only after a completed, verified backup");
    assert.equal(backup.spec.trigger, "Idle");
    const listed = await call("GET", path, token);
    assert.equal(listed.status, 503);
    assert.equal(listed.body.reason, "IdleTornDown");

    // A restore from a corrupted object fails the start with the reason; the backup is kept.
    const key = backup.status!.volumes![0]!.key;
    const chunks: Buffer[] = [];
    for await (const chunk of await store.get(key)) chunks.push(chunk as Buffer);
    const whole = Buffer.concat(chunks);
    const corrupted = Buffer.from(whole);
    corrupted[corrupted.length >> 1] = corrupted[corrupted.length >> 1]! ^ 0xff;
    await store.put(key, corrupted);
    const failed = await startAndFollow();
    const last = failed.at(-1)!;
    assert.equal(last.failed, true, JSON.stringify(failed));
    const runtimeAfterFailure = await readRuntime();
    assert.equal(runtimeAfterFailure.status?.reason, "RestoreFailed");
    assert.match(runtimeAfterFailure.status?.message ?? "", /SHA-256 differs|authenticate/);
    assert.ok(
      volumesStep(failed).some((m) => m.startsWith(`restoring from backup ${backupName}`)),
      JSON.stringify(failed),
    );
    assert.equal(
      (await readRuntime()).metadata?.annotations?.["tenantry.dev/restore-from"],
      backupName,
      "the next start restores from the same backup",
    );

    // Whole again: the next start restores the same bytes before the runtime runs.
    await store.put(key, whole);
    const events = await startAndFollow();
    assert.equal(events.at(-1)?.ready, true, JSON.stringify(events));
    const restoring = volumesStep(events).findIndex((m) =>
      m.startsWith(`restoring from backup ${backupName}`),
    );
    assert.ok(restoring >= 0, JSON.stringify(events));
    assert.ok(
      events.slice(0, restoring + 1).every((e) => !e.ready),
      "the restore is shown before the runtime is ready",
    );
    const runtime = await readRuntime();
    assert.equal(runtime.status?.phase, "Running");
    assert.equal(runtime.metadata?.annotations?.["tenantry.dev/restore-from"], undefined);
    assert.equal(runtime.metadata?.annotations?.["tenantry.dev/start-gate"], undefined);
    const restored = await volumeDir();
    assert.notEqual(restored, dir, "a new volume");
    assert.equal(await readFile(join(restored, "notes.txt"), "utf8"), notes);
    assert.ok((await readFile(join(restored, "blob.bin"))).equals(blob));
  });

  test("a teardown whose backup agent is killed removes nothing; the runtime says why and resumes with its data", async () => {
    const faultyPath = `/services/${user}/${faulty}/one`;
    const readFaulty = () =>
      home.objects.read({ apiVersion: API, kind: "Runtime", metadata: placedFaulty }) as Promise<Runtime>;
    assert.ok([201, 202].includes((await call("POST", faultyPath, token, {})).status));
    await eventually(async () => assert.equal((await readFaulty()).status?.phase, "Running"), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    const dir = await volumeDirOf(home, placedFaulty);
    const big = randomBytes(160 * 1024 * 1024);
    await writeFile(join(dir, "big.bin"), big);
    await home.objects.create({
      apiVersion: API,
      kind: "BackupPolicy",
      metadata: { name: faulty },
      spec: { service: faulty, retention: 1, idle: { timeoutSeconds: 60, action: "Delete" } },
    } as KubernetesObject);
    // The agent is a process of the process node; its command line names the backup's key.
    await eventually(
      () => {
        const pids = execFileSync("pgrep", ["-f", `${placedFaulty.name}-idle-[0-9]+/volumes/`], {
          encoding: "utf8",
        }).trim();
        assert.ok(pids, "the agent runs");
        for (const pid of pids.split("\n")) process.kill(Number(pid), "SIGKILL");
      },
      { timeoutMs: 300_000, intervalMs: 100 },
    );
    const stopped = await eventually(
      async () => {
        const runtime = await readFaulty();
        assert.equal(runtime.status?.reason, "IdleBackupFailed", JSON.stringify(runtime.status));
        return runtime;
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    assert.equal(stopped.status?.phase, "Stopped");
    assert.match(stopped.status?.message ?? "", /AgentFailed: .*exit code 137.*its volumes were kept/);
    assert.equal(stopped.metadata?.annotations?.["tenantry.dev/restore-from"], undefined);
    const kept = await home.core.listNamespacedPersistentVolumeClaim({
      namespace: placedFaulty.namespace,
      labelSelector: `${RUNTIME_LABEL}=${placedFaulty.name}`,
    });
    assert.equal(kept.items.length, 1, "its claim is kept");
    assert.ok((await readFile(join(dir, "big.bin"))).equals(big));

    // Started again: nothing to restore, the same volume.
    assert.ok([201, 202].includes((await call("POST", faultyPath, token, {})).status));
    await eventually(async () => assert.equal((await call("GET", faultyPath, token)).status, 200), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    const resumed = await readFaulty();
    assert.equal(resumed.metadata?.annotations?.["tenantry.dev/idle-teardown"], undefined);
    assert.equal(resumed.metadata?.annotations?.["tenantry.dev/start-gate"], undefined);
    assert.equal(await volumeDirOf(home, placedFaulty), dir, "the same volume");
    // No teardown again while this test ends.
    await removeObject(home, { apiVersion: API, kind: "BackupPolicy", metadata: { name: faulty } });
  });

  test("a cron schedule backs each runtime up at every slot, keeping as many as its retention", async () => {
    const posted = await call("POST", `/services/${user}/${scheduled}/one`, token, {});
    assert.ok([201, 202].includes(posted.status), JSON.stringify(posted.body));
    await eventually(
      async () =>
        assert.equal(
          (
            (await home.objects.read({
              apiVersion: API,
              kind: "Runtime",
              metadata: placedScheduled,
            })) as Runtime
          ).status?.phase,
          "Running",
        ),
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    await writeFile(join(await volumeDirOf(home, placedScheduled), "kept.txt"), "on schedule\n");
    await home.objects.create({
      apiVersion: API,
      kind: "BackupPolicy",
      metadata: { name: scheduled },
      spec: { service: scheduled, schedule: "* * * * *", retention: 1 },
    } as KubernetesObject);
    await home.objects.create({
      apiVersion: API,
      kind: "BackupPolicy",
      metadata: { name: unusable },
      spec: { service: unusable, schedule: "61 * * * *", retention: 1 },
    } as KubernetesObject);
    const scheduledBackups = async () =>
      (
        (await home.objects.list(API, "RuntimeBackup", placedScheduled.namespace)).items as RuntimeBackup[]
      ).filter((b) => b.spec.runtime === placedScheduled.name && b.spec.trigger === "Scheduled");
    const first = await eventually(
      async () => {
        const done = (await scheduledBackups()).filter((b) => b.status?.phase === "Completed");
        assert.equal(done.length, 1, JSON.stringify((await scheduledBackups()).map((b) => b.status)));
        return done[0]!;
      },
      { timeoutMs: 180_000, intervalMs: 2000 },
    );
    assert.equal(first.status?.volumes?.[0]?.files, 1);
    // The next slot's backup replaces it (retention 1), objects in the store and all.
    await eventually(
      async () => {
        const all = await scheduledBackups();
        const done = all.filter((b) => b.status?.phase === "Completed");
        assert.equal(done.length, 1, JSON.stringify(all.map((b) => [b.metadata?.name, b.status?.phase])));
        assert.notEqual(done[0]!.metadata?.name, first.metadata?.name);
        assert.ok(!all.some((b) => b.metadata?.name === first.metadata?.name), "the first is deleted");
      },
      { timeoutMs: 180_000, intervalMs: 2000 },
    );
    assert.deepEqual(await store.list(`${first.status!.location}/`), []);
    const policy = (await home.objects.read({
      apiVersion: API,
      kind: "BackupPolicy",
      metadata: { name: scheduled },
    })) as BackupPolicy;
    assert.ok(policy.status?.lastScheduleTime, JSON.stringify(policy.status ?? null));
    assert.equal(policy.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    // A schedule cron cannot read: the policy says so, naming the field.
    const refused = await eventually(async () => {
      const read = (await home.objects.read({
        apiVersion: API,
        kind: "BackupPolicy",
        metadata: { name: unusable },
      })) as BackupPolicy;
      const ready = read.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "False", JSON.stringify(read.status));
      return ready!;
    });
    assert.equal(refused.reason, "InvalidSchedule");
    assert.match(refused.message, /spec\.schedule "61 \* \* \* \*".*59/);
  });
});
