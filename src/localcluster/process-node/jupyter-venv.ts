import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cacheRoot, UserError } from "../../common/index.js";
import { acquireLock } from "../lock.js";

/**
 * The Jupyter Server that LOCAL_IMAGES.jupyter runs: jupyter-server from PyPI with every package
 * pinned by `images/jupyter-requirements.txt`, in a virtualenv under the shared cache
 * (`~/.cache/tenantry/python/jupyter-server-<version>-py<python>-<hash>/`). Installed once per
 * machine under a lock, since several clusters and test runs share the cache; installing it is the
 * image's pull.
 */
export const JUPYTER_REQUIREMENTS = join(
  dirname(fileURLToPath(import.meta.url)),
  "images",
  "jupyter-requirements.txt",
);

export interface JupyterServerInstall {
  /** The virtualenv's folder. */
  dir: string;
  /** The `jupyter-server` program. */
  program: string;
  /** jupyter-server's pinned version. */
  version: string;
  pythonVersion: string;
  /** Seconds the install took (0 when it was already there). */
  installSeconds: number;
  reused: boolean;
}

export type InstallProgress = (done: number, total: number, detail: string) => void;

function requirements(): { text: string; packages: number; version: string } {
  const text = readFileSync(JUPYTER_REQUIREMENTS, "utf8");
  const pins = text.split("\n").filter((line) => /^[A-Za-z0-9]/.test(line));
  const version = pins.map((line) => /^jupyter[-_]server==(\S+)$/i.exec(line)?.[1]).find(Boolean);
  if (!version) throw new Error(`${JUPYTER_REQUIREMENTS} does not pin jupyter-server`);
  return { text, packages: pins.length, version };
}

function run(
  command: string,
  args: string[],
  options: { log?: NodeJS.WritableStream; onLine?: (line: string) => void } = {},
): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    // An install must not outlive the process that holds its lock (a stopped agent, a Ctrl-C).
    const stop = () => child.kill("SIGTERM");
    process.once("exit", stop);
    child.once("close", () => process.removeListener("exit", stop));
    let output = "";
    let partial = "";
    const take = (chunk: Buffer) => {
      const text = chunk.toString();
      output += text;
      options.log?.write(chunk);
      const lines = (partial + text).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) options.onLine?.(line);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

async function pythonVersion(python: string): Promise<string> {
  let result: { code: number; output: string };
  try {
    result = await run(python, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new UserError(
        `${python} was not found on PATH: the process node runs Jupyter images with a real Jupyter Server from PyPI, which needs Python 3`,
      );
    throw err;
  }
  if (result.code !== 0) throw new UserError(`${python} does not start: ${result.output.trim()}`);
  return result.output.trim();
}

let shared: Promise<JupyterServerInstall> | undefined;

/**
 * Installs (once) and returns the Jupyter Server. Calls in one process share one install; calls in
 * other processes wait for the lock and then find it done.
 */
export function ensureJupyterServer(options: InstallOptions = {}): Promise<JupyterServerInstall> {
  if (options.cacheDir || options.python) return install(options);
  shared ??= install(options).catch((err) => {
    shared = undefined;
    throw err;
  });
  return shared;
}

interface InstallOptions {
  cacheDir?: string;
  python?: string;
  progress?: InstallProgress;
}

/** Where the install for this Python and these pins lives. */
async function locate(options: InstallOptions) {
  const python = options.python ?? process.env.TENANTRY_PYTHON ?? "python3";
  const pins = requirements();
  const py = await pythonVersion(python);
  const hash = createHash("sha256").update(pins.text).digest("hex").slice(0, 10);
  const key = `jupyter-server-${pins.version}-py${py}-${hash}`;
  const root = join(options.cacheDir ?? cacheRoot(), "python");
  const dir = join(root, key);
  return { python, pins, py, key, root, dir, manifest: join(dir, "manifest.json") };
}

/** Whether the Jupyter Server is installed already (the image is "present"); installs nothing. */
export async function jupyterServerInstalled(options: InstallOptions = {}): Promise<boolean> {
  try {
    return existsSync((await locate(options)).manifest);
  } catch {
    return false;
  }
}

async function install(options: InstallOptions): Promise<JupyterServerInstall> {
  const { python, pins, py, key, root, dir, manifest } = await locate(options);
  const program = join(dir, "bin", "jupyter-server");
  const done = (installSeconds: number, reused: boolean): JupyterServerInstall => ({
    dir,
    program,
    version: pins.version,
    pythonVersion: py,
    installSeconds,
    reused,
  });
  if (existsSync(manifest)) return done(0, true);
  await mkdir(root, { recursive: true });
  const release = await acquireLock(join(root, `${key}.lock`), `installing jupyter-server ${pins.version}`);
  try {
    if (existsSync(manifest)) return done(0, true);
    const started = Date.now();
    // A virtualenv cannot be moved once made, so it is built in place; a half-built one is removed.
    await rm(dir, { recursive: true, force: true });
    const logDir = join(options.cacheDir ?? cacheRoot(), "logs");
    await mkdir(logDir, { recursive: true });
    const logFile = join(logDir, `pip-${key}.log`);
    const log = createWriteStream(logFile);
    try {
      options.progress?.(0, pins.packages + 1, "creating a virtualenv");
      const venv = await run(python, ["-m", "venv", dir], { log });
      if (venv.code !== 0)
        throw new UserError(
          `"${python} -m venv" failed, so the Jupyter image cannot be installed (on Debian: apt-get install python3-venv): ${venv.output.trim().split("\n").slice(-3).join(" ")}`,
        );
      let collected = 0;
      const pip = await run(
        join(dir, "bin", "pip"),
        ["install", "--disable-pip-version-check", "--progress-bar", "off", "-r", JUPYTER_REQUIREMENTS],
        {
          log,
          onLine: (line) => {
            if (line.startsWith("Collecting ")) {
              collected++;
              options.progress?.(
                Math.min(collected, pins.packages),
                pins.packages + 1,
                "packages downloaded",
              );
            } else if (line.startsWith("Installing collected packages")) {
              options.progress?.(pins.packages, pins.packages + 1, "installing");
            }
          },
        },
      );
      if (pip.code !== 0) {
        const lines = pip.output.trim().split("\n");
        const cause = lines.find((l) => /^ERROR:/.test(l)) ?? lines.slice(-1)[0] ?? "";
        throw new UserError(
          `pip could not install jupyter-server ${pins.version} (log ${logFile}): ${cause.trim()}`,
        );
      }
      const installSeconds = Math.round((Date.now() - started) / 100) / 10;
      await writeFile(
        manifest,
        `${JSON.stringify({ jupyterServer: pins.version, python: py, installSeconds, installedAt: new Date().toISOString() }, null, 2)}\n`,
      );
      options.progress?.(pins.packages + 1, pins.packages + 1, "installed");
      return done(installSeconds, false);
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    } finally {
      log.end();
    }
  } finally {
    await release();
  }
}
