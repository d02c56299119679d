import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { KeyedTokenBuckets } from "./rate-limit.js";

describe("KeyedTokenBuckets", () => {
  test("grants the burst, then refuses with the wait until the next token, per key", () => {
    let now = 0;
    const buckets = new KeyedTokenBuckets({ qps: 2, burst: 3 }, () => now);
    assert.deepEqual([buckets.take("a"), buckets.take("a"), buckets.take("a")], [0, 0, 0]);
    assert.equal(buckets.take("a"), 500);
    assert.equal(buckets.take("b"), 0);
    now = 250;
    // A refusal took nothing: the wait shrinks as time passes.
    assert.equal(buckets.take("a"), 250);
    now = 500;
    assert.equal(buckets.take("a"), 0);
    assert.equal(buckets.take("a"), 500);
  });

  test("forgets buckets that have refilled", () => {
    let now = 0;
    const buckets = new KeyedTokenBuckets({ qps: 10, burst: 10 }, () => now);
    for (let i = 0; i < 100; i++) buckets.take(`k${i}`);
    now = 61_000;
    buckets.take("fresh");
    assert.equal(buckets.size, 1);
  });
});
