/**
 * The one conformance suite every ObjectStore runs: each implementation calls
 * `objectStoreConformance` from its own test file with a store backed by the real thing.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import { ObjectNotFound, type ObjectStore } from "../../src/backup/index.js";

export interface StoreFixture {
  store: ObjectStore;
  /** Bytes per part the store was given: the suite writes objects of several parts. */
  partSize: number;
  setUp?(): Promise<void>;
  tearDown?(): Promise<void>;
}

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export function objectStoreConformance(name: string, fixture: () => StoreFixture): void {
  describe(`${name} object store conformance`, () => {
    let f: StoreFixture;
    const prefix = `conformance-${process.pid}-${randomBytes(3).toString("hex")}/`;
    before(async () => {
      f = fixture();
      await f.setUp?.();
      await f.store.ensureBucket();
      await f.store.ensureBucket();
    });
    after(async () => {
      if (f) await f.store.delete((await f.store.list(prefix)).map((o) => o.key));
      await f?.tearDown?.();
    });

    it("keeps a small object byte for byte and reports its size and SHA-256", async () => {
      const body = Buffer.from("hello, store\n");
      const put = await f.store.put(`${prefix}small`, body);
      assert.deepEqual(put, { size: body.length, sha256: createHash("sha256").update(body).digest("hex") });
      assert.deepEqual(await bytesOf(await f.store.get(`${prefix}small`)), body);
      assert.deepEqual(await f.store.head(`${prefix}small`), { key: `${prefix}small`, size: body.length });
    });

    it("streams an object of several parts, in uneven chunks, with progress per part", async () => {
      const body = randomBytes(f.partSize * 2 + 12345);
      const chunks = [
        body.subarray(0, 1000),
        body.subarray(1000, f.partSize + 7),
        body.subarray(f.partSize + 7),
      ];
      const progress: number[] = [];
      const put = await f.store.put(`${prefix}big`, Readable.from(chunks), {
        onProgress: (bytes) => progress.push(bytes),
      });
      assert.equal(put.size, body.length);
      assert.equal(put.sha256, createHash("sha256").update(body).digest("hex"));
      assert.deepEqual(progress, [f.partSize, f.partSize * 2, body.length]);
      assert.ok((await bytesOf(await f.store.get(`${prefix}big`))).equals(body));
    });

    it("keeps an empty object", async () => {
      const put = await f.store.put(`${prefix}empty`, Readable.from([]));
      assert.equal(put.size, 0);
      assert.equal((await bytesOf(await f.store.get(`${prefix}empty`))).length, 0);
    });

    it("replaces an object put again", async () => {
      await f.store.put(`${prefix}replaced`, Buffer.from("first"));
      await f.store.put(`${prefix}replaced`, Buffer.from("second"));
      assert.equal((await bytesOf(await f.store.get(`${prefix}replaced`))).toString(), "second");
    });

    it("lists by prefix in key order, and deletes (missing keys ignored)", async () => {
      await f.store.put(`${prefix}list/b`, Buffer.from("b"));
      await f.store.put(`${prefix}list/a`, Buffer.from("aa"));
      await f.store.put(`${prefix}listing-not`, Buffer.from("x"));
      assert.deepEqual(await f.store.list(`${prefix}list/`), [
        { key: `${prefix}list/a`, size: 2 },
        { key: `${prefix}list/b`, size: 1 },
      ]);
      await f.store.delete([`${prefix}list/a`, `${prefix}list/b`, `${prefix}list/never`]);
      assert.deepEqual(await f.store.list(`${prefix}list/`), []);
    });

    it("says an object does not exist: get throws ObjectNotFound, head answers undefined", async () => {
      await assert.rejects(f.store.get(`${prefix}missing`), (err: unknown) => err instanceof ObjectNotFound);
      assert.equal(await f.store.head(`${prefix}missing`), undefined);
    });
  });
}
