import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { stoppingHurried } from "../processes.js";

/**
 * A container's process as recorded on disk: its pid and the kernel's start time of that pid, so a
 * pid reused by an unrelated process after a restart is never taken for the container's.
 */
export interface ProcessIdentity {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks after boot when the process started. */
  startTicks: number;
}

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses; fields after it are plain.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

export function identify(pid: number): ProcessIdentity | undefined {
  const fields = statFields(pid);
  return fields ? { pid, startTicks: Number(fields[19]) } : undefined;
}

/** Alive (not a zombie) and still the process that was recorded. */
export function isAlive(proc: ProcessIdentity): boolean {
  const fields = statFields(proc.pid);
  return (
    fields !== undefined && fields[0] !== "Z" && fields[0] !== "X" && Number(fields[19]) === proc.startTicks
  );
}

/** The process and every descendant, found through /proc (a pty shell of Jupyter has left its group). */
export function processTree(root: ProcessIdentity): number[] {
  if (!isAlive(root)) return [];
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (!fields) continue;
    const ppid = Number(fields[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const tree: number[] = [];
  const queue = [root.pid];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    tree.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return tree;
}

function signalTree(root: ProcessIdentity, signal: NodeJS.Signals): void {
  const tree = processTree(root);
  try {
    // The container's process leads its own group: the group gets it first, then any stragglers.
    process.kill(-root.pid, signal);
  } catch {
    // Not a group leader (adopted after a restart) or gone already.
  }
  for (const pid of tree) {
    try {
      process.kill(pid, signal);
    } catch {
      // Gone meanwhile.
    }
  }
}

/**
 * Stops a container's processes as a runtime does: SIGTERM, then SIGKILL once `graceMs` has
 * passed. Resolves when the main process is gone; returns whether it had to be killed.
 */
export async function stopTree(root: ProcessIdentity, graceMs: number): Promise<boolean> {
  if (!isAlive(root)) return false;
  signalTree(root, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && !stoppingHurried()) {
    if (!isAlive(root)) return false;
    await sleep(Math.min(50, Math.max(1, deadline - Date.now())));
  }
  signalTree(root, "SIGKILL");
  const killDeadline = Date.now() + 10_000;
  while (isAlive(root) && Date.now() < killDeadline) await sleep(20);
  return true;
}

/** Kills what is left of a container's group once its main process has exited. */
export function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // No group left.
  }
}
