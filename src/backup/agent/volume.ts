import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { decryptor, encryptor, HashingStream } from "../crypto.js";
import type { ObjectStore } from "../store/spi.js";

/** What an agent does with the store: put and get its own objects (a brokered store does no more). */
export type ArchiveStore = Pick<ObjectStore, "put" | "get">;

/**
 * What the backup agent does inside the tenant's namespace with one claim mounted: archive the
 * folder (tar), encrypt it with the tenant's key and stream it to the store in checksummed parts
 * (several at once), then read it back to verify; or the reverse, into a staging folder that replaces the volume's
 * contents only once every byte has been verified.
 */

/** The record kept next to each archive (`<key>.json`): what it holds and how to open it. */
export interface ArchiveRecord {
  format: "tar+aes-256-gcm";
  /** Bytes of the archive before encryption and their SHA-256. */
  size: number;
  sha256: string;
  /** The object as stored (ciphertext). */
  stored: { size: number; sha256: string };
  iv: string;
  tag: string;
  files: number;
}

/** Where a restore unpacks before it replaces the volume's contents. */
export const STAGING_DIR = ".tenantry-restore";

export const recordKey = (key: string) => `${key}.json`;

function tar(args: string[], stdin: "ignore" | "pipe"): { child: ChildProcess; done: Promise<void> } {
  const child = spawn("tar", args, { stdio: [stdin, stdin === "pipe" ? "ignore" : "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<void>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      // GNU tar exits 1 when a file changed while it was read: the copy is still consistent per file.
      if (code === 0 || (code === 1 && args.includes("-c"))) resolve();
      else reject(new Error(`tar exited with ${code}: ${stderr.trim().split("\n").slice(-2).join(" ")}`));
    });
  });
  return { child, done };
}

async function countFiles(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).length;
}

export async function backupVolume(
  store: ArchiveStore,
  options: { dir: string; key: string; tenantKey: Buffer; onProgress?: (bytes: number) => void },
): Promise<ArchiveRecord> {
  const files = await countFiles(options.dir);
  const archive = tar(["-C", options.dir, `--exclude=./${STAGING_DIR}`, "-cf", "-", "."], "ignore");
  const plain = new HashingStream();
  const encryption = encryptor(options.tenantKey);
  const flowing = pipeline(archive.child.stdout!, plain, encryption.stream);
  const [put] = await Promise.all([
    store.put(options.key, encryption.stream, options.onProgress ? { onProgress: options.onProgress } : {}),
    flowing,
    archive.done,
  ]);
  const record: ArchiveRecord = {
    format: "tar+aes-256-gcm",
    size: plain.bytes,
    sha256: plain.digest(),
    stored: put,
    ...encryption.sealed(),
    files,
  };
  await verifyArchive(store, options.key, record);
  await store.put(recordKey(options.key), Buffer.from(`${JSON.stringify(record, null, 2)}\n`));
  return record;
}

/**
 * Reads the stored archive back and checks it is, byte for byte, what was written (size and
 * SHA-256); throws naming what differs. The same ciphertext under the same key, IV and tag decrypts
 * to what was archived, so the plaintext is not decrypted again here: a restore checks both.
 */
export async function verifyArchive(store: ArchiveStore, key: string, record: ArchiveRecord): Promise<void> {
  const stored = new HashingStream();
  await pipeline(await store.get(key), stored, async (source) => {
    for await (const _ of source);
  });
  if (stored.bytes !== record.stored.size || stored.digest() !== record.stored.sha256)
    throw new Error(`the stored object ${key} does not match what was written (SHA-256 differs)`);
}

export async function readRecord(store: ArchiveStore, key: string): Promise<ArchiveRecord> {
  const chunks: Buffer[] = [];
  for await (const chunk of await store.get(recordKey(key))) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString()) as ArchiveRecord;
}

export async function restoreVolume(
  store: ArchiveStore,
  options: {
    dir: string;
    key: string;
    tenantKey: Buffer;
    /** The archive's SHA-256 as tenantry recorded it when the backup ended (the stored record must agree). */
    sha256?: string;
    onProgress?: (bytes: number) => void;
  },
): Promise<ArchiveRecord> {
  const record = await readRecord(store, options.key);
  if (options.sha256 && record.sha256 !== options.sha256)
    throw new Error(
      `the record of ${options.key} names another archive than the backup recorded (SHA-256 ${record.sha256}, not ${options.sha256}): it changed since the backup ended`,
    );
  const staging = join(options.dir, STAGING_DIR);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    // GCM authenticates every stored byte (a changed one fails at the end, before the swap); the
    // archive's own SHA-256 is checked too. GCM keeps ciphertext and plaintext the same length.
    const plain = new HashingStream();
    if (options.onProgress) {
      const report = options.onProgress;
      plain.on("data", () => report(plain.bytes));
    }
    const unpack = tar(["-C", staging, "-xf", "-"], "pipe");
    try {
      await Promise.all([
        pipeline(
          await store.get(options.key),
          decryptor(options.tenantKey, record),
          plain,
          unpack.child.stdin!,
        ),
        unpack.done,
      ]);
    } catch (err) {
      if (/unable to authenticate/.test((err as Error).message ?? ""))
        throw new Error(
          `the archive in ${options.key} does not decrypt under the tenant's key: it changed since it was written, or the key is another (${(err as Error).message})`,
        );
      throw err;
    }
    if (plain.bytes !== record.size || plain.digest() !== record.sha256)
      throw new Error(`the archive in ${options.key} is not what was archived (SHA-256 differs)`);
    // Verified: only now is the volume's own content replaced.
    for (const entry of await readdir(options.dir)) {
      if (entry !== STAGING_DIR) await rm(join(options.dir, entry), { recursive: true, force: true });
    }
    for (const entry of await readdir(staging)) await rename(join(staging, entry), join(options.dir, entry));
    return record;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
