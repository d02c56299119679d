import { spawn } from "node:child_process";

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the machine's real kubectl with the given kubeconfig; `input` is fed to stdin (for `-f -`). */
export function kubectl(kubeconfigPath: string, args: string[], input?: string): Promise<KubectlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("kubectl", ["--kubeconfig", kubeconfigPath, ...args], {
      stdio: ["pipe", "pipe", "pipe"],
    });
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
