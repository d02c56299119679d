/**
 * What this machine allows the node agent to do: loop-mounted ext4 volumes (root, loop devices,
 * mkfs.ext4) and fscrypt encryption (the fscrypt tool, a kernel that supports it). Found by doing it
 * once on a small scratch volume, so a "yes" is a tried fact and a "no" names the step that failed.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "pino";
import { errorMessage } from "../../common/index.js";
import { onPath, runCommand } from "./commands.js";
import {
  allocateImage,
  destroyImage,
  lockLoopData,
  mountImage,
  prepareLoopData,
  volumePaths,
} from "./volume-files.js";

export type Capability = { ok: true } | { ok: false; reason: string; message: string };

export interface HostCapabilities {
  /** Loop-mounted ext4 volumes (sizes enforced by the filesystem). */
  loop: Capability;
  /** fscrypt encryption of a volume's data folder. */
  encryption: Capability;
}

export interface ProbeOptions {
  /** Install Debian's fscrypt package with apt-get when it is missing (root only). */
  installTools: boolean;
  logger: Logger;
  /** Scratch folder for the trial volume (default: the system's temporary folder). */
  scratchDir?: string;
}

const no = (reason: string, message: string): Capability => ({ ok: false, reason, message });

let installing: Promise<string | undefined> | undefined;

/**
 * Installs Debian's `fscrypt` package (once per process). Returns why it could not, or undefined.
 * apt-get waits for another apt's lock instead of failing at once; the package lists are updated
 * only if the package is not known yet.
 */
export function installFscrypt(logger: Logger): Promise<string | undefined> {
  installing ??= (async () => {
    if (!(await onPath("apt-get")))
      return "fscrypt is not installed and apt-get is not available to install it";
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    const install = () =>
      runCommand(
        "apt-get",
        ["install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300", "fscrypt"],
        { env, timeoutMs: 600_000 },
      );
    logger.info("installing Debian's fscrypt package (apt-get install fscrypt)");
    let result = await install();
    if (result.code !== 0 && /Unable to locate package/i.test(result.stderr)) {
      logger.info("apt-get update (the package lists do not know fscrypt yet)");
      await runCommand("apt-get", ["update", "-o", "DPkg::Lock::Timeout=300"], { env, timeoutMs: 600_000 });
      result = await install();
    }
    if (result.code !== 0)
      return `apt-get install fscrypt failed: ${result.stderr.trim().split("\n").slice(-1)[0] ?? `exit ${result.code}`}`;
    logger.info("fscrypt installed");
    return undefined;
  })();
  return installing;
}

/** Tries a 16 MiB loop volume and an encrypted folder on it; reports what worked. */
export async function probeHost(options: ProbeOptions): Promise<HostCapabilities> {
  const uid = process.getuid?.() ?? -1;
  if (uid !== 0) {
    const why = no(
      "NoRoot",
      `the storage agent runs as uid ${uid}: loop devices and mounts need root, so volumes are plain folders (no size limit, no encryption)`,
    );
    return { loop: why, encryption: why };
  }
  if (!existsSync("/dev/loop-control")) {
    const why = no("NoLoopDevices", "this machine has no /dev/loop-control: loop devices are not available");
    return { loop: why, encryption: why };
  }
  if (!(await onPath("mkfs.ext4"))) {
    const why = no("NoMkfs", "mkfs.ext4 is not installed (Debian package e2fsprogs)");
    return { loop: why, encryption: why };
  }
  let fscryptMissing: string | undefined;
  if (!(await onPath("fscrypt"))) {
    fscryptMissing = options.installTools
      ? await installFscrypt(options.logger)
      : "fscrypt is not installed (Debian package fscrypt)";
    if (!fscryptMissing && !(await onPath("fscrypt")))
      fscryptMissing = "fscrypt is still not on PATH after its install";
  }

  const scratch = await mkdtemp(join(options.scratchDir ?? tmpdir(), "tenantry-storage-probe-"));
  const paths = volumePaths(scratch, "probe");
  try {
    try {
      await allocateImage(paths, 16n * 1024n * 1024n);
      await mountImage(paths);
    } catch (err) {
      const why = no("LoopMountFailed", `a loop-mounted ext4 volume could not be made: ${errorMessage(err)}`);
      return { loop: why, encryption: why };
    }
    if (fscryptMissing) return { loop: { ok: true }, encryption: no("NoFscrypt", fscryptMissing) };
    try {
      await prepareLoopData(paths, randomBytes(32), "probe", "probe");
      await writeFile(join(paths.loopData, "plain.txt"), "probe");
      await lockLoopData(paths);
      const names = await readdir(paths.loopData);
      if (names.includes("plain.txt"))
        return {
          loop: { ok: true },
          encryption: no("EncryptionNotEffective", "a locked fscrypt folder still showed its file names"),
        };
    } catch (err) {
      return {
        loop: { ok: true },
        encryption: no("EncryptionFailed", `fscrypt could not encrypt a folder here: ${errorMessage(err)}`),
      };
    }
    return { loop: { ok: true }, encryption: { ok: true } };
  } finally {
    await destroyImage(paths).catch((err) =>
      options.logger.warn({ error: errorMessage(err), scratch }, "could not remove the probe volume"),
    );
    await rm(scratch, { recursive: true, force: true }).catch(() => {});
  }
}

/** Keeps the last probe; a failed one is tried again after `retryMs`. */
export class CapabilityCache {
  private last?: { at: number; value: Promise<HostCapabilities> };

  constructor(
    private readonly options: ProbeOptions,
    private readonly retryMs = 5 * 60_000,
  ) {}

  get(): Promise<HostCapabilities> {
    const now = Date.now();
    if (this.last) {
      const { at, value } = this.last;
      return value.then((caps) => {
        if (caps.loop.ok && caps.encryption.ok) return caps;
        if (now - at < this.retryMs) return caps;
        this.last = undefined;
        return this.get();
      });
    }
    const value = probeHost(this.options);
    this.last = { at: now, value };
    value.catch(() => {
      this.last = undefined;
    });
    return value;
  }
}
