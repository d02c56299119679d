/**
 * One simulated machine: a process started by the host (host.ts) with its folder as argument. It
 * "boots" (waits the boot delay the host chose), runs its user data's cloud-config (boot.ts), and
 * then stays up until it is stopped, as the virtual machine it stands for would. Its progress is
 * written to `status.json` in its folder for the host to read.
 */
import { readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { MachineHardware } from "./boot.js";

// Loaded while the machine "boots", so that its own start adds as little as it can to the boot.
const loading = import("./boot.js");

export interface MachineSpec {
  name: string;
  userData: string;
  hardware: MachineHardware;
  /** BUILD → ACTIVE: the machine boots. */
  bootDelayMs: number;
  /** ACTIVE → the kubelet asks to join: cloud-init runs and starts the kubelet. */
  kubeletStartDelayMs: number;
  /** Node registered → Ready: the kubelet's container runtime comes up. */
  readyDelayMs: number;
}

export interface MachineStatusFile {
  /** booting → running (up; cloud-init runs) → joined; failed when cloud-init could not finish. */
  state: "booting" | "running" | "joined" | "failed";
  message?: string;
  at: string;
}

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: machine.ts <machine folder>\n");
  process.exit(2);
}

const log = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);

async function report(status: Omit<MachineStatusFile, "at">): Promise<void> {
  const file = join(dir!, "status.json");
  // Written whole and renamed, so the host never reads half a file.
  await writeFile(`${file}.tmp`, JSON.stringify({ ...status, at: new Date().toISOString() }));
  await rename(`${file}.tmp`, file);
}

const stopping = new AbortController();
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.on(signal, () => {
    log(`${signal}: shutting down`);
    stopping.abort();
    process.exit(0);
  });
}

async function main(): Promise<void> {
  const spec = JSON.parse(await readFile(join(dir!, "spec.json"), "utf8")) as MachineSpec;
  log(`booting ${spec.name} (${spec.hardware.cpu} CPU, ${spec.hardware.memory}, ${spec.hardware.ipv4})`);
  const [{ kubeletBootstrap, parseCloudConfig, startsKubelet, writeFiles }] = await Promise.all([
    loading,
    spec.bootDelayMs > 0 ? sleep(spec.bootDelayMs, undefined, { signal: stopping.signal }) : undefined,
  ]);
  await report({ state: "running" });
  try {
    const config = parseCloudConfig(spec.userData);
    const root = join(dir!, "root");
    await writeFiles(root, config);
    if (!startsKubelet(config)) {
      log("the user data starts no kubelet: nothing joins");
    } else {
      if (spec.kubeletStartDelayMs > 0)
        await sleep(spec.kubeletStartDelayMs, undefined, { signal: stopping.signal });
      const joined = await kubeletBootstrap(root, spec.hardware, log, {
        readyDelayMs: spec.readyDelayMs,
        signal: stopping.signal,
      });
      await report({ state: "joined", message: `Node ${joined.nodeName} registered` });
    }
  } catch (err) {
    const message = (err as { body?: unknown }).body
      ? `${(err as Error).message}: ${JSON.stringify((err as { body?: unknown }).body).slice(0, 500)}`
      : (err as Error).message;
    log(`cloud-init failed: ${message}`);
    await report({ state: "failed", message });
  }
  // Up until stopped, like the machine it stands for (a failed cloud-init does not power it off).
  setInterval(() => {}, 60_000);
}

main().catch((err) => {
  log(`machine failed: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
