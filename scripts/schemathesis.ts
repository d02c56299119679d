/**
 * schemathesis (PyPI), the property-based API tester the fuzz tests drive tenantry's OpenAPI
 * documents with: installed once per machine into a virtualenv under the shared cache
 * (`~/.cache/tenantry/python/schemathesis-<version>-py<python>/`), under a lock, with progress.
 * `npx tsx scripts/schemathesis.ts` installs it ahead of a test run and prints where it is.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, open, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { cacheRoot, createProgress, UserError } from "../src/common/index.js";

export const SCHEMATHESIS_VERSION = "4.32.5";

export interface SchemathesisInstall {
  /** The `st` program. */
  program: string;
  version: string;
  dir: string;
}

function run(command: string, args: string[], onLine?: (line: string) => void) {
  return new Promise<{ code: number; output: string }>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    // An install must not outlive the process holding its lock.
    const stop = () => child.kill("SIGTERM");
    process.once("exit", stop);
    let output = "";
    let partial = "";
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      const lines = (partial + chunk.toString()).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) onLine?.(line);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", reject);
    child.on("close", (code) => {
      process.removeListener("exit", stop);
      resolve({ code: code ?? 1, output });
    });
  });
}

/** An exclusive lock file with the owner's pid; a dead owner's lock is taken over. */
async function lock(path: string): Promise<() => Promise<void>> {
  for (;;) {
    try {
      const handle = await open(path, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => rm(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const owner = Number(await readFile(path, "utf8").catch(() => ""));
    let alive = false;
    try {
      if (owner) process.kill(owner, 0);
      alive = owner > 0;
    } catch (err) {
      alive = (err as NodeJS.ErrnoException).code === "EPERM";
    }
    if (!alive) await rm(path, { force: true });
    else await sleep(500);
  }
}

let shared: Promise<SchemathesisInstall> | undefined;

/** Installs (once) and returns schemathesis; concurrent callers, in this process or others, share one install. */
export function ensureSchemathesis(): Promise<SchemathesisInstall> {
  shared ??= install().catch((err) => {
    shared = undefined;
    throw err;
  });
  return shared;
}

async function install(): Promise<SchemathesisInstall> {
  const python = process.env.TENANTRY_PYTHON ?? "python3";
  const probe = await run(python, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]).catch(
    (err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") throw new UserError(`${python} was not found: schemathesis needs Python 3`);
      throw err;
    },
  );
  if (probe.code !== 0) throw new UserError(`${python} does not start: ${probe.output.trim()}`);
  const root = join(cacheRoot(), "python");
  const dir = join(root, `schemathesis-${SCHEMATHESIS_VERSION}-py${probe.output.trim()}`);
  const manifest = join(dir, "manifest.json");
  const done = { program: join(dir, "bin", "st"), version: SCHEMATHESIS_VERSION, dir };
  if (existsSync(manifest)) return done;
  await mkdir(root, { recursive: true });
  const release = await lock(`${dir}.lock`);
  try {
    if (existsSync(manifest)) return done;
    const progress = createProgress(`installing schemathesis ${SCHEMATHESIS_VERSION}`);
    // A virtualenv cannot be moved once made: it is built in place, and a half-built one removed.
    await rm(dir, { recursive: true, force: true });
    try {
      progress.update(0, 3, "creating a virtualenv");
      const venv = await run(python, ["-m", "venv", dir]);
      if (venv.code !== 0)
        throw new UserError(
          `"${python} -m venv" failed (on Debian: apt-get install python3-venv): ${venv.output}`,
        );
      let collected = 0;
      const pip = await run(
        join(dir, "bin", "pip"),
        [
          "install",
          "--disable-pip-version-check",
          "--progress-bar",
          "off",
          `schemathesis==${SCHEMATHESIS_VERSION}`,
        ],
        (line) => {
          if (line.startsWith("Collecting ")) progress.update(1, 3, `${++collected} packages collected`);
          else if (line.startsWith("Installing collected packages")) progress.update(2, 3, "installing");
        },
      );
      if (pip.code !== 0) {
        const cause = pip.output.split("\n").find((l) => l.startsWith("ERROR:")) ?? pip.output.slice(-500);
        throw new UserError(`pip could not install schemathesis ${SCHEMATHESIS_VERSION}: ${cause.trim()}`);
      }
      await writeFile(
        manifest,
        `${JSON.stringify({ schemathesis: SCHEMATHESIS_VERSION, installedAt: new Date().toISOString() }, null, 2)}\n`,
      );
      progress.finish(`installed in ${dir}`);
      return done;
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  } finally {
    await release();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const installed = await ensureSchemathesis();
  process.stdout.write(`${installed.program} (schemathesis ${installed.version})\n`);
}
