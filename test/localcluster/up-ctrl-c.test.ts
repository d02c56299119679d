import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ClusterHarness } from "../../src/localcluster/index.js";

/**
 * Ctrl-C on `tenantry up` as a terminal sends it: SIGINT to its whole process group. tenantry runs as
 * `npm start` runs it (the compiled CLI under plain node), in a clusters folder of its own. Whatever
 * it started must be gone once it has exited: tenantry, every cluster's components, the process
 * node's agents and their pods' processes (the demo's runtime among them), the simulated machines
 * and versitygw, and every port they listened on.
 */
const root = join(import.meta.dirname, "..", "..");
const dir = await mkdtemp(join(tmpdir(), "tenantry-up-ctrl-c-"));

after(async () => {
  // Whatever a failed run left behind goes, with the clusters' data.
  await new ClusterHarness({ dir }).reset().catch(() => undefined);
  await new ClusterHarness({ dir }).stopObjectStore().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface Up {
  child: ChildProcess;
  output: () => string;
  exited: Promise<Exit>;
}

/** `tenantry up --dir <dir>` in a process group of its own, once it says it is up. */
async function up(): Promise<Up> {
  const child = spawn(process.execPath, [join(root, "bin", "tenantry.js"), "up", "--dir", dir], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<Exit>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  while (!output.includes("Press Ctrl-C to stop.")) {
    assert.ok(!gone, `tenantry up exited before it was up:\n${output}`);
    await sleep(500);
  }
  return { child, output: () => output, exited };
}

/** A process as the kernel knows it: pid and start time, so that a reused pid is not taken for it. */
interface Proc {
  pid: number;
  startTicks: string;
  command: string;
}

function proc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z") return undefined;
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
    return { pid, startTicks: fields[19]!, command };
  } catch {
    return undefined;
  }
}

function allPids(): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** `pid`, its descendants, and every process whose command line names the clusters folder. */
function processesOf(pid: number): Proc[] {
  const parents = new Map<number, number>();
  for (const p of allPids()) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      parents.set(p, Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Gone meanwhile.
    }
  }
  const found = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [child, parent] of parents) {
      if (found.has(parent) && !found.has(child)) {
        found.add(child);
        grew = true;
      }
    }
  }
  for (const p of parents.keys()) if (proc(p)?.command.includes(dir)) found.add(p);
  return [...found].flatMap((p) => proc(p) ?? []);
}

function alive(p: Proc): boolean {
  return proc(p.pid)?.startTicks === p.startTicks;
}

/** Listening TCP ports, each with the socket inode behind it. */
function listening(): Map<string, number> {
  const sockets = new Map<string, number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").trim().split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // State 0A is LISTEN; the local address ends in the port, in hex.
      if (fields[3] === "0A") sockets.set(fields[9]!, Number.parseInt(fields[1]!.split(":")[1]!, 16));
    }
  }
  return sockets;
}

/** The ports these processes listen on. */
function portsOf(processes: Proc[]): Set<number> {
  const sockets = listening();
  const ports = new Set<number>();
  for (const p of processes) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${p.pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${p.pid}/fd/${fd}`))?.[1];
        const port = inode ? sockets.get(inode) : undefined;
        if (port !== undefined) ports.add(port);
      } catch {
        // Closed meanwhile.
      }
    }
  }
  return ports;
}

/** Waits for `tenantry up` to exit by itself; a guard against hanging forever, not a measure of speed. */
async function exitOf(running: Up): Promise<Exit> {
  const exit = await Promise.race([running.exited, sleep(5 * 60_000).then(() => undefined)]);
  assert.ok(exit, `tenantry up did not exit after Ctrl-C:\n${running.output()}`);
  return exit;
}

function assertNothingLeft(before: Proc[], ports: Set<number>, output: string): void {
  const left = before.filter(alive);
  assert.deepEqual(
    left.map((p) => `${p.pid} ${p.command}`),
    [],
    `processes left after Ctrl-C:\n${output}`,
  );
  // A port another process has taken since is not this run's; one of this folder's must be gone.
  const ours = allPids()
    .flatMap((p) => proc(p) ?? [])
    .filter((p) => p.command.includes(dir));
  assert.deepEqual(
    [...portsOf(ours)].filter((port) => ports.has(port)),
    [],
    "ports still listened on",
  );
}

/** The logs of the Node.js programs tenantry started: each cluster's process node agent and its pods. */
function nodeProgramLogs(): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((path) => /process-node.*\.log$|\/pods\/.*\.log$/.test(path))
    .map((path) => join(dir, path));
}

function describeRun(processes: Proc[]): string[] {
  return ["kube-apiserver", "etcd", "kwok", "process-node", "versitygw", "jupyter"].filter((component) =>
    processes.some((p) => p.command.includes(component)),
  );
}

describe("Ctrl-C on tenantry up", { timeout: 60 * 60_000 }, () => {
  test("stops tenantry and everything it started, and exits", async () => {
    const running = await up();
    const before = processesOf(running.child.pid!);
    const ports = portsOf(before);
    // Sanity: the run being stopped has the parts this test is about.
    assert.deepEqual(
      describeRun(before).filter((c) => c !== "jupyter"),
      ["kube-apiserver", "etcd", "kwok", "process-node", "versitygw"],
      running.output(),
    );
    assert.ok(ports.size >= 10, `listening ports of the run: ${[...ports].join(", ")}`);
    process.kill(-running.child.pid!, "SIGINT");
    assert.deepEqual(await exitOf(running), { code: 0, signal: null }, running.output());
    assert.match(running.output(), /stopped\.\n/);
    // It ended because nothing held it open any more. (On a very busy machine stopping may take
    // long enough to be hurried; then it ends itself, and this says nothing.)
    assert.doesNotMatch(running.output(), /still held open/);
    // No process printed a deprecation warning: tenantry itself, nor the Node.js programs it started.
    assert.doesNotMatch(running.output(), /DeprecationWarning/);
    for (const log of nodeProgramLogs()) {
      assert.doesNotMatch(readFileSync(log, "utf8"), /DeprecationWarning/, log);
    }
    assertNothingLeft(before, ports, running.output());
  });

  test("a second Ctrl-C while stopping kills what is left, and still leaves nothing running", async () => {
    // The same folder again: the clusters' data is adopted, as by the next `npm start`.
    const running = await up();
    const before = processesOf(running.child.pid!);
    const ports = portsOf(before);
    process.kill(-running.child.pid!, "SIGINT");
    while (!running.output().includes("stopping tenantry…")) await sleep(100);
    // Later than one keypress's copies (npm passes its own on): a second Ctrl-C, unless it has
    // stopped already (a signal after that ends the process at once, as it should).
    await sleep(1500);
    const second = !running.output().includes("stopped.");
    if (second) process.kill(-running.child.pid!, "SIGINT");
    assert.deepEqual(await exitOf(running), { code: 0, signal: null }, running.output());
    if (second) assert.match(running.output(), /SIGINT again: killing what is left/);
    assertNothingLeft(before, ports, running.output());
  });
});
