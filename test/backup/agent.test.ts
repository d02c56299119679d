/**
 * The backup agent's work on a volume folder against the real versitygw of the test run: a
 * round trip is byte-identical and encrypted at rest; a corrupted object, a wrong key or a store
 * that is down fail with a reason and leave the volume's data where it was.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { backupVolume, newTenantKey, restoreVolume, S3ObjectStore } from "../../src/backup/index.js";
import { testEnvironment } from "../support/clusters.js";

async function bytesOf(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe("backup agent on a volume folder", () => {
  let store: S3ObjectStore;
  let dir: string;
  const key = `agent-${process.pid}/volume.tar.enc`;
  const tenantKey = newTenantKey();
  const big = randomBytes(7 * 1024 * 1024);

  before(async () => {
    store = new S3ObjectStore({
      ...testEnvironment().objectStore,
      bucket: `agent-${randomBytes(4).toString("hex")}`,
    });
    await store.ensureBucket();
    dir = await mkdtemp(join(tmpdir(), "tenantry-agent-"));
    await mkdir(join(dir, "work", "deep"), { recursive: true });
    await writeFile(join(dir, "notes.txt"), "kept across a backup\n");
    await writeFile(join(dir, "work", "deep", "big.bin"), big);
  });

  after(async () => {
    await store.delete((await store.list(`agent-${process.pid}/`)).map((o) => o.key));
    store.close();
    await rm(dir, { recursive: true, force: true });
  });

  test("a backup is verified and encrypted; a restore gives the same bytes back and removes what came since", async () => {
    const record = await backupVolume(store, { dir, key, tenantKey });
    assert.equal(record.files, 2);
    assert.ok(record.size > big.length);
    const stored = await bytesOf(await store.get(key));
    assert.equal(stored.length, record.stored.size);
    assert.ok(!stored.includes(Buffer.from("kept across a backup")), "the store sees only ciphertext");

    await writeFile(join(dir, "notes.txt"), "changed since\n");
    await writeFile(join(dir, "added.txt"), "new\n");
    await restoreVolume(store, { dir, key, tenantKey });
    assert.equal(await readFile(join(dir, "notes.txt"), "utf8"), "kept across a backup\n");
    assert.ok((await readFile(join(dir, "work", "deep", "big.bin"))).equals(big));
    assert.deepEqual((await readdir(dir)).sort(), ["notes.txt", "work"]);
  });

  test("a corrupted object or another tenant's key fails the restore and leaves the data as it was", async () => {
    const corrupted = `agent-${process.pid}/corrupted.tar.enc`;
    await backupVolume(store, { dir, key: corrupted, tenantKey });
    const bytes = await bytesOf(await store.get(corrupted));
    bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff;
    await store.put(corrupted, bytes);
    await store.put(`${corrupted}.json`, await store.get(`${key}.json`));
    await writeFile(join(dir, "notes.txt"), "current data\n");
    await assert.rejects(
      restoreVolume(store, { dir, key: corrupted, tenantKey }),
      /authenticate|SHA-256 differs/,
    );
    await assert.rejects(restoreVolume(store, { dir, key, tenantKey: newTenantKey() }), /authenticate/);
    assert.equal(await readFile(join(dir, "notes.txt"), "utf8"), "current data\n");
    assert.deepEqual((await readdir(dir)).sort(), ["notes.txt", "work"], "no staging folder is left");
  });

  test("a store that is down fails the backup with the reason, and the data stays", async () => {
    const down = new S3ObjectStore({
      ...testEnvironment().objectStore,
      endpoint: "http://127.0.0.1:9",
      bucket: "down",
    });
    await assert.rejects(backupVolume(down, { dir, key, tenantKey }), /ECONNREFUSED/);
    down.close();
    assert.equal(await readFile(join(dir, "notes.txt"), "utf8"), "current data\n");
  });
});
