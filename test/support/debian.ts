/**
 * Installing Debian's packages for tests that need a real service (Keystone, the OpenStack
 * compute services): once per machine, as root, with apt caching the downloads. Concurrent test
 * processes wait for one another instead of failing on dpkg's lock.
 */
import { execFile } from "node:child_process";
import { open, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Someone else's apt-get may hold dpkg's lock for a while: wait for it rather than fail. */
const WAIT_FOR_DPKG = ["-o", "DPkg::Lock::Timeout=600"];

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Serializes installs across test processes: two concurrent `apt-get install`s fail on dpkg's lock. */
export async function withInstallLock<T>(name: string, work: () => Promise<T>): Promise<T> {
  const path = join(tmpdir(), `tenantry-${name}-install.lock`);
  const deadline = Date.now() + 20 * 60_000;
  for (;;) {
    try {
      const handle = await open(path, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    const owner = Number.parseInt(await readFile(path, "utf8").catch(() => ""), 10);
    if (!owner || !isAlive(owner)) {
      await rm(path, { force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`${path} is held by pid ${owner} for too long`);
    await sleep(500);
  }
  try {
    return await work();
  } finally {
    await rm(path, { force: true });
  }
}

/** True when every command (a path or a name on PATH) is there. */
export async function commandsPresent(commands: readonly string[]): Promise<boolean> {
  try {
    await run("sh", [
      "-c",
      commands.map((c) => (c.startsWith("/") ? `test -e ${c}` : `command -v ${c}`)).join(" && "),
    ]);
    return true;
  } catch {
    return false;
  }
}

export interface DebianInstall {
  /** Short name for the lock and the messages, e.g. `keystone`. */
  label: string;
  packages: readonly string[];
  /** Commands or paths that exist once the packages are installed. */
  provides: readonly string[];
  /** debconf answers (`package question type value` lines) given before installing. */
  preseed?: readonly string[];
  /** Keep the packages' daemons from starting during the install (no systemd here; tests start them). */
  noDaemons?: boolean;
  /** What the install costs, for the progress line. */
  expect?: string;
}

/** Installs the packages unless what they provide is already there. */
export async function ensureDebianPackages(install: DebianInstall): Promise<void> {
  if (await commandsPresent(install.provides)) return;
  await withInstallLock(install.label, async () => {
    if (await commandsPresent(install.provides)) return;
    const started = Date.now();
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    const policy = "/usr/sbin/policy-rc.d";
    try {
      if (install.preseed?.length) {
        const file = join(tmpdir(), `tenantry-${install.label}-preseed-${process.pid}`);
        await writeFile(file, `${install.preseed.join("\n")}\n`);
        await run("debconf-set-selections", [file]).finally(() => rm(file, { force: true }));
      }
      // invoke-rc.d asks this script whether to start a service; 101 means "no".
      if (install.noDaemons) await writeFile(policy, "#!/bin/sh\nexit 101\n", { mode: 0o755 });
      process.stderr.write(`${install.label}: apt-get update\n`);
      await run("apt-get", [...WAIT_FOR_DPKG, "update"], { env, maxBuffer: 64 * 1024 * 1024 });
      process.stderr.write(
        `${install.label}: apt-get install ${install.packages.join(" ")}${install.expect ? ` (${install.expect})` : ""}\n`,
      );
      await run(
        "apt-get",
        [...WAIT_FOR_DPKG, "install", "-y", "--no-install-recommends", ...install.packages],
        { env, maxBuffer: 256 * 1024 * 1024 },
      );
    } catch (err) {
      const detail =
        (err as { stderr?: string }).stderr?.trim().split("\n").slice(-5).join("\n") ?? String(err);
      throw new Error(
        `${install.label} tests need Debian's ${install.packages.join(", ")} packages and installing them failed; ` +
          `install them as root with: apt-get install -y --no-install-recommends ${install.packages.join(" ")}\n${detail}`,
      );
    } finally {
      if (install.noDaemons) await rm(policy, { force: true });
    }
    if (!(await commandsPresent(install.provides))) {
      throw new Error(
        `installed ${install.packages.join(", ")} but one of ${install.provides.join(", ")} is missing`,
      );
    }
    process.stderr.write(`${install.label}: installed in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  });
}
