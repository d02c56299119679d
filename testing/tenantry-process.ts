import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";

export interface TenantryProcessOptions {
  cluster: string;
  kubeconfig: string;
  /** The CA of the client certificate the cluster's kube-apiserver presents to webhooks (webhookClientCaFile). */
  webhookClientCaFile: string;
  /** Appended to, so that every run of a restarted tenantry is in one file. */
  logFile: string;
  /** Leader-election identity: the same one again after a restart, as a restarted container keeps its pod's. */
  identity?: string;
  /** The same port after a restart keeps the registered webhook URLs valid. */
  webhookPort?: number;
  readyTimeoutMs?: number;
  /** Serve /metrics on 127.0.0.1 at this port. */
  metricsPort?: number;
  /** Options for Node.js itself, e.g. `--cpu-prof` for a benchmark's profile (written when the process exits). */
  nodeOptions?: string[];
  /** Parts left out, where a test is about the controllers and webhooks alone. */
  without?: ("gateway" | "runtimes-admin" | "runtimes-proxy" | "logical-clouds")[];
  /**
   * Only these capabilities (with what they depend on), each one's controllers under its own Lease;
   * ready once its informers have synced rather than once it leads.
   */
  components?: string[];
}

export interface TenantryProcess {
  pid: number;
  /** SIGTERM, then SIGKILL after 15 s. */
  stop(): Promise<void>;
  /** SIGKILL: no cleanup of any kind, as when the node or the container dies. */
  kill(): Promise<void>;
}

const root = join(import.meta.dirname, "..");

/**
 * Starts tenantry (test/support/tenantry-child.ts) in a process of its own and waits until it
 * leads (with `components`: until its informers have synced).
 */
export async function startTenantryProcess(options: TenantryProcessOptions): Promise<TenantryProcess> {
  return (await spawnTenantry(options, false)).start();
}

/**
 * A tenantry process that has loaded its code and waits: `start()` lets it start (and waits until
 * it leads). For restarts in fault tests, where loading the code again would dominate.
 */
export function standbyTenantryProcess(
  options: TenantryProcessOptions,
): Promise<{ start(): Promise<TenantryProcess>; kill(): Promise<void> }> {
  return spawnTenantry(options, true);
}

async function spawnTenantry(
  options: TenantryProcessOptions,
  standby: boolean,
): Promise<{ start(): Promise<TenantryProcess>; kill(): Promise<void> }> {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(options.nodeOptions ?? []),
      "--import",
      "tsx",
      join(root, "test", "support", "tenantry-child.ts"),
      options.cluster,
      options.kubeconfig,
      options.logFile,
      "--webhook-client-ca",
      options.webhookClientCaFile,
      ...(options.identity ? ["--identity", options.identity] : []),
      ...(options.webhookPort ? ["--webhook-port", String(options.webhookPort)] : []),
      ...(standby ? ["--standby"] : []),
      ...(options.without?.length ? ["--without", options.without.join(",")] : []),
      ...(options.metricsPort ? ["--metrics-port", String(options.metricsPort)] : []),
      ...(options.components ? ["--components", options.components.join(",")] : []),
    ],
    { cwd: root, stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  let stdout = "";
  child.stderr!.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdout!.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  void exit.then(() => {
    exited = true;
  });
  const kill = async () => {
    if (exited) return;
    child.kill("SIGKILL");
    await exit;
  };
  /** Resolves when stdout has said `word`; rejects if the process exits first or time runs out. */
  const printed = (word: string, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        clearInterval(poll);
        reject(new Error(`tenantry did not print "${word}" within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      const poll = setInterval(() => {
        if (stdout.split("\n").includes(word)) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve();
        }
      }, 20);
      void exit.then(() => {
        clearInterval(poll);
        clearTimeout(timer);
        reject(
          new Error(`tenantry exited before "${word}": ${stderr.trim().split("\n").slice(-5).join("\n")}`),
        );
      });
    });
  const timeoutMs = options.readyTimeoutMs ?? 90_000;
  if (standby) await printed("loaded", timeoutMs);
  return {
    kill,
    async start() {
      if (standby) child.stdin!.write("start\n");
      await printed("ready", timeoutMs);
      return {
        pid: child.pid!,
        async stop() {
          if (exited) return;
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
          await exit;
          clearTimeout(timer);
        },
        kill,
      };
    },
  };
}
