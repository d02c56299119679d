/**
 * The files of one pooled volume on its backing store, and the operations that make them: a sparse
 * file formatted as ext4 with the encrypt feature, loop-mounted, its data folder encrypted with
 * fscrypt under the claim's key (a raw 32-byte key); or, where loop devices
 * cannot be used, a plain folder.
 *
 *   <store>/images/<volume>.img         the sparse file (…img.partial while being formatted)
 *   <store>/mounts/<volume>/            its mount point
 *   <store>/mounts/<volume>/data        the folder pods see (encrypted per tenant)
 *   <store>/mounts/<volume>/.claim      uid of the claim that folder was made for
 *   <store>/dirs/<volume>/data          the folder pods see, for the Directory format (and its .claim)
 *   <store>/fscrypt.conf                fscrypt's settings for this store (FSCRYPT_CONF)
 */
import { existsSync } from "node:fs";
import {
  chmod,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  rename,
  rm,
  rmdir,
  stat,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { CommandError, mustRun, runCommand } from "./commands.js";

export interface VolumePaths {
  image: string;
  partial: string;
  mount: string;
  loopData: string;
  loopClaim: string;
  dir: string;
  dirData: string;
  dirClaim: string;
  fscryptConf: string;
}

export function volumePaths(storePath: string, volume: string): VolumePaths {
  const mount = join(storePath, "mounts", volume);
  const dir = join(storePath, "dirs", volume);
  return {
    image: join(storePath, "images", `${volume}.img`),
    partial: join(storePath, "images", `${volume}.img.partial`),
    mount,
    loopData: join(mount, "data"),
    loopClaim: join(mount, ".claim"),
    dir,
    dirData: join(dir, "data"),
    dirClaim: join(dir, ".claim"),
    fscryptConf: join(storePath, "fscrypt.conf"),
  };
}

/** The backing store's disk is full. */
export class StoreFullError extends Error {}
/** The volume is mounted and in use (a process still has files open). */
export class VolumeBusyError extends Error {}

/** fscrypt's settings: raw keys, AES-256-XTS contents, policy version 2 (keys in the filesystem keyring, for every user). */
const FSCRYPT_CONF = `${JSON.stringify(
  {
    source: "raw_key",
    hash_costs: { time: "1", memory: "1024", parallelism: "1" },
    options: { padding: "32", contents: "AES_256_XTS", filenames: "AES_256_CTS", policy_version: "2" },
    use_fs_keyring_for_v1_policies: false,
    allow_cross_user_metadata: false,
  },
  null,
  "\t",
)}\n`;

/**
 * Runs `use` with the key in a file only this process can read, on tmpfs (/dev/shm) so that it never
 * reaches a disk, removed right after. (fscrypt cannot read a key from a socket, which is what
 * Node.js gives a child as its standard input.)
 */
async function withKeyFile<T>(key: Buffer, use: (file: string) => Promise<T>): Promise<T> {
  const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const dir = await mkdtemp(join(base, "tenantry-key-"));
  try {
    const file = join(dir, "key");
    await writeFile(file, key, { mode: 0o600 });
    return await use(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function fscryptEnv(paths: VolumePaths): NodeJS.ProcessEnv {
  return { ...process.env, FSCRYPT_CONF: paths.fscryptConf };
}

async function ensureFscryptConf(paths: VolumePaths): Promise<void> {
  if (existsSync(paths.fscryptConf)) return;
  await mkdir(dirname(paths.fscryptConf), { recursive: true });
  const temporary = `${paths.fscryptConf}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await writeFile(temporary, FSCRYPT_CONF);
  await rename(temporary, paths.fscryptConf);
}

/** Whether `path` is a mount point: it sits on another device than its parent folder. */
export async function isMountPoint(path: string): Promise<boolean> {
  try {
    const [self, parent] = await Promise.all([stat(path), stat(dirname(path))]);
    return self.dev !== parent.dev;
  } catch {
    return false;
  }
}

const NO_SPACE = /No space left on device|ENOSPC|File too large/i;

/**
 * Makes the sparse file and its ext4 filesystem (with the encrypt feature) unless it exists. It is
 * formatted under a temporary name and renamed, so an existing `<volume>.img` is always complete.
 */
export async function allocateImage(paths: VolumePaths, sizeBytes: bigint): Promise<boolean> {
  if (existsSync(paths.image)) return false;
  await mkdir(dirname(paths.image), { recursive: true });
  await rm(paths.partial, { force: true });
  try {
    const file = await open(paths.partial, "w");
    try {
      await file.truncate(Number(sizeBytes));
    } finally {
      await file.close();
    }
    // Lazy inode tables and journal: nothing but the superblocks is written, so the file stays sparse.
    await mustRun("mkfs.ext4", [
      "-q",
      "-F",
      "-m",
      "0",
      "-O",
      "encrypt",
      "-E",
      "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
      paths.partial,
    ]);
  } catch (err) {
    await rm(paths.partial, { force: true });
    const text = err instanceof CommandError ? err.output : String((err as Error).message ?? err);
    if ((err as NodeJS.ErrnoException).code === "ENOSPC" || NO_SPACE.test(text))
      throw new StoreFullError(`the store's disk is full (${text.trim().split("\n")[0]})`);
    throw err;
  }
  await rename(paths.partial, paths.image);
  return true;
}

/** Loop-mounts the volume's file unless it is mounted; returns whether it mounted it now. */
export async function mountImage(paths: VolumePaths): Promise<boolean> {
  if (await isMountPoint(paths.mount)) return false;
  await mkdir(paths.mount, { recursive: true });
  // noinit_itable: the kernel must not zero the inode tables behind our back (the file would grow).
  await mustRun("mount", ["-o", "loop,noinit_itable,nodev,nosuid", paths.image, paths.mount]);
  return true;
}

/** Prepares the mounted filesystem for fscrypt (its `.fscrypt` metadata folder). */
export async function setupFscrypt(paths: VolumePaths): Promise<void> {
  await ensureFscryptConf(paths);
  if (existsSync(join(paths.mount, ".fscrypt"))) return;
  await mustRun("fscrypt", ["setup", paths.mount, "--quiet", "--force"], { env: fscryptEnv(paths) });
}

/**
 * The uid of the claim the volume's data folder was made for, read from the volume itself (not from
 * a cache that may lag): a different claim means the data must be scrubbed first.
 */
export async function preparedFor(
  paths: VolumePaths,
  format: "LoopExt4" | "Directory",
): Promise<string | undefined> {
  try {
    return (
      (await readFile(format === "LoopExt4" ? paths.loopClaim : paths.dirClaim, "utf8")).trim() || undefined
    );
  } catch {
    return undefined;
  }
}

/**
 * The data folder for a claim: created empty, encrypted with `key` (when given) under the protector
 * name `owner`, opened to every user, then renamed into place — so the folder pods see exists only
 * once it is encrypted. The claim's uid is written beside it first. An existing folder is unlocked
 * with the key (after a remount it is locked).
 */
export async function prepareLoopData(
  paths: VolumePaths,
  key: Buffer | undefined,
  owner: string,
  claimUid: string,
): Promise<void> {
  if (existsSync(paths.loopData)) {
    if (key) await unlock(paths, key);
    return;
  }
  const fresh = join(paths.mount, ".data-new");
  await rm(fresh, { recursive: true, force: true });
  await mkdir(fresh);
  if (key) {
    await setupFscrypt(paths);
    await withKeyFile(key, (file) =>
      mustRun(
        "fscrypt",
        ["encrypt", fresh, "--quiet", "--source=raw_key", `--name=${owner}`, `--key=${file}`],
        { env: fscryptEnv(paths) },
      ),
    );
  }
  await chmod(fresh, 0o777);
  await writeFile(paths.loopClaim, claimUid);
  await rename(fresh, paths.loopData);
}

async function unlock(paths: VolumePaths, key: Buffer): Promise<void> {
  const result = await withKeyFile(key, (file) =>
    runCommand("fscrypt", ["unlock", paths.loopData, "--quiet", `--key=${file}`], { env: fscryptEnv(paths) }),
  );
  if (result.code === 0 || /already unlocked/.test(result.stderr)) return;
  throw new CommandError("fscrypt unlock", result);
}

/** Locks the data folder: its key leaves the kernel, names and contents become unreadable. */
export async function lockLoopData(paths: VolumePaths): Promise<void> {
  const result = await runCommand("fscrypt", ["lock", paths.loopData, "--quiet"], { env: fscryptEnv(paths) });
  if (result.code === 0 || /already locked|not unlocked/i.test(result.stderr)) return;
  throw new CommandError("fscrypt lock", result);
}

/** Unmounts the volume (the loop device goes with it); a volume still in use is left alone. */
export async function unmountImage(paths: VolumePaths): Promise<void> {
  if (!(await isMountPoint(paths.mount))) return;
  const result = await runCommand("umount", [paths.mount]);
  if (result.code === 0) return;
  if (/busy/i.test(result.stderr))
    throw new VolumeBusyError(`${paths.mount} is still in use: ${result.stderr.trim()}`);
  throw new CommandError("umount", result);
}

/** Removes a loop volume's files: unmounted first, so nothing below a live mount is ever deleted. */
export async function destroyImage(paths: VolumePaths): Promise<void> {
  await unmountImage(paths);
  await rm(paths.partial, { force: true });
  await rm(paths.image, { force: true });
  if (existsSync(paths.mount) && !(await isMountPoint(paths.mount))) {
    // An unmounted mount point is an empty folder; refuse to delete anything that is not.
    await rmdir(paths.mount).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err;
    });
  }
}

/** A Directory-format volume: its folder and an empty data folder. */
export async function allocateDirectory(paths: VolumePaths): Promise<void> {
  await mkdir(paths.dir, { recursive: true });
}

export async function prepareDirectoryData(paths: VolumePaths, claimUid: string): Promise<void> {
  if (existsSync(paths.dirData)) return;
  await mkdir(paths.dir, { recursive: true });
  await writeFile(paths.dirClaim, claimUid);
  await mkdir(paths.dirData, { mode: 0o777 });
  await chmod(paths.dirData, 0o777);
}

export async function destroyDirectory(paths: VolumePaths): Promise<void> {
  await rm(paths.dir, { recursive: true, force: true });
}

/** Names of the volumes that have files in a store (for finding orphans). */
export async function volumesOnStore(storePath: string): Promise<Set<string>> {
  const names = new Set<string>();
  const list = async (dir: string) => readdir(join(storePath, dir)).catch(() => [] as string[]);
  for (const file of await list("images")) {
    const match = /^(.+)\.img(\.partial)?$/.exec(file);
    if (match) names.add(match[1]!);
  }
  for (const entry of await list("mounts")) names.add(entry);
  for (const entry of await list("dirs")) names.add(entry);
  return names;
}
