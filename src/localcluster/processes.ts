import { spawn } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

export interface RunningProcess {
  component: string;
  pid: number;
  binary: string;
  logFile: string;
}

/**
 * Starts a component in its own process group with output to its log file. It outlives the CLI
 * that started it (`tenantry dev cluster up` returns while the cluster runs); its pid is recorded
 * in the cluster's state file so that any later command can stop it.
 */
export function startProcess(
  component: string,
  binary: string,
  args: string[],
  logFile: string,
  cwd: string,
): RunningProcess {
  const fd = openSync(logFile, "a");
  try {
    const child = spawn(binary, args, { cwd, detached: true, stdio: ["ignore", fd, fd] });
    if (child.pid === undefined) throw new Error(`could not start ${component} (${binary})`);
    child.unref();
    return { component, pid: child.pid, binary, logFile };
  } finally {
    closeSync(fd);
  }
}

/** True when `pid` is alive and still runs `binary` (a recorded pid may have been reused since). */
export function isRunning(pid: number, binary?: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (!binary) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // A zombie has exited; only its parent has not collected it yet.
    if (/\) Z /.test(stat)) return false;
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? "";
    // An exiting process has its command line cleared before it becomes a zombie: still ours.
    return argv0 === binary || argv0 === "";
  } catch {
    return false;
  }
}

let hurried = false;

/**
 * From now on every stop in this process kills at once instead of waiting out its grace period
 * (`tenantry up` after a second Ctrl-C, or when stopping takes too long).
 */
export function hurryStopping(): void {
  hurried = true;
}

export function stoppingHurried(): boolean {
  return hurried;
}

/** SIGTERM, then SIGKILL after `graceMs` (at once when stopping hurries); resolves once the process is gone. */
export async function stopProcess(
  proc: Pick<RunningProcess, "pid" | "binary">,
  graceMs = 5000,
): Promise<void> {
  if (!isRunning(proc.pid, proc.binary)) return;
  try {
    process.kill(proc.pid, "SIGTERM");
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && !hurried) {
    if (!isRunning(proc.pid, proc.binary)) return;
    await sleep(50);
  }
  try {
    process.kill(proc.pid, "SIGKILL");
  } catch {
    return;
  }
  const killDeadline = Date.now() + 10_000;
  while (isRunning(proc.pid, proc.binary) && Date.now() < killDeadline) await sleep(20);
}

export function logTail(logFile: string, lines = 8): string {
  try {
    return readFileSync(logFile, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}
