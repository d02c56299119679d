import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { jitteredBackoffDelay } from "./backoff.js";
import { ManualClock } from "./clock.js";
import {
  defaultControllerRateLimiter,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
} from "./ratelimit.js";

describe("ItemExponentialRateLimiter", () => {
  test("doubles from the base per key, caps at the max, and is independent per key", () => {
    const limiter = new ItemExponentialRateLimiter({ baseDelayMs: 5, maxDelayMs: 100 });
    assert.deepEqual(
      Array.from({ length: 7 }, () => limiter.when("a")),
      [5, 10, 20, 40, 80, 100, 100],
    );
    assert.equal(limiter.when("b"), 5);
    assert.equal(limiter.numRequeues("a"), 7);
    limiter.forget("a");
    assert.equal(limiter.numRequeues("a"), 0);
    assert.equal(limiter.when("a"), 5);
  });

  test("stays at the cap after very many failures", () => {
    const limiter = new ItemExponentialRateLimiter();
    let last = 0;
    for (let i = 0; i < 2000; i++) last = limiter.when("k");
    assert.equal(last, 1_000_000);
  });
});

describe("TokenBucketRateLimiter", () => {
  test("allows a burst, then spaces requests at 1/qps, and refills over time", async () => {
    const clock = new ManualClock();
    const bucket = new TokenBucketRateLimiter({ qps: 10, burst: 3, clock });
    assert.deepEqual([bucket.when("a"), bucket.when("b"), bucket.when("c")], [0, 0, 0]);
    assert.equal(bucket.when("d"), 100);
    assert.equal(bucket.when("e"), 200, "each reservation queues behind the previous one");
    await clock.advance(1000);
    // 300 ms of debt repaid by 1 s at 10 qps leaves 7 tokens, capped at the burst of 3.
    assert.deepEqual(
      [bucket.when("f"), bucket.when("g"), bucket.when("h"), bucket.when("i")],
      [0, 0, 0, 100],
    );
  });
});

describe("defaultControllerRateLimiter", () => {
  test("uses the larger of per-key backoff and the global bucket", () => {
    const clock = new ManualClock();
    const limiter = defaultControllerRateLimiter({ clock, qps: 10, burst: 2 });
    assert.equal(limiter.when("a"), 5);
    assert.equal(limiter.when("a"), 10);
    // Bucket is now empty: a fresh key waits for the bucket, not its own 5 ms.
    assert.equal(limiter.when("b"), 100);
    limiter.forget("a");
    assert.equal(limiter.numRequeues("a"), 0);
    assert.equal(limiter.numRequeues("b"), 1);
  });

  test("MaxOfRateLimiter records the attempt in every limiter", () => {
    const first = new ItemExponentialRateLimiter({ baseDelayMs: 1 });
    const second = new ItemExponentialRateLimiter({ baseDelayMs: 3 });
    const both = new MaxOfRateLimiter(first, second);
    assert.equal(both.when("k"), 3);
    assert.equal(both.when("k"), 6);
    assert.equal(first.numRequeues("k"), 2);
    assert.equal(second.numRequeues("k"), 2);
  });
});

describe("jitteredBackoffDelay", () => {
  test("doubles from 100 ms to a 30 s cap with ±20% jitter", () => {
    const middle = () => 0.5;
    assert.deepEqual(
      [0, 1, 2, 3, 8, 9, 20].map((attempt) => jitteredBackoffDelay(attempt, {}, middle)),
      [100, 200, 400, 800, 25_600, 30_000, 30_000],
    );
    assert.equal(
      jitteredBackoffDelay(0, {}, () => 0),
      80,
    );
    assert.equal(
      jitteredBackoffDelay(0, {}, () => 1),
      120,
    );
    assert.equal(
      jitteredBackoffDelay(20, {}, () => 1),
      36_000,
    );
  });

  test("honours custom bounds and ignores undefined options", () => {
    assert.equal(jitteredBackoffDelay(3, { initialMs: 10, maxMs: 50, jitter: 0 }), 50);
    assert.equal(
      jitteredBackoffDelay(0, { initialMs: undefined }, () => 0.5),
      100,
    );
  });
});
