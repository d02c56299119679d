/**
 * A BackupPolicy's cron schedule (5 fields, UTC, or an `@daily`-style alias), read with
 * cron-parser. The next run counts from the runtime's last backup (the last completed one, or the
 * last scheduled attempt, whichever is later), so runs missed while tenantry was down become one
 * run at the next pass, not one per missed slot.
 */
import { CronExpressionParser } from "cron-parser";
import type { RuntimeBackup } from "../api/backup.js";

const ALIASES = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];

/** A schedule that cannot be used: names the field and why. */
export class InvalidSchedule extends Error {
  readonly field = "spec.schedule";
}

/** Checks a schedule; throws InvalidSchedule naming spec.schedule and what is wrong. */
export function checkSchedule(schedule: string): void {
  nextRun(schedule, new Date(0));
}

/** The first time the schedule names strictly after `after`. */
export function nextRun(schedule: string, after: Date): Date {
  const text = schedule.trim();
  const fields = text.split(/\s+/);
  if (text.startsWith("@") ? !ALIASES.includes(text) : fields.length !== 5)
    throw new InvalidSchedule(
      `spec.schedule "${schedule}" must have 5 fields (minute hour day-of-month month day-of-week) or be one of ${ALIASES.join(", ")}`,
    );
  try {
    return CronExpressionParser.parse(text, { currentDate: after, tz: "UTC", strict: false }).next().toDate();
  } catch (err) {
    throw new InvalidSchedule(`spec.schedule "${schedule}": ${(err as Error).message}`);
  }
}

const timeOf = (value: unknown) => (value ? Date.parse(String(value)) : Number.NaN);

/**
 * When the runtime's last backup was, as far as the schedule is concerned: the later of its last
 * completed backup (any trigger) and its last scheduled attempt (any phase: a failed run is not
 * retried before its next slot); else `since` (when the runtime or the policy appeared).
 */
export function lastBackupTime(backups: readonly RuntimeBackup[], since: Date): Date {
  let last = since.getTime();
  for (const backup of backups) {
    if (backup.status?.phase === "Completed")
      last = Math.max(last, timeOf(backup.status.completionTime) || 0);
    if (backup.spec.trigger === "Scheduled")
      last = Math.max(last, timeOf(backup.metadata?.creationTimestamp) || 0);
  }
  return new Date(last);
}

/** The slot a scheduled backup is due for at `now`, if one is: one, however many were missed. */
export function dueRun(
  schedule: string,
  backups: readonly RuntimeBackup[],
  since: Date,
  now: Date,
): Date | undefined {
  if (backups.some((b) => b.spec.trigger === "Scheduled" && !isFinished(b))) return undefined;
  const next = nextRun(schedule, lastBackupTime(backups, since));
  return next.getTime() <= now.getTime() ? next : undefined;
}

/** Whether a backup (or restore) has ended, Completed or Failed. */
export function isFinished(obj: { status?: { phase?: string } }): boolean {
  return obj.status?.phase === "Completed" || obj.status?.phase === "Failed";
}
