import { spawn } from "node:child_process";

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A command that exited non-zero (or could not start): its first line of output names the cause. */
export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly result: CommandResult,
  ) {
    const output = (result.stderr || result.stdout).trim().split("\n").filter(Boolean);
    super(`${command} failed (exit ${result.code}): ${output.slice(-3).join(" / ") || "no output"}`);
  }

  get output(): string {
    return `${this.result.stderr}\n${this.result.stdout}`;
  }
}

export interface CommandOptions {
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Runs a command without a shell and collects what it prints. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: CommandOptions = {},
): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
      timeout: options.timeoutMs ?? 120_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", (err: NodeJS.ErrnoException) =>
      resolve({ code: err.code === "ENOENT" ? 127 : 1, stdout, stderr: `${stderr}${err.message}` }),
    );
    child.on("close", (code, signal) =>
      resolve({
        code: code ?? (signal ? 128 : 1),
        stdout,
        stderr: signal ? `${stderr}killed by ${signal}` : stderr,
      }),
    );
  });
}

/** Runs a command and throws {@link CommandError} unless it exits 0. */
export async function mustRun(
  command: string,
  args: readonly string[],
  options: CommandOptions = {},
): Promise<CommandResult> {
  const result = await runCommand(command, args, options);
  if (result.code !== 0) throw new CommandError([command, ...args.slice(0, 2)].join(" "), result);
  return result;
}

/** Whether `name` is an executable on PATH. */
export async function onPath(name: string): Promise<boolean> {
  const result = await runCommand("sh", ["-c", `command -v ${name}`]);
  return result.code === 0 && result.stdout.trim() !== "";
}
