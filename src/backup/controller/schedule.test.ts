import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { RuntimeBackup } from "../api/backup.js";
import { checkSchedule, dueRun, InvalidSchedule, lastBackupTime, nextRun } from "./schedule.js";

const at = (iso: string) => new Date(iso);
const backup = (trigger: string, phase: string | undefined, created: string, completed?: string) =>
  ({
    metadata: { name: `${trigger}-${created}`, creationTimestamp: created },
    spec: { runtime: "r", trigger },
    status: { ...(phase ? { phase } : {}), ...(completed ? { completionTime: completed } : {}) },
  }) as unknown as RuntimeBackup;

describe("backup schedules", () => {
  test("five cron fields in UTC, and the usual aliases", () => {
    assert.equal(nextRun("0 3 * * *", at("2026-11-26T09:00:00Z")).toISOString(), "2026-11-27T03:00:00.000Z");
    assert.equal(
      nextRun("*/5 * * * *", at("2026-11-26T09:02:00Z")).toISOString(),
      "2026-11-26T09:05:00.000Z",
    );
    assert.equal(nextRun("@daily", at("2026-11-26T09:00:00Z")).toISOString(), "2026-11-27T00:00:00.000Z");
    // Strictly after: a run at a slot is not due again at that slot.
    assert.equal(
      nextRun("*/5 * * * *", at("2026-11-26T09:05:00Z")).toISOString(),
      "2026-11-26T09:10:00.000Z",
    );
  });

  test("a schedule that cannot be used names spec.schedule and why", () => {
    for (const [schedule, why] of [
      ["0 3 * *", /5 fields/],
      ["0 0 3 * * *", /5 fields/],
      ["61 * * * *", /spec\.schedule "61 \* \* \* \*".*59/],
      ["a b c d e", /spec\.schedule/],
      ["@sometimes", /5 fields .* or be one of @yearly/],
    ] as const) {
      assert.throws(
        () => checkSchedule(schedule),
        (err: unknown) =>
          err instanceof InvalidSchedule && err.field === "spec.schedule" && why.test(err.message),
        schedule,
      );
    }
  });

  test("the next run counts from the last completed backup or the last scheduled attempt", () => {
    const since = at("2026-11-20T00:00:00Z");
    assert.equal(lastBackupTime([], since).toISOString(), since.toISOString());
    const backups = [
      backup("Manual", "Completed", "2026-11-25T10:00:00Z", "2026-11-25T10:01:00Z"),
      backup("Scheduled", "Failed", "2026-11-26T03:00:05Z", "2026-11-26T03:00:09Z"),
      backup("Idle", "Failed", "2026-11-26T05:00:00Z", "2026-11-26T05:00:01Z"),
    ];
    assert.equal(lastBackupTime(backups, since).toISOString(), "2026-11-26T03:00:05.000Z");
  });

  test("runs missed while tenantry was down make one backup, not one per slot", () => {
    const since = at("2026-11-20T00:00:00Z");
    const last = [backup("Scheduled", "Completed", "2026-11-23T03:00:02Z", "2026-11-23T03:00:40Z")];
    // Down from the 23rd to the 26th at 09:00: three daily slots missed, one run due, for the first.
    const due = dueRun("0 3 * * *", last, since, at("2026-11-26T09:00:00Z"));
    assert.equal(due?.toISOString(), "2026-11-24T03:00:00.000Z");
    // Once made (now), the next is tomorrow's slot, not the 25th's or the 26th's.
    const made = [...last, backup("Scheduled", "Completed", "2026-11-26T09:00:10Z", "2026-11-26T09:01:00Z")];
    assert.equal(dueRun("0 3 * * *", made, since, at("2026-11-26T09:00:20Z")), undefined);
    assert.equal(
      dueRun("0 3 * * *", made, since, at("2026-11-27T03:00:00Z"))?.toISOString(),
      "2026-11-27T03:00:00.000Z",
    );
  });

  test("nothing is due while a scheduled backup runs, nor before the first slot", () => {
    const since = at("2026-11-26T08:00:00Z");
    assert.equal(dueRun("0 3 * * *", [], since, at("2026-11-26T09:00:00Z")), undefined);
    const running = [backup("Scheduled", "Running", "2026-11-26T03:00:02Z")];
    assert.equal(dueRun("* * * * *", running, since, at("2026-11-26T09:00:00Z")), undefined);
    const failed = [backup("Scheduled", "Failed", "2026-11-26T08:30:02Z", "2026-11-26T08:30:09Z")];
    assert.equal(dueRun("0 * * * *", failed, since, at("2026-11-26T08:59:00Z")), undefined);
    assert.equal(
      dueRun("0 * * * *", failed, since, at("2026-11-26T09:00:00Z"))?.toISOString(),
      "2026-11-26T09:00:00.000Z",
    );
  });
});
