import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

export interface TenantryProcessOptions {
  cluster: string;
  kubeconfig: string;
  /** Appended to, so that every run of a restarted tenantry is in one file. */
  logFile: string;
  /** Leader-election identity: the same one again after a restart, as a restarted container keeps its pod's. */
  identity?: string;
  /** The same port after a restart keeps the registered webhook URLs valid. */
  webhookPort?: number;
  readyTimeoutMs?: number;
}

export interface TenantryProcess {
  pid: number;
  /** SIGTERM, then SIGKILL after 15 s. */
  stop(): Promise<void>;
  /** SIGKILL: no cleanup of any kind, as when the node or the container dies. */
  kill(): Promise<void>;
}

const root = join(import.meta.dirname, "..", "..");

/** Starts tenantry (test/support/tenantry-child.ts) in a process of its own and waits until it leads. */
export async function startTenantryProcess(options: TenantryProcessOptions): Promise<TenantryProcess> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(root, "test", "support", "tenantry-child.ts"),
      options.cluster,
      options.kubeconfig,
      options.logFile,
      ...(options.identity ? ["--identity", options.identity] : []),
      ...(options.webhookPort ? ["--webhook-port", String(options.webhookPort)] : []),
    ],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void exit.then(() => {
    exited = true;
  });
  const timeoutMs = options.readyTimeoutMs ?? 90_000;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`tenantry did not become ready within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    child.stdout!.on("data", (c: Buffer) => {
      if (c.toString().includes("ready")) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exit.then(() => {
      clearTimeout(timer);
      reject(
        new Error(`tenantry exited before it was ready: ${stderr.trim().split("\n").slice(-5).join("\n")}`),
      );
    });
  });
  return {
    pid: child.pid!,
    async stop() {
      if (exited) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exit;
      clearTimeout(timer);
    },
    async kill() {
      if (exited) return;
      child.kill("SIGKILL");
      await exit;
    },
  };
}
