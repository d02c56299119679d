import { spawn } from "node:child_process";

/** A command of the pod network that failed, with what it printed. */
export class NetworkCommandError extends Error {
  constructor(
    readonly command: string,
    readonly stderr: string,
  ) {
    super(`${command}: ${stderr.trim() || "failed"}`);
    this.name = "NetworkCommandError";
  }
}

/**
 * Runs one of the machine's network tools (ip, nft, nsenter) with a fixed environment, `input` on
 * its standard input; resolves with its output, rejects naming the command and its error.
 */
export function run(command: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LC_ALL: "C" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", (err: NodeJS.ErrnoException) =>
      reject(
        err.code === "ENOENT"
          ? new NetworkCommandError(command, missingTool(command))
          : new NetworkCommandError(command, err.message),
      ),
    );
    child.on("close", (code) => {
      if (code === 0) resolve(stdout);
      else reject(new NetworkCommandError(`${command} ${args.join(" ")}`, stderr));
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

function missingTool(command: string): string {
  const packages: Record<string, string> = { nft: "nftables", ip: "iproute2", nsenter: "util-linux" };
  return `${command} was not found: the process node's pod network needs it (on Debian: apt-get install ${packages[command] ?? command})`;
}

/** Runs `command args` inside a network namespace. */
export function inNamespace(namespace: string, command: string, args: string[], input?: string) {
  return run("nsenter", [`--net=/run/netns/${namespace}`, "--", command, ...args], input);
}

/** Ignores the error of a clean-up step whose object is already gone. */
export async function quietly(step: Promise<unknown>): Promise<void> {
  try {
    await step;
  } catch {
    // Gone already (or never made): nothing to clean.
  }
}

/** Names of the network namespaces on this machine. */
export async function networkNamespaces(): Promise<string[]> {
  const out = await run("ip", ["netns", "list"]);
  return out
    .split("\n")
    .map((line) => line.split(" ")[0]!)
    .filter(Boolean);
}
