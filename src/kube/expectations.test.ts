import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cacheHasCaughtUp, Expectations } from "./expectations.js";

function setup() {
  let now = 1_000;
  const cache = new Map<string, string>();
  const writes = new Expectations<string>({
    ttlMs: 60_000,
    // The cache shows the write when it holds that key at the written version.
    seen: (key, version) => cache.get(key) === version,
    now: () => now,
  });
  return { writes, cache, advance: (ms: number) => (now += ms) };
}

describe("Expectations", () => {
  it("counts a write until the cache shows that very version", () => {
    const { writes, cache } = setup();
    writes.expect("a", "7");
    cache.set("a", "6");
    assert.deepEqual(writes.pending(), [["a", "7"]], "an older version of the object is not the write");
    cache.set("a", "7");
    assert.deepEqual(writes.pending(), []);
    assert.equal(writes.size, 0);
  });

  it("ends an entry from an informer's handler", () => {
    const { writes, cache } = setup();
    writes.expect("a", "7");
    cache.set("a", "7");
    assert.equal(writes.size, 1);
    writes.observe("a");
    assert.equal(writes.size, 0);
  });

  it("gives up an entry the caller forgets, or one the cache never shows within the ttl", () => {
    const { writes, advance } = setup();
    writes.expect("failed", "1");
    writes.expect("lost", "1");
    writes.forget("failed");
    assert.equal(writes.has("lost"), true);
    advance(60_001);
    assert.equal(writes.has("lost"), false);
    assert.deepEqual(writes.pending(), []);
  });

  it("keeps one entry per key, the latest", () => {
    const { writes } = setup();
    writes.expect("a", "1");
    writes.expect("b", "1");
    writes.expect("a", "2");
    assert.deepEqual(writes.pending(), [
      ["b", "1"],
      ["a", "2"],
    ]);
    assert.equal(writes.get("a"), "2");
  });

  it("takes a later resourceVersion in the cache as having caught up, never an earlier one", () => {
    const at = (resourceVersion?: string) => ({ metadata: resourceVersion ? { resourceVersion } : {} });
    assert.equal(cacheHasCaughtUp(at("12"), "12"), true);
    assert.equal(cacheHasCaughtUp(at("13"), "12"), true);
    assert.equal(cacheHasCaughtUp(at("9"), "12"), false, "compared as numbers, not strings");
    assert.equal(cacheHasCaughtUp(at("abc"), "abd"), false, "versions that are not numbers must match");
    assert.equal(cacheHasCaughtUp(undefined, "12"), false);
    assert.equal(cacheHasCaughtUp(at("12"), undefined), false);
  });
});
