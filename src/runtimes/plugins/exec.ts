/**
 * A plugin run as an executable, as flex-volume drivers are: `<command…> <callout>`, the JSON
 * request on standard input, the JSON reply on standard output. A non-zero exit, a reply that is
 * not JSON, or no reply by the deadline (the process and its children are then killed) fails the
 * callout with what the plugin wrote to standard error.
 */
import { spawn } from "node:child_process";
import type { PluginRef } from "../api/runtime-service.js";
import { DEFAULT_CALLOUT_TIMEOUT_SECONDS } from "./http.js";
import { type CalloutTransport, clip, RemotePlugin } from "./remote.js";
import { type Callout, PluginError } from "./spi.js";

const MAX_OUTPUT_BYTES = 2 * 1024 * 1024;

export type ExecPluginRef = NonNullable<PluginRef["exec"]>;

export function execTransport(ref: ExecPluginRef): CalloutTransport {
  const timeoutMs = (ref.timeoutSeconds ?? DEFAULT_CALLOUT_TIMEOUT_SECONDS) * 1000;
  return (callout, request) => run(callout, ref.command, request, timeoutMs);
}

export class ExecPlugin extends RemotePlugin {
  constructor(ref: ExecPluginRef) {
    super(execTransport(ref));
  }
}

function run(callout: Callout, command: string[], request: unknown, timeoutMs: number): Promise<unknown> {
  const [file, ...args] = command;
  const shown = command.join(" ");
  return new Promise((resolve, reject) => {
    // Its own process group, so that a timeout kills whatever the plugin started too.
    const child = spawn(file!, [...args, callout], { stdio: ["pipe", "pipe", "pipe"], detached: true });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let timedOut = false;
    let settled = false;
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    const finish = (error: string | undefined, value?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error === undefined) resolve(value);
      else reject(new PluginError(callout, error));
    };
    const errorText = () => clip(Buffer.concat(stderr).toString("utf8"));
    child.stdout.on("data", (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes <= MAX_OUTPUT_BYTES) stdout.push(chunk);
      else kill();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      errBytes += chunk.length;
      if (errBytes <= 64 * 1024) stderr.push(chunk);
    });
    child.on("error", (err: Error & { code?: string }) =>
      finish(`${shown} could not be run: ${err.code ? `${err.code} ` : ""}${err.message}`),
    );
    child.on("close", (code, signal) => {
      const text = Buffer.concat(stdout).toString("utf8");
      const said = errorText();
      if (timedOut) {
        return finish(
          `${shown} ${callout} did not answer within ${timeoutMs / 1000} s (timeoutSeconds) and was killed${said ? `: ${said}` : ""}`,
        );
      }
      if (outBytes > MAX_OUTPUT_BYTES) {
        return finish(`${shown} ${callout} wrote more than ${MAX_OUTPUT_BYTES} bytes and was killed`);
      }
      let reply: unknown;
      try {
        reply = text.trim() ? JSON.parse(text) : undefined;
      } catch {
        reply = undefined;
      }
      if (code !== 0) {
        const message = (reply as { message?: unknown } | undefined)?.message;
        const why = [typeof message === "string" ? clip(message) : "", said].filter(Boolean).join(": ");
        return finish(
          `${shown} ${callout} ${signal ? `was killed by ${signal}` : `exited with ${code}`}${why ? `: ${why}` : ""}`,
        );
      }
      if (reply === undefined) {
        return finish(
          `${shown} ${callout} wrote no JSON reply${text.trim() ? `: ${clip(text)}` : ""}${said ? ` (stderr: ${said})` : ""}`,
        );
      }
      finish(undefined, reply);
    });
    // A plugin that exits without reading its input must not fail the write.
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(request));
  });
}
