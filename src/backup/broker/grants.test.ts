import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Job, V1Pod } from "@kubernetes/client-node";
import type { RuntimeBackup, RuntimeRestore } from "../api/backup.js";
import { AGENT_JOB_LABEL } from "../controller/agent-jobs.js";
import { agentJobName } from "../controller/layout.js";
import { type GrantSources, grantOf } from "./grants.js";

const ns = "acme-rt-bob";
const location = "acme/bob/echo/one/first";
const key = (claim: string) => `${location}/volumes/${claim}.tar.enc`;

const backup = (phase: string, uid = "b-1"): RuntimeBackup =>
  ({
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "RuntimeBackup",
    metadata: { name: "first", namespace: ns, uid },
    spec: { runtime: "echo-one" },
    status: {
      phase,
      location,
      volumes: [
        { claim: "a", key: key("a") },
        { claim: "b", key: key("b") },
      ],
    },
  }) as RuntimeBackup;

const restore = (phase: string): RuntimeRestore =>
  ({
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "RuntimeRestore",
    metadata: { name: "back", namespace: ns, uid: "r-1" },
    spec: { backup: "first" },
    status: { phase },
  }) as RuntimeRestore;

const job = (name: string, owner: { kind: string; name: string; uid: string }, labelled = true): V1Job => ({
  metadata: {
    name,
    namespace: ns,
    uid: `job-${name}`,
    labels: labelled ? { [AGENT_JOB_LABEL]: "true" } : {},
    ownerReferences: [{ apiVersion: "tenantry.dev/v1alpha1", controller: true, ...owner }],
  },
});

const pod = (jobName: string, phase = "Running", uid = `job-${jobName}`): V1Pod => ({
  metadata: {
    name: `${jobName}-x1`,
    namespace: ns,
    ownerReferences: [{ apiVersion: "batch/v1", kind: "Job", name: jobName, uid, controller: true }],
  },
  status: { phase },
});

function sources(objects: {
  jobs?: V1Job[];
  backups?: RuntimeBackup[];
  restores?: RuntimeRestore[];
}): GrantSources {
  const find = <T extends { metadata?: { name?: string } }>(list: T[] | undefined, name: string) =>
    list?.find((o) => o.metadata?.name === name);
  return {
    job: async (_ns, name) => find(objects.jobs, name),
    backup: async (_ns, name) => find(objects.backups, name),
    restore: async (_ns, name) => find(objects.restores, name),
  };
}

describe("a backup agent's grant", () => {
  const second = agentJobName("first", 1);
  const backupOwner = { kind: "RuntimeBackup", name: "first", uid: "b-1" };

  test("a running backup's agent reads and writes its own claim's archive and record, nothing else", async () => {
    const result = await grantOf(
      pod(second),
      ns,
      sources({ jobs: [job(second, backupOwner)], backups: [backup("Running")] }),
    );
    assert.deepEqual(result, {
      ok: true,
      grant: {
        kind: "RuntimeBackup",
        owner: `${ns}/first`,
        keys: [key("b"), `${key("b")}.json`],
        writes: true,
      },
    });
  });

  test("a restore's agent only reads the archive of its claim in the backup it restores", async () => {
    const name = agentJobName("back", 0);
    const result = await grantOf(
      pod(name),
      ns,
      sources({
        jobs: [job(name, { kind: "RuntimeRestore", name: "back", uid: "r-1" })],
        backups: [backup("Completed")],
        restores: [restore("Running")],
      }),
    );
    assert.deepEqual(result.ok && result.grant, {
      kind: "RuntimeRestore",
      owner: `${ns}/back`,
      keys: [key("a"), `${key("a")}.json`],
      writes: false,
    });
  });

  test("nothing once the backup ended, nor before it runs", async () => {
    for (const phase of ["Completed", "Failed", "Pending"]) {
      const result = await grantOf(
        pod(second),
        ns,
        sources({ jobs: [job(second, backupOwner)], backups: [backup(phase)] }),
      );
      assert.equal(result.ok, false, phase);
      assert.match(
        !result.ok ? result.detail : "",
        new RegExp(`is ${phase}: its agents may reach the store only while it runs`),
      );
    }
  });

  test("a pod no agent Job controls, a Job not tenantry's, another Job's UID, an ended pod: refused", async () => {
    const own = sources({ jobs: [job(second, backupOwner)], backups: [backup("Running")] });
    const loose: V1Pod = { metadata: { name: "runtime-pod", namespace: ns }, status: { phase: "Running" } };
    assert.match(JSON.stringify(await grantOf(loose, ns, own)), /no Job controls it/);
    const unlabelled = sources({ jobs: [job(second, backupOwner, false)], backups: [backup("Running")] });
    assert.match(
      JSON.stringify(await grantOf(pod(second), ns, unlabelled)),
      /not one of tenantry's agent Jobs/,
    );
    assert.match(
      JSON.stringify(await grantOf(pod(second, "Running", "other-uid"), ns, own)),
      /not one of tenantry's agent Jobs/,
    );
    assert.match(JSON.stringify(await grantOf(pod(second, "Succeeded"), ns, own)), /has ended/);
  });

  test("a Job named like no claim's agent, or a backup re-created under the same name: refused", async () => {
    const stray = "first-agent-7";
    assert.match(
      JSON.stringify(
        await grantOf(
          pod(stray),
          ns,
          sources({ jobs: [job(stray, backupOwner)], backups: [backup("Running")] }),
        ),
      ),
      /is the agent of no claim/,
    );
    assert.match(
      JSON.stringify(
        await grantOf(
          pod(second),
          ns,
          sources({ jobs: [job(second, backupOwner)], backups: [backup("Running", "b-2")] }),
        ),
      ),
      /is gone/,
    );
  });

  test("a volume key outside the backup's location is never granted", async () => {
    const odd = backup("Running");
    odd.status!.volumes![1]!.key = "other-tenant/alice/echo/one/x/volumes/b.tar.enc";
    const result = await grantOf(
      pod(second),
      ns,
      sources({ jobs: [job(second, backupOwner)], backups: [odd] }),
    );
    assert.equal(result.ok, false);
  });
});
