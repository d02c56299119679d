/** The S3 object store against the real versitygw that `npm test` starts for the run. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { describe, it } from "node:test";
import { ListMultipartUploadsCommand, S3Client } from "@aws-sdk/client-s3";
import { S3ObjectStore } from "../../src/backup/index.js";
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
