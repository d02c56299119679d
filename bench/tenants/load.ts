import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LoadPlan, LoadResult } from "./loadgen.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..", "..");

/** Runs one open-loop load in a child process (see loadgen.ts) and returns what it measured. */
export function runLoad(plan: LoadPlan): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(here, "loadgen.ts")], {
      cwd: root,
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
    child.on("close", (code) => {
      if (code !== 0) {
        reject(
          new Error(`load generator exited with ${code}: ${stderr.trim().split("\n").slice(-5).join("\n")}`),
        );
        return;
      }
      try {
        resolve(JSON.parse(stdout) as LoadResult);
      } catch (err) {
        reject(new Error(`load generator printed no result: ${(err as Error).message}\n${stderr}`));
      }
    });
    child.stdin.end(JSON.stringify(plan));
  });
}
