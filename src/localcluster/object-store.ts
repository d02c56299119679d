import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { UserError } from "../common/index.js";
import { type BuildOptions, ensureObjectStoreBinary } from "./build.js";
import { freePort } from "./ports.js";
import { isRunning, logTail, startProcess, stopProcess } from "./processes.js";

/** A running local S3-compatible store (versitygw serving a folder) and how to reach it. */
export interface LocalObjectStoreState {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** The folder it serves: one sub-folder per bucket. */
  dataDir: string;
  pid: number;
  binary: string;
  version: string;
  logFile: string;
}

const STATE_FILE = "object-store.json";

/**
 * The embedded default's object store: versitygw, built from its Go module and cached like the
 * Kubernetes components, serving `<dir>/data` with credentials made on first start and kept in
 * `<dir>/object-store.json`. Started once per folder; a second start finds it running.
 */
export async function startLocalObjectStore(
  dir: string,
  options: { build?: BuildOptions; log?: (line: string) => void } = {},
): Promise<LocalObjectStoreState> {
  await mkdir(join(dir, "data"), { recursive: true });
  const stateFile = join(dir, STATE_FILE);
  const previous = existsSync(stateFile)
    ? (JSON.parse(await readFile(stateFile, "utf8")) as LocalObjectStoreState)
    : undefined;
  if (previous && isRunning(previous.pid, previous.binary) && (await answers(previous.endpoint)))
    return previous;
  const { program, version } = await ensureObjectStoreBinary(options.build);
  const accessKeyId = previous?.accessKeyId ?? `tenantry${randomBytes(6).toString("hex")}`;
  const secretAccessKey = previous?.secretAccessKey ?? randomBytes(24).toString("base64url");
  const logFile = join(dir, "versitygw.log");
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const proc = startProcess(
      "versitygw",
      program,
      [
        "--access",
        accessKeyId,
        "--secret",
        secretAccessKey,
        "--port",
        `127.0.0.1:${port}`,
        "posix",
        join(dir, "data"),
      ],
      logFile,
      dir,
    );
    const endpoint = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && isRunning(proc.pid, program) && !(await answers(endpoint)))
      await sleep(100);
    if (await answers(endpoint)) {
      const state: LocalObjectStoreState = {
        endpoint,
        accessKeyId,
        secretAccessKey,
        region: "us-east-1",
        dataDir: join(dir, "data"),
        pid: proc.pid,
        binary: program,
        version,
        logFile,
      };
      await writeFile(stateFile, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
      options.log?.(`object store: versitygw ${version} at ${endpoint} serving ${state.dataDir}`);
      return state;
    }
    await stopProcess(proc);
    // Another process may have taken the port between our check and versitygw's bind.
    if (attempt >= 3 || !/address already in use/.test(logTail(logFile)))
      throw new UserError(`versitygw did not start (log ${logFile}):\n${logTail(logFile)}`);
  }
}

/** Stops the store started in `dir` (its data stays). */
export async function stopLocalObjectStore(dir: string): Promise<void> {
  const stateFile = join(dir, STATE_FILE);
  if (!existsSync(stateFile)) return;
  const state = JSON.parse(await readFile(stateFile, "utf8")) as LocalObjectStoreState;
  await stopProcess(state);
}

/** Whether an S3 endpoint answers HTTP at all (any status: unsigned requests are refused). */
async function answers(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(endpoint, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return true;
  } catch {
    return false;
  }
}
