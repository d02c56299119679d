/**
 * What a tenant can reach of the backup store, from the attacker's side. A tenant owner who can read
 * everything in its runtime's namespace — every Secret, pod and Job spec, environment and log — while
 * its runtime is being backed up finds no credential of the store there: with nothing it read can
 * it list, read or delete another tenant's backups. Even the agent's own token (the one its pod
 * holds) gets presigned URLs only for that agent's claim archive and record, only while its backup
 * runs: another key, another operation or a foreign token is refused, a restore's agent cannot write,
 * and the upload URLs it held change nothing once the backup ended. Backup and restore still work.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import type { KubernetesObject, V1Job, V1Pod } from "@kubernetes/client-node";
import {
  BACKUP_AGENT_AUDIENCE,
  PRESIGN_PATH,
  type RuntimeBackup,
  type RuntimeRestore,
  S3ObjectStore,
} from "../../src/backup/index.js";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { RUNTIMES_AUDIENCE, type Runtime, runtimePlacement } from "../../src/runtimes/index.js";
import { echoServiceWithVolume, volumeDirOf } from "../support/backups.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { RUNTIMES_API as API, adminCall as call, clusterClient, removeObject } from "../support/runtimes.js";

const BUCKET = "tenantry-backups-home";

describe("backup agents hold no store credential and reach only their own backup", () => {
  const home = clusterClient();
  const tenant = uniqueName("bkat");
  const victim = uniqueName("bkvictim");
  const user = uniqueName("mallory");
  const password = "backup-attacker-1";
  const service = uniqueName("echo");
  const placed = runtimePlacement({ tenant, user, service, instance: "one" });
  const path = `/services/${user}/${service}/one`;
  const admin = new S3ObjectStore({ ...testEnvironment().objectStore, bucket: BUCKET });
  const victimPrefix = `${victim}/alice/echo/one/daily/`;
  const victimManifest = `${victimPrefix}manifest.json`;
  const victimBytes = Buffer.from(`{"backup":"daily","of":"${victim}"}`);
  const blob = randomBytes(32 * 1024 * 1024 + 7);
  let identity: BuiltinIdentity;
  let token: string;

  const read = <T>(kind: string, name: string) =>
    home.objects.read({
      apiVersion: API,
      kind,
      metadata: { name, namespace: placed.namespace },
    }) as Promise<T>;
  const create = (kind: string, name: string, spec: object) =>
    home.objects.create({
      apiVersion: API,
      kind,
      metadata: { name, namespace: placed.namespace },
      spec,
    } as KubernetesObject);
  const finished = async <T extends RuntimeBackup | RuntimeRestore>(kind: string, name: string) => {
    let last: T | undefined;
    await eventually(
      async () => {
        last = await read<T>(kind, name);
        assert.ok(
          ["Completed", "Failed"].includes(last.status?.phase ?? ""),
          `not finished: ${JSON.stringify(last.status ?? null)}`,
        );
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    return last!;
  };

  /** Stops the agent process of the process node whose command line matches, and answers its pid. */
  const pauseAgent = async (pattern: string): Promise<number[]> =>
    eventually(
      () => {
        const pids = execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" })
          .trim()
          .split("\n")
          .map(Number);
        for (const pid of pids) process.kill(pid, "SIGSTOP");
        return pids;
      },
      { timeoutMs: 120_000, intervalMs: 50 },
    );
  const resume = (pids: number[]) => {
    for (const pid of pids) process.kill(pid, "SIGCONT");
  };

  /** The agent pod of a backup's or restore's first claim. */
  const agentPod = async (owner: string): Promise<V1Pod> =>
    eventually(async () => {
      const pods = await home.core.listNamespacedPod({
        namespace: placed.namespace,
        labelSelector: `batch.kubernetes.io/job-name=${owner}-agent-0`,
      });
      const pod = pods.items[0];
      assert.ok(pod, `no agent pod of ${owner} yet`);
      return pod;
    });

  /** A token of `pod`'s service account for `audience`, bound to it: what the kubelet projects into it. */
  const podToken = async (pod: V1Pod, audience: string, bound = true) =>
    (
      await home.core.createNamespacedServiceAccountToken({
        namespace: placed.namespace,
        name: pod.spec?.serviceAccountName ?? "default",
        body: {
          spec: {
            audiences: [audience],
            expirationSeconds: 600,
            ...(bound
              ? {
                  boundObjectRef: {
                    apiVersion: "v1",
                    kind: "Pod",
                    name: pod.metadata!.name!,
                    uid: pod.metadata!.uid!,
                  },
                }
              : {}),
          },
        },
      })
    ).status!.token!;

  const presign = async (broker: string, bearer: string | undefined, body: object) => {
    const res = await fetch(`${broker}${PRESIGN_PATH}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      },
      body: JSON.stringify(body),
    });
    return {
      status: res.status,
      type: res.headers.get("content-type") ?? "",
      body: (await res.json()) as Record<string, unknown>,
    };
  };

  /** Everything the tenant can read in its runtime's namespace: Secrets, pod and Job specs, logs. */
  const readable = async (): Promise<string[]> => {
    const ns = placed.namespace;
    const found = new Set<string>();
    const add = (value: string | undefined) => {
      if (value) for (const part of value.split(/\s+/)) if (part) found.add(part);
    };
    for (const secret of (await home.core.listNamespacedSecret({ namespace: ns })).items) {
      for (const value of Object.values(secret.data ?? {})) add(Buffer.from(value, "base64").toString());
    }
    for (const cm of (await home.core.listNamespacedConfigMap({ namespace: ns })).items)
      for (const value of Object.values(cm.data ?? {})) add(value);
    const jobs = (await home.objects.list("batch/v1", "Job", ns)).items as V1Job[];
    const specs = [
      ...(await home.core.listNamespacedPod({ namespace: ns })).items.map((p) => p.spec),
      ...jobs.map((j) => j.spec?.template.spec),
    ];
    for (const spec of specs)
      for (const container of spec?.containers ?? []) {
        for (const env of container.env ?? []) add(env.value);
        for (const arg of [...(container.args ?? []), ...(container.command ?? [])]) add(arg);
      }
    for (const pod of (await home.core.listNamespacedPod({ namespace: ns })).items) {
      const log = await home.core
        .readNamespacedPodLog({
          name: pod.metadata!.name!,
          namespace: ns,
          container: pod.spec!.containers[0]!.name,
        })
        .catch(() => "");
      add(String(log));
    }
    return [...found].filter((s) => s.length >= 3 && s.length <= 256);
  };

  before(async () => {
    identity = await sharedBuiltinIdentity();
    await identity.createUser({ name: user, password, tenant, tenantAdmin: true });
    token = (await identity.login({ username: user, password })).token;
    await home.objects.create(echoServiceWithVolume(service));
    // Another tenant's backup, already in the store.
    await admin.ensureBucket();
    await admin.put(victimManifest, victimBytes);
    const posted = await call("POST", path, token, {});
    assert.ok([201, 202].includes(posted.status), JSON.stringify(posted.body));
    await eventually(
      async () => assert.equal((await read<Runtime>("Runtime", placed.name)).status?.phase, "Running"),
      {
        timeoutMs: 120_000,
        intervalMs: 500,
      },
    );
    await writeFile(join(await volumeDirOf(home, placed), "blob.bin"), blob);
  });

  after(async () => {
    await removeObject(home, { apiVersion: API, kind: "Runtime", metadata: placed });
    await removeObject(home, { apiVersion: API, kind: "RuntimeService", metadata: { name: service } });
    await removeObject(home, { apiVersion: "v1", kind: "Namespace", metadata: { name: placed.namespace } });
    await removeObject(home, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await identity?.deleteUser(user).catch(() => {});
    await stopSharedBuiltinIdentity();
    await admin.delete((await admin.list(`${victim}/`)).map((o) => o.key)).catch(() => {});
    admin.close();
  });

  test("during a backup, nothing readable in the tenant's namespace lists, reads or deletes another tenant's backups", async () => {
    await create("RuntimeBackup", "first", { runtime: placed.name });
    const paused = await pauseAgent("first/volumes/");
    try {
      const backup = await read<RuntimeBackup>("RuntimeBackup", "first");
      assert.equal(backup.status?.phase, "Running");
      const strings = await readable();
      assert.ok(strings.length > 0);
      const endpoint = testEnvironment().objectStore.endpoint;
      // Every pair of strings that could be a key: an access key id's characters, a secret's.
      const ids = strings.filter((s) => /^[A-Za-z0-9_.-]+$/.test(s));
      const secrets = strings.filter((s) => /^[A-Za-z0-9_.+/=-]+$/.test(s));
      let tried = 0;
      for (const accessKeyId of ids) {
        for (const secretAccessKey of secrets) {
          if (accessKeyId === secretAccessKey) continue;
          tried++;
          const s3 = new S3Client({
            endpoint,
            region: "us-east-1",
            forcePathStyle: true,
            credentials: { accessKeyId, secretAccessKey },
            maxAttempts: 1,
          });
          try {
            let unknownId = false;
            const refused = (err: { name?: string }) => {
              unknownId ||= ["InvalidAccessKeyId", "XAdminUserNotFound"].includes(err.name ?? "");
              return undefined;
            };
            const listed = await s3
              .send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${victim}/` }))
              .then((r) => r.Contents?.map((c) => c.Key) ?? [])
              .catch(refused);
            assert.equal(listed, undefined, `listed another tenant's backups with ${accessKeyId}`);
            // The store knows no such key id (S3 InvalidAccessKeyId, versitygw XAdminUserNotFound): no secret makes it one.
            if (unknownId) break;
            const got = await s3
              .send(new GetObjectCommand({ Bucket: BUCKET, Key: victimManifest }))
              .catch(refused);
            assert.equal(got, undefined, `read another tenant's manifest with ${accessKeyId}`);
            const deleted = await s3
              .send(new DeleteObjectCommand({ Bucket: BUCKET, Key: victimManifest }))
              .catch(refused);
            assert.equal(deleted, undefined, `deleted another tenant's manifest with ${accessKeyId}`);
          } finally {
            s3.destroy();
          }
        }
      }
      assert.ok(tried > 0);
      // Strings that are URLs (the broker's among them) give nothing without the agent's token.
      for (const url of strings.filter((s) => /^https?:\/\//.test(s))) {
        const anonymous = await presign(url.replace(/\/+$/, ""), undefined, {
          operation: "GetObject",
          key: victimManifest,
        }).catch(() => undefined);
        if (anonymous) assert.ok([401, 404].includes(anonymous.status), JSON.stringify(anonymous));
      }
    } finally {
      resume(paused);
    }
    const backup = await finished<RuntimeBackup>("RuntimeBackup", "first");
    assert.equal(backup.status?.phase, "Completed", JSON.stringify(backup.status));
    assert.ok((await readFile(join(await volumeDirOf(home, placed), "blob.bin"))).equals(blob));
    const still = await admin.get(victimManifest);
    const chunks: Buffer[] = [];
    for await (const chunk of still) chunks.push(chunk as Buffer);
    assert.ok(Buffer.concat(chunks).equals(victimBytes), "the other tenant's backup is untouched");
  });

  test("the agent's token reaches its own claim's archive only, while its backup runs; foreign tokens get nothing", async () => {
    await create("RuntimeBackup", "second", { runtime: placed.name });
    const paused = await pauseAgent("second/volumes/");
    let held!: { part: { url: string; headers: Record<string, string> }; complete: { url: string } };
    let agentToken = "";
    let broker = "";
    let ownKey = "";
    try {
      const backup = await read<RuntimeBackup>("RuntimeBackup", "second");
      ownKey = backup.status!.volumes![0]!.key;
      const secret = await home.core.readNamespacedSecret({
        name: "second-agent",
        namespace: placed.namespace,
      });
      broker = Buffer.from(secret.data!.BACKUP_BROKER_URL!, "base64").toString().replace(/\/+$/, "");
      assert.deepEqual(
        Object.keys(secret.data ?? {}).sort(),
        ["BACKUP_BROKER_URL", "BACKUP_KEY"],
        "nothing of the store",
      );
      const pod = await agentPod("second");
      agentToken = await podToken(pod, BACKUP_AGENT_AUDIENCE);
      const own = { operation: "GetObject", key: ownKey };

      // Foreign and forged tokens.
      assert.equal((await presign(broker, undefined, own)).status, 401);
      const forged = `${Buffer.from('{"alg":"RS256"}').toString("base64url")}.${Buffer.from(`{"aud":["${BACKUP_AGENT_AUDIENCE}"]}`).toString("base64url")}.c2ln`;
      assert.equal((await presign(broker, forged, own)).status, 401);
      assert.equal((await presign(broker, token, own)).status, 401, "a user's own token");
      assert.equal(
        (await presign(broker, await podToken(pod, RUNTIMES_AUDIENCE), own)).status,
        401,
        "another audience",
      );
      assert.equal(
        (await presign(broker, await podToken(pod, BACKUP_AGENT_AUDIENCE, false), own)).status,
        401,
        "bound to no pod",
      );
      const runtimePods = await home.core.listNamespacedPod({
        namespace: placed.namespace,
        labelSelector: `tenantry.dev/runtime=${placed.name}`,
      });
      const runtimePod = runtimePods.items[0]!;
      const notAgent = await presign(broker, await podToken(runtimePod, BACKUP_AGENT_AUDIENCE), own);
      assert.equal(notAgent.status, 403, JSON.stringify(notAgent.body));
      assert.match(notAgent.type, /application\/problem\+json/);

      // The agent's own token: its archive, nothing beside it.
      const mine = await presign(broker, agentToken, own);
      assert.equal(mine.status, 200, JSON.stringify(mine.body));
      const url = new URL(mine.body.url as string);
      assert.ok(Number(url.searchParams.get("X-Amz-Expires")) <= 300, "a URL lives five minutes at most");
      // Signed for the store: 200, or 404 while the paused agent has not written it yet.
      assert.ok([200, 404].includes((await fetch(mine.body.url as string)).status));
      const moved = (mine.body.url as string).replace(encodeURI(ownKey), encodeURI(victimManifest));
      assert.notEqual(moved, mine.body.url);
      assert.equal((await fetch(moved)).status, 403, "the URL is for that key only");
      for (const key of [
        victimManifest,
        `${backup.status!.location}/manifest.json`,
        `${backup.status!.location}/metadata.json.enc`,
      ]) {
        const refused = await presign(broker, agentToken, { operation: "GetObject", key });
        assert.equal(refused.status, 403, `${key}: ${JSON.stringify(refused.body)}`);
      }
      const list = await presign(broker, agentToken, { operation: "ListObjectsV2", key: `${victim}/` });
      assert.equal(list.status, 400, "listing is no operation an agent has");
      assert.equal(list.body.field, "operation");
      const noPart = await presign(broker, agentToken, {
        operation: "UploadPart",
        key: ownKey,
        uploadId: "u",
      });
      assert.equal(noPart.status, 400);
      assert.equal(noPart.body.field, "partNumber");

      // URLs the agent could hold past its backup's end: an upload of its own, a part and its completion.
      const created = await presign(broker, agentToken, { operation: "CreateMultipartUpload", key: ownKey });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const createdRes = await fetch(created.body.url as string, {
        method: "POST",
        headers: created.body.headers as Record<string, string>,
      });
      const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(await createdRes.text())![1]!;
      const garbage = randomBytes(1024);
      const checksumSHA256 = createHash("sha256").update(garbage).digest("base64");
      const part = await presign(broker, agentToken, {
        operation: "UploadPart",
        key: ownKey,
        uploadId,
        partNumber: 1,
        checksumSHA256,
      });
      const complete = await presign(broker, agentToken, {
        operation: "CompleteMultipartUpload",
        key: ownKey,
        uploadId,
      });
      assert.equal(part.status, 200);
      assert.equal(complete.status, 200);
      held = {
        part: { url: part.body.url as string, headers: part.body.headers as Record<string, string> },
        complete: { url: complete.body.url as string },
      };
    } finally {
      resume(paused);
    }
    const backup = await finished<RuntimeBackup>("RuntimeBackup", "second");
    assert.equal(backup.status?.phase, "Completed", JSON.stringify(backup.status));
    // Ended: the token gets nothing, the held upload was aborted, the archive stays as verified.
    const after = await presign(broker, agentToken, { operation: "GetObject", key: ownKey });
    assert.ok([401, 403].includes(after.status), JSON.stringify(after));
    const putAfter = await fetch(held.part.url, {
      method: "PUT",
      headers: held.part.headers,
      body: randomBytes(1024),
    });
    assert.notEqual(putAfter.status, 200, "a part URL of the ended backup writes nothing");
    const completeAfter = await fetch(held.complete.url, {
      method: "POST",
      body: "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>x</ETag></Part></CompleteMultipartUpload>",
    });
    const completeText = await completeAfter.text();
    assert.ok(completeAfter.status !== 200 || /<Error>/.test(completeText), completeText);
    const recordChunks: Buffer[] = [];
    for await (const chunk of await admin.get(`${ownKey}.json`)) recordChunks.push(chunk as Buffer);
    const record = JSON.parse(Buffer.concat(recordChunks).toString()) as { stored: { sha256: string } };
    const stored = createHash("sha256");
    for await (const chunk of await admin.get(ownKey)) stored.update(chunk as Buffer);
    assert.equal(
      stored.digest("hex"),
      record.stored.sha256,
      "the archive is what the agent wrote and verified",
    );
  });

  test("a restore's agent only reads; the restore brings the data back", async () => {
    assert.equal((await call("DELETE", `${path}/stop`, token)).status, 202);
    await eventually(
      async () => assert.equal((await read<Runtime>("Runtime", placed.name)).status?.phase, "Stopped"),
      {
        timeoutMs: 120_000,
      },
    );
    await writeFile(join(await volumeDirOf(home, placed), "blob.bin"), "changed since\n");
    await create("RuntimeRestore", "back", { backup: "first" });
    const paused = await pauseAgent("restore --dir .*first/volumes/");
    try {
      const pod = await agentPod("back");
      const agentToken = await podToken(pod, BACKUP_AGENT_AUDIENCE);
      const secret = await home.core.readNamespacedSecret({
        name: "back-agent",
        namespace: placed.namespace,
      });
      const broker = Buffer.from(secret.data!.BACKUP_BROKER_URL!, "base64").toString().replace(/\/+$/, "");
      const key = (await read<RuntimeBackup>("RuntimeBackup", "first")).status!.volumes![0]!.key;
      assert.equal((await presign(broker, agentToken, { operation: "GetObject", key })).status, 200);
      for (const body of [
        { operation: "CreateMultipartUpload", key },
        { operation: "AbortMultipartUpload", key, uploadId: "u" },
      ]) {
        const refused = await presign(broker, agentToken, body);
        assert.equal(refused.status, 403, JSON.stringify(refused.body));
        assert.match(String(refused.body.detail), /only reads/);
      }
    } finally {
      resume(paused);
    }
    const restore = await finished<RuntimeRestore>("RuntimeRestore", "back");
    assert.equal(restore.status?.phase, "Completed", JSON.stringify(restore.status));
    assert.ok((await readFile(join(await volumeDirOf(home, placed), "blob.bin"))).equals(blob));
  });
});
