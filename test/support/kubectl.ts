import { spawn } from "node:child_process";
import { join } from "node:path";

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}
/** What kubectl printed and how it exited. */
export type KubectlResult = CommandResult;

const root = join(import.meta.dirname, "..", "..");

/** Runs a program to completion (in `cwd`, default the checkout), feeding `input` to its stdin, and collects what it prints. */
export function runCommand(
  command: string,
  args: string[],
  input?: string,
  cwd = root,
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input ?? "");
  });
}

/** Runs the machine's real kubectl with the given kubeconfig; `input` is fed to stdin (for `-f -`). */
export function kubectl(kubeconfigPath: string, args: string[], input?: string): Promise<CommandResult> {
  return runCommand("kubectl", ["--kubeconfig", kubeconfigPath, ...args], input);
}

/**
 * Merges `spec` into Tenant `tenant`'s spec with `kubectl patch --type=merge`, as its administrator
 * would; fails with kubectl's error when the API server refuses.
 */
export async function patchTenant(kubeconfigPath: string, tenant: string, spec: object): Promise<void> {
  const patched = await kubectl(kubeconfigPath, [
    "patch",
    "tenant",
    tenant,
    "--type=merge",
    "-p",
    JSON.stringify({ spec }),
  ]);
  if (patched.code !== 0) throw new Error(`kubectl patch tenant ${tenant}: ${patched.stderr.trim()}`);
}

/** The tenantry CLI, as a user runs it. */
export function tenantryCli(args: string[], input?: string): Promise<CommandResult> {
  return runCommand(process.execPath, ["--import", "tsx", join(root, "src/cli/main.ts"), ...args], input);
}
