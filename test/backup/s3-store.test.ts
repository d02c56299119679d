/** The S3 object store against the real versitygw that `npm test` starts for the run. */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand, S3Client } from "@aws-sdk/client-s3";
import { S3ObjectStore, type StoreRequest } from "../../src/backup/index.js";
import { testEnvironment } from "../support/clusters.js";
import { objectStoreConformance } from "./object-store-conformance.js";

const PART_SIZE = 5 * 1024 * 1024;
let store: S3ObjectStore;

objectStoreConformance("S3 (versitygw)", () => ({
  get store() {
    return store;
  },
  partSize: PART_SIZE,
  async setUp() {
    const s3 = testEnvironment().objectStore;
    store = new S3ObjectStore({
      ...s3,
      bucket: `conformance-${randomBytes(4).toString("hex")}`,
      partSize: PART_SIZE,
    });
  },
  async tearDown() {
    store.close();
  },
}));

describe("S3 object store faults", () => {
  it("says so when the endpoint does not answer, and when credentials are wrong", async () => {
    const s3 = testEnvironment().objectStore;
    const down = new S3ObjectStore({ ...s3, endpoint: "http://127.0.0.1:9", bucket: "faults" });
    await assert.rejects(down.put("x", Buffer.from("x")), /ECONNREFUSED|connect/);
    down.close();
    const wrong = new S3ObjectStore({ ...s3, secretAccessKey: "not-the-secret", bucket: "faults" });
    await assert.rejects(wrong.ensureBucket());
    wrong.close();
  });

  it("a stream that fails after some parts leaves no object and no upload behind", async () => {
    const s3 = testEnvironment().objectStore;
    const bucket = `faults-${randomBytes(4).toString("hex")}`;
    const store = new S3ObjectStore({ ...s3, bucket, partSize: PART_SIZE, concurrency: 3 });
    await store.ensureBucket();
    async function* failing() {
      for (let i = 0; i < 5; i++) yield randomBytes(PART_SIZE);
      throw new Error("the archive broke off");
    }
    await assert.rejects(store.put("broken", Readable.from(failing())), /the archive broke off/);
    assert.equal(await store.head("broken"), undefined);
    const client = new S3Client({
      endpoint: s3.endpoint,
      region: s3.region,
      credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      forcePathStyle: true,
    });
    const uploads = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    assert.deepEqual(uploads.Uploads ?? [], [], "the multipart upload was aborted");
    client.destroy();
    store.close();
  });

  it("refuses a part size S3 cannot take, and a concurrency out of range, naming the limit", () => {
    const s3 = testEnvironment().objectStore;
    assert.throws(
      () => new S3ObjectStore({ ...s3, bucket: "x-parts", concurrency: 0 }),
      /concurrency must be an integer from 1 to 64, not 0/,
    );
    assert.throws(
      () => new S3ObjectStore({ ...s3, bucket: "x-parts", partSize: 1024 }),
      /partSize must be at least 5242880/,
    );
  });
});

describe("an agent's store through presigned URLs", () => {
  const s3 = () => testEnvironment().objectStore;
  const bytesOf = async (stream: AsyncIterable<unknown>) => {
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  it("keeps objects byte for byte with no key of its own: every request, even one part, is a presigned multipart one", async () => {
    const bucket = `presigned-${randomBytes(4).toString("hex")}`;
    const keyed = new S3ObjectStore({ ...s3(), bucket, partSize: PART_SIZE });
    await keyed.ensureBucket();
    const asked: StoreRequest[] = [];
    const agent = new S3ObjectStore({
      broker: {
        url: "http://127.0.0.1:9",
        presign: async (request) => {
          asked.push(request);
          return keyed.presign(request);
        },
      },
      partSize: PART_SIZE,
      concurrency: 4,
    });
    const small = Buffer.from("a record\n");
    assert.deepEqual(await agent.put("k/record.json", small), {
      size: small.length,
      sha256: createHash("sha256").update(small).digest("hex"),
    });
    assert.deepEqual(
      asked.map((r) => r.operation),
      ["CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"],
    );
    const big = randomBytes(PART_SIZE * 2 + 99);
    const progress: number[] = [];
    const put = await agent.put("k/archive", Readable.from([big]), { onProgress: (b) => progress.push(b) });
    assert.equal(put.sha256, createHash("sha256").update(big).digest("hex"));
    assert.deepEqual(progress, [PART_SIZE, PART_SIZE * 2, big.length]);
    assert.ok((await bytesOf(await agent.get("k/archive"))).equals(big));
    const parts = asked.filter((r) => r.operation === "UploadPart");
    assert.ok(parts.every((r) => r.operation === "UploadPart" && r.checksumSHA256.length === 44));
    await assert.rejects(agent.list("k/"), /ListObjectsV2 is not a request a backup agent makes/);
    agent.close();
    keyed.close();
  });

  it("a presigned URL takes only its key, a part's URL only its bytes, and none works once expired", async () => {
    const bucket = `presigned-${randomBytes(4).toString("hex")}`;
    const keyed = new S3ObjectStore({ ...s3(), bucket, partSize: PART_SIZE });
    await keyed.ensureBucket();
    await keyed.put("mine", Buffer.from("mine"));
    await keyed.put("theirs", Buffer.from("theirs"));
    const get = await keyed.presign({ operation: "GetObject", key: "mine" });
    assert.equal(await (await fetch(get.url)).text(), "mine");
    assert.equal((await fetch(get.url.replace("/mine?", "/theirs?"))).status, 403);
    const created = await keyed.presign({ operation: "CreateMultipartUpload", key: "mine" });
    const uploadId = /<UploadId>([^<]+)</.exec(
      await (await fetch(created.url, { method: "POST", headers: created.headers })).text(),
    )![1]!;
    const bytes = randomBytes(2048);
    const part = await keyed.presign({
      operation: "UploadPart",
      key: "mine",
      uploadId,
      partNumber: 1,
      checksumSHA256: createHash("sha256").update(bytes).digest("base64"),
    });
    const other = await fetch(part.url, { method: "PUT", headers: part.headers, body: randomBytes(2048) });
    assert.equal(other.status, 400, "other bytes than the signed checksum's");
    assert.equal(
      (await fetch(part.url, { method: "PUT", body: bytes })).status,
      403,
      "without the signed checksum",
    );
    assert.equal((await fetch(part.url, { method: "PUT", headers: part.headers, body: bytes })).status, 200);
    const short = await keyed.presign({ operation: "GetObject", key: "mine" }, 1);
    await sleep(2500);
    assert.equal((await fetch(short.url)).status, 403, "expired");
    keyed.close();
  });

  it("aborts the uploads left open under a prefix, and only those", async () => {
    const bucket = `presigned-${randomBytes(4).toString("hex")}`;
    const keyed = new S3ObjectStore({ ...s3(), bucket, partSize: PART_SIZE });
    await keyed.ensureBucket();
    const client = new S3Client({
      endpoint: s3().endpoint,
      region: s3().region,
      credentials: { accessKeyId: s3().accessKeyId, secretAccessKey: s3().secretAccessKey },
      forcePathStyle: true,
    });
    for (const key of ["a/one", "a/two", "b/three"])
      await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }));
    assert.equal(await keyed.abortUploads("a/"), 2);
    const left = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    assert.deepEqual(
      (left.Uploads ?? []).map((u) => u.Key),
      ["b/three"],
    );
    client.destroy();
    keyed.close();
  });
});
