/** Child processes of the benchmark: started with tsx, the first line of output (JSON) says where they serve. */
import { type ChildProcess, fork } from "node:child_process";
import { createInterface } from "node:readline";

export interface Child<T> {
  child: ChildProcess;
  info: T;
}

/** Runs a TypeScript file of this folder in its own process with an IPC channel. */
export function forkTs<T>(file: string, args: string[] = [], execArgv: string[] = []): Promise<Child<T>> {
  const child = fork(file, args, {
    execArgv: ["--import", "tsx", ...execArgv],
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  return firstLine<T>(child);
}

function firstLine<T>(child: ChildProcess): Promise<Child<T>> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (line) => resolve({ child, info: JSON.parse(line) as T }));
    child.once("exit", (code) =>
      reject(new Error(`${child.spawnfile} exited with ${code} before it served`)),
    );
  });
}

/** Sends a request over the IPC channel and waits for the answer with the same id. */
let nextId = 0;
export function ask<T>(child: ChildProcess, message: Record<string, unknown>): Promise<T> {
  const id = ++nextId;
  return new Promise((resolve, reject) => {
    const onMessage = (reply: { id: number; error?: string } & T) => {
      if (reply.id !== id) return;
      child.off("message", onMessage);
      if (reply.error) reject(new Error(reply.error));
      else resolve(reply);
    };
    child.on("message", onMessage);
    child.send({ ...message, id });
  });
}

export function stop(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once("exit", () => resolve());
    child.kill("SIGTERM");
  });
}
