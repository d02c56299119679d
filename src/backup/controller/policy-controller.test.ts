import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Runtime } from "../../runtimes/index.js";
import type { BackupPolicy, RuntimeBackup } from "../api/backup.js";
import { beyondRetention, isIdle, isTornDown, remoteClusterOf } from "./policy-controller.js";

const policy = (action: "Stop" | "None" = "Stop") =>
  ({ spec: { service: "s", retention: 2, idle: { timeoutSeconds: 600, action } } }) as BackupPolicy;
const runtime = (status: Runtime["status"], desiredState: "Running" | "Stopped" = "Running") =>
  ({ spec: { desiredState }, status }) as Runtime;
const now = Date.parse("2026-01-01T12:00:00Z");

describe("backup policies: idle teardown and retention", () => {
  test("a running runtime is idle once its last request (else its start) is older than the timeout", () => {
    assert.equal(
      isIdle(runtime({ phase: "Running", lastActivity: "2026-01-01T11:49:59Z" }), policy(), now),
      true,
    );
    assert.equal(
      isIdle(runtime({ phase: "Running", lastActivity: "2026-01-01T11:55:00Z" }), policy(), now),
      false,
    );
    assert.equal(
      isIdle(runtime({ phase: "Running", startedAt: "2026-01-01T11:00:00Z" }), policy(), now),
      true,
    );
  });

  test("stopped, stopping, never-used runtimes and policies without teardown are never idle", () => {
    const old = "2026-01-01T10:00:00Z";
    assert.equal(isIdle(runtime({ phase: "Stopped", lastActivity: old }), policy(), now), false);
    assert.equal(isIdle(runtime({ phase: "Running", lastActivity: old }, "Stopped"), policy(), now), false);
    assert.equal(isIdle(runtime({ phase: "Running" }), policy(), now), false);
    assert.equal(isIdle(runtime({ phase: "Running", lastActivity: old }), policy("None"), now), false);
  });

  test("a runtime torn down (or being torn down) has its data in a backup: nothing to schedule", () => {
    const annotated = (annotations: Record<string, string>) =>
      ({ metadata: { annotations }, spec: {} }) as Runtime;
    assert.equal(isTornDown(annotated({})), false);
    assert.equal(isTornDown(annotated({ "tenantry.dev/restore-from": "b1" })), true);
    assert.equal(isTornDown(annotated({ "tenantry.dev/idle-teardown": "b1" })), true);
  });

  test("a runtime of another cluster is told apart, one not placed yet is not", () => {
    const at = (cluster?: string) => ({ spec: {}, status: cluster ? { cluster } : {} }) as Runtime;
    assert.equal(remoteClusterOf(at("edge-1"), "home"), "edge-1");
    assert.equal(remoteClusterOf(at("home"), "home"), undefined);
    assert.equal(remoteClusterOf(at(), "home"), undefined);
  });

  const backup = (name: string, phase: string, completionTime: string) =>
    ({ metadata: { name, namespace: "ns" }, status: { phase, completionTime } }) as RuntimeBackup;

  test("retention keeps the newest completed backups, and as many failed ones", () => {
    const old = beyondRetention(
      [
        backup("a", "Completed", "2026-01-01T01:00:00Z"),
        backup("b", "Completed", "2026-01-01T03:00:00Z"),
        backup("c", "Failed", "2026-01-01T00:00:00Z"),
        backup("d", "Completed", "2026-01-01T02:00:00Z"),
        backup("e", "Failed", "2026-01-01T04:00:00Z"),
        backup("f", "Failed", "2026-01-01T05:00:00Z"),
        backup("g", "Running", ""),
      ],
      2,
    );
    assert.deepEqual(
      old.map((b) => b.metadata?.name),
      ["a", "c"],
    );
  });

  test("retention never deletes the backup a torn-down runtime restores from", () => {
    const old = beyondRetention(
      [
        backup("a", "Completed", "2026-01-01T01:00:00Z"),
        backup("b", "Completed", "2026-01-01T03:00:00Z"),
        backup("d", "Completed", "2026-01-01T02:00:00Z"),
      ],
      1,
      new Set(["ns/a"]),
    );
    assert.deepEqual(
      old.map((b) => b.metadata?.name),
      ["d"],
    );
  });
});
