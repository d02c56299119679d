import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { SecretCache, type SecretKeyRef } from "./secrets.js";

const ref: SecretKeyRef = { namespace: "ns", name: "hook", key: "hmac-secret" };

describe("webhook secrets", () => {
  test("a burst of deliveries reads the Secret once", async () => {
    let reads = 0;
    const cache = new SecretCache(async () => {
      reads++;
      await sleep(10);
      return Buffer.from("s1");
    });
    const values = await Promise.all(Array.from({ length: 100 }, () => cache.get(ref)));
    assert.equal(reads, 1);
    assert.ok(values.every((v) => v?.toString() === "s1"));
    assert.equal((await cache.get(ref))?.toString(), "s1");
    assert.equal(reads, 1);
  });

  test("a rotated secret is read again after the time to live; another key is another read", async () => {
    let value = "s1";
    let reads = 0;
    const cache = new SecretCache(
      async () => {
        reads++;
        return Buffer.from(value);
      },
      { ttlMs: 30 },
    );
    assert.equal((await cache.get(ref))?.toString(), "s1");
    value = "s2";
    assert.equal((await cache.get(ref))?.toString(), "s1");
    await sleep(60);
    assert.equal((await cache.get(ref))?.toString(), "s2");
    await cache.get({ ...ref, key: "other" });
    assert.equal(reads, 3);
  });

  test("a missing secret is not kept: the next delivery looks again", async () => {
    let present = false;
    let reads = 0;
    const cache = new SecretCache(async () => {
      reads++;
      return present ? Buffer.from("late") : undefined;
    });
    assert.equal(await cache.get(ref), undefined);
    present = true;
    assert.equal((await cache.get(ref))?.toString(), "late");
    assert.equal(reads, 2);
  });

  test("a read that fails fails that delivery, and the next one reads again", async () => {
    let fail = true;
    const cache = new SecretCache(async () => {
      if (fail) throw new Error("API server down");
      return Buffer.from("ok");
    });
    await assert.rejects(cache.get(ref), /API server down/);
    fail = false;
    assert.equal((await cache.get(ref))?.toString(), "ok");
  });
});
