/** The S3 object store against the real versitygw that `npm test` starts for the run. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, it } from "node:test";
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

  it("refuses a part size S3 cannot take, naming the limit", () => {
    const s3 = testEnvironment().objectStore;
    assert.throws(
      () => new S3ObjectStore({ ...s3, bucket: "x-parts", partSize: 1024 }),
      /partSize must be at least 5242880/,
    );
  });
});
