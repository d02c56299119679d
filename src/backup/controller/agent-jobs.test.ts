import assert from "node:assert/strict";
import { test } from "node:test";
import { RESTORE_NAME_LABEL } from "../api/backup.js";
import { agentJob } from "./agent-jobs.js";
import { byOwnerOfKind } from "./objects.js";

test("an agent Job of a long-named restore has label values Kubernetes accepts and still maps to its restore", () => {
  // `tenantry runtime restore` names restores `<backup>-restore-<stamp>`: well over 63 characters for long runtime names.
  const name = `${"jupyter-notebook-of-a-long-name".repeat(3)}-restore-20261126t101500`;
  const job = agentJob({
    mode: "restore",
    name: "agent-x",
    namespace: "demo-rt-alice",
    claim: "data",
    key: "k",
    image: "tenantry/backup-agent",
    secret: "agent-x",
    owner: {
      apiVersion: "tenantry.dev/v1alpha1",
      kind: "RuntimeRestore",
      metadata: { name, namespace: "demo-rt-alice", uid: "u-1" },
    },
    ownerLabel: RESTORE_NAME_LABEL,
  });
  for (const labels of [job.metadata?.labels, job.spec?.template.metadata?.labels])
    for (const [key, value] of Object.entries(labels ?? {})) assert.ok(value.length <= 63, `${key}=${value}`);
  assert.deepEqual(byOwnerOfKind("RuntimeRestore")(job, "home"), [`home/demo-rt-alice/${name}`]);
  assert.deepEqual(byOwnerOfKind("RuntimeBackup")(job, "home"), []);
});
