/**
 * The simulated machines' host: each machine is a process of its own (machine.ts) in a folder of
 * its own under `<dir>/<name>/`, given a flavor's hardware and a loopback address. tenantry's
 * `simulated` provider drives it through the local interface it implements (LocalMachineHost in
 * src/nodes): flavors, launch, get, list, stop, onChange. A machine whose process ends without
 * `stop` is gone, as a deleted virtual machine is. Machines outlive the host object (they are
 * detached); a new host on the same folder adopts the ones still running.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { nodeProgram } from "../../common/index.js";
import { isRunning, startProcess, stopProcess } from "../processes.js";
import type { MachineSpec, MachineStatusFile } from "./machine.js";

export interface HostFlavor {
  name: string;
  vcpus: number;
  memoryMiB: number;
  diskGiB?: number;
}

/** The flavors of the embedded default, named as OpenStack's classic ones. */
export const DEFAULT_FLAVORS: readonly HostFlavor[] = [
  { name: "m1.small", vcpus: 1, memoryMiB: 2048, diskGiB: 20 },
  { name: "m1.medium", vcpus: 2, memoryMiB: 4096, diskGiB: 40 },
  { name: "m1.large", vcpus: 4, memoryMiB: 8192, diskGiB: 80 },
  { name: "m1.xlarge", vcpus: 8, memoryMiB: 16384, diskGiB: 160 },
];

export interface HostedMachine {
  id: string;
  name: string;
  uid: string;
  clusterId: string;
  flavor: string;
  state: "booting" | "running" | "failed";
  ipv4: string;
  message?: string;
  pid: number;
}

export interface MachineHostOptions {
  /** Folder holding one sub-folder per machine. */
  dir: string;
  flavors?: readonly HostFlavor[];
  /** How many machines may run at once; a launch beyond is refused ("no capacity"). */
  maxMachines?: number;
  /**
   * How long a machine takes to boot (BUILD → ACTIVE), to start its kubelet (ACTIVE → asking to
   * join) and, certificate in hand, to register its Node. Defaults 1 s, 0.5 s and 0.5 s, so that
   * each phase of a WorkerNode shows; a function decides per machine (a test's slow machine).
   */
  delays?: Partial<MachineDelays> | ((name: string) => Partial<MachineDelays>);
  /** How often the machines' processes and status files are looked at. Default 200 ms. */
  pollMs?: number;
}

export interface MachineDelays {
  bootMs: number;
  kubeletStartMs: number;
  readyMs: number;
}

export const DEFAULT_MACHINE_DELAYS: MachineDelays = { bootMs: 1000, kubeletStartMs: 500, readyMs: 500 };

interface Record extends HostedMachine {
  binary: string;
  /** Where cloud-init is (the machine's status file), for people and tests. */
  stage: MachineStatusFile["state"];
}

const STATE_FILE = "host.json";
/** A machine's program, run by this Node.js as tenantry itself runs (compiled, or through tsx). */
const MACHINE_PROGRAM = nodeProgram("./machine.ts", import.meta.url);
const ROOT = join(import.meta.dirname, "..", "..", "..");

export class MachineHost {
  private readonly machines = new Map<string, Record>();
  private readonly listeners = new Set<(name: string) => void>();
  private timer?: NodeJS.Timeout;
  private readonly ready: Promise<void>;

  constructor(private readonly options: MachineHostOptions) {
    this.ready = this.adopt();
    this.timer = setInterval(() => void this.poll(), options.pollMs ?? 200);
    this.timer.unref();
  }

  /** Waits until machines left running by an earlier host are adopted. */
  whenReady(): Promise<void> {
    return this.ready;
  }

  flavors(): HostFlavor[] {
    return [...(this.options.flavors ?? DEFAULT_FLAVORS)];
  }

  private async adopt(): Promise<void> {
    await mkdir(this.options.dir, { recursive: true });
    for (const entry of await readdir(this.options.dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const file = join(this.options.dir, entry.name, STATE_FILE);
      if (!existsSync(file)) continue;
      const record = JSON.parse(await readFile(file, "utf8")) as Record;
      if (isRunning(record.pid, record.binary)) this.machines.set(record.name, record);
      else await rm(join(this.options.dir, entry.name), { recursive: true, force: true });
    }
  }

  private nextAddress(): string {
    const taken = new Set([...this.machines.values()].map((m) => m.ipv4));
    for (let i = 0; i < 254 * 254; i++) {
      const address = `127.0.${1 + Math.floor(i / 254)}.${1 + (i % 254)}`;
      if (!taken.has(address)) return address;
    }
    throw new Error("no loopback address left for another machine");
  }

  async launch(spec: {
    name: string;
    uid: string;
    clusterId: string;
    flavor: string;
    userData: string;
  }): Promise<HostedMachine> {
    await this.ready;
    const flavor = this.flavors().find((f) => f.name === spec.flavor);
    if (!flavor) throw new Error(`flavor "${spec.flavor}" does not exist`);
    const existing = this.machines.get(spec.name);
    if (existing) {
      if (existing.uid === spec.uid) return this.view(existing);
      throw new Error(`a machine named "${spec.name}" already runs (for another node)`);
    }
    const max = this.options.maxMachines;
    if (max !== undefined && this.machines.size >= max) {
      throw new Error(`no capacity: ${this.machines.size} machines run, the host's limit is ${max}`);
    }
    const folder = join(this.options.dir, spec.name);
    await rm(folder, { recursive: true, force: true });
    await mkdir(folder, { recursive: true });
    const chosen = this.options.delays;
    const delays = {
      ...DEFAULT_MACHINE_DELAYS,
      ...(typeof chosen === "function" ? chosen(spec.name) : chosen),
    };
    const machineSpec: MachineSpec = {
      name: spec.name,
      userData: spec.userData,
      hardware: {
        cpu: String(flavor.vcpus),
        memory: `${flavor.memoryMiB}Mi`,
        pods: "110",
        ipv4: this.nextAddress(),
      },
      bootDelayMs: delays.bootMs,
      kubeletStartDelayMs: delays.kubeletStartMs,
      readyDelayMs: delays.readyMs,
    };
    await writeFile(join(folder, "spec.json"), JSON.stringify(machineSpec, null, 2), { mode: 0o600 });
    const initial: MachineStatusFile = { state: "booting", at: new Date().toISOString() };
    await writeFile(join(folder, "status.json"), JSON.stringify(initial));
    const proc = startProcess(
      `machine-${spec.name}`,
      process.execPath,
      [...MACHINE_PROGRAM, folder],
      join(folder, "machine.log"),
      ROOT,
    );
    const record: Record = {
      id: `sim-${randomBytes(6).toString("hex")}`,
      name: spec.name,
      uid: spec.uid,
      clusterId: spec.clusterId,
      flavor: spec.flavor,
      state: "booting",
      stage: "booting",
      ipv4: machineSpec.hardware.ipv4,
      pid: proc.pid,
      binary: proc.binary,
    };
    this.machines.set(spec.name, record);
    await writeFile(join(folder, STATE_FILE), JSON.stringify(record, null, 2));
    this.notify(spec.name);
    return this.view(record);
  }

  private view(record: Record): HostedMachine {
    const { binary: _binary, stage: _stage, ...machine } = record;
    return { ...machine };
  }

  get(name: string): HostedMachine | undefined {
    const record = this.machines.get(name);
    return record ? this.view(record) : undefined;
  }

  list(): HostedMachine[] {
    return [...this.machines.values()].map((r) => this.view(r));
  }

  /** Where the machine's cloud-init is: booting, running, joined or failed (with why). */
  stage(name: string): { stage: MachineStatusFile["state"]; message?: string } | undefined {
    const record = this.machines.get(name);
    return record
      ? { stage: record.stage, ...(record.message ? { message: record.message } : {}) }
      : undefined;
  }

  /** The machine's process id (tests kill it to make a machine vanish). */
  pid(name: string): number | undefined {
    return this.machines.get(name)?.pid;
  }

  folder(name: string): string {
    return join(this.options.dir, name);
  }

  async stop(name: string): Promise<void> {
    const record = this.machines.get(name);
    if (!record) return;
    this.machines.delete(name);
    await stopProcess({ pid: record.pid, binary: record.binary }, 2000);
    await rm(join(this.options.dir, name), { recursive: true, force: true });
    this.notify(name);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.machines.keys()].map((name) => this.stop(name)));
  }

  onChange(listener: (name: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(name: string): void {
    for (const listener of this.listeners) {
      try {
        listener(name);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  private polling = false;

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      for (const record of [...this.machines.values()]) {
        const folder = join(this.options.dir, record.name);
        if (!isRunning(record.pid, record.binary)) {
          // Ended without stop(): the machine is gone.
          this.machines.delete(record.name);
          await rm(folder, { recursive: true, force: true });
          this.notify(record.name);
          continue;
        }
        let status: MachineStatusFile;
        try {
          status = JSON.parse(await readFile(join(folder, "status.json"), "utf8")) as MachineStatusFile;
        } catch {
          continue;
        }
        const state: HostedMachine["state"] = status.state === "booting" ? "booting" : "running";
        if (state !== record.state || status.state !== record.stage || status.message !== record.message) {
          record.state = state;
          record.stage = status.state;
          if (status.message) record.message = status.message;
          else delete record.message;
          await writeFile(join(folder, STATE_FILE), JSON.stringify(record, null, 2)).catch(() => {});
          this.notify(record.name);
        }
      }
    } finally {
      this.polling = false;
    }
  }

  /** Stops watching; the machines keep running (stopAll() stops them). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }
}
