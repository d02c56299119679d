import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { storeSettingsFromData } from "./settings.js";

const b64 = (text: string) => Buffer.from(text).toString("base64");

describe("backup store settings from a Secret", () => {
  test("reads endpoint, bucket, credentials and region", () => {
    assert.deepEqual(
      storeSettingsFromData(
        {
          endpoint: b64("https://s3.example.com"),
          bucket: b64("bk"),
          accessKeyId: b64("a"),
          secretAccessKey: b64("s"),
          region: b64("eu-1"),
        },
        "x",
      ),
      {
        endpoint: "https://s3.example.com",
        bucket: "bk",
        accessKeyId: "a",
        secretAccessKey: "s",
        region: "eu-1",
      },
    );
  });

  test("names every missing key", () => {
    assert.throws(
      () => storeSettingsFromData({ endpoint: b64("e") }, "Secret t/s"),
      /Secret t\/s lacks bucket, accessKeyId, secretAccessKey/,
    );
  });
});
