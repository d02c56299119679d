import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { flushAsync, ManualClock } from "./clock.js";
import { ItemExponentialRateLimiter } from "./ratelimit.js";
import { objectKey, parseObjectKey, WorkQueue } from "./workqueue.js";

/** Resolves to the key get() hands out, or "pending" if it is still waiting after the event loop settles. */
async function poll(promise: Promise<string | undefined>): Promise<string | undefined | "pending"> {
  let value: string | undefined | "pending" = "pending";
  void promise.then((v) => {
    value = v;
  });
  await flushAsync();
  return value;
}

describe("object keys", () => {
  test("round-trip namespaced and cluster-scoped objects", () => {
    assert.equal(objectKey("home", "team-a", "web"), "home/team-a/web");
    assert.deepEqual(parseObjectKey("home/team-a/web"), {
      cluster: "home",
      namespace: "team-a",
      name: "web",
    });
    assert.equal(objectKey("edge-1", undefined, "node-1"), "edge-1//node-1");
    assert.deepEqual(parseObjectKey("edge-1//node-1"), { cluster: "edge-1", name: "node-1" });
  });

  test("reject malformed keys and names that would make keys ambiguous", () => {
    for (const bad of ["", "home", "home/ns", "/ns/name", "home/ns/"]) {
      assert.throws(() => parseObjectKey(bad), /malformed/, bad);
    }
    assert.throws(() => objectKey("a/b", "ns", "name"));
    assert.throws(() => objectKey("home", "n/s", "name"));
    assert.throws(() => objectKey("home", "ns", ""));
  });
});

describe("WorkQueue", () => {
  test("hands keys out in FIFO order and de-duplicates keys that are already waiting", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a");
    queue.add("b");
    queue.add("a");
    assert.equal(queue.len(), 2);
    assert.equal(await queue.get(), "a");
    assert.equal(await queue.get(), "b");
    assert.equal(queue.len(), 0);
  });

  test("a key being processed is not handed out again; re-adding it defers it until done()", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a");
    assert.equal(await queue.get(), "a");
    queue.add("a");
    queue.add("a");
    assert.equal(queue.len(), 0, "dirty key must not be queued while processing");
    const second = queue.get();
    assert.equal(await poll(second), "pending");
    queue.done("a");
    assert.equal(await second, "a");
    queue.done("a");
    assert.equal(queue.len(), 0, "re-added twice while processing still means one more run");
  });

  test("done() without a re-add does not re-queue", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a");
    await queue.get();
    queue.done("a");
    assert.equal(queue.len(), 0);
  });

  test("a waiting get() is woken by add()", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    const waiting = queue.get();
    assert.equal(await poll(waiting), "pending");
    queue.add("x");
    assert.equal(await waiting, "x");
  });

  test("two workers never receive the same key at once", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    const first = queue.get();
    const second = queue.get();
    queue.add("k");
    assert.equal(await first, "k");
    queue.add("k");
    assert.equal(await poll(second), "pending", "k is still being processed by the first worker");
    queue.done("k");
    assert.equal(await second, "k", "the re-add during processing is delivered after done()");
  });

  test("addAfter delays the key until the clock passes the delay; an earlier deadline wins", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    queue.addAfter("a", 1000);
    queue.addAfter("a", 5000);
    assert.equal(queue.len(), 0);
    assert.equal(queue.delayedCount(), 1);
    await clock.advance(999);
    assert.equal(queue.len(), 0);
    await clock.advance(1);
    assert.equal(queue.len(), 1);
    assert.equal(queue.delayedCount(), 0);
    queue.addAfter("b", 5000);
    queue.addAfter("b", 100);
    await clock.advance(100);
    assert.equal(queue.len(), 2, "the later addAfter must be replaced by the earlier one");
  });

  test("addRateLimited backs off exponentially per key and forget() resets it", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock, rateLimiter: new ItemExponentialRateLimiter({ baseDelayMs: 10 }) });
    const runs: number[] = [];
    const start = clock.now();
    for (let attempt = 0; attempt < 4; attempt++) {
      queue.addRateLimited("k");
      while (queue.len() === 0) await clock.advance(1);
      runs.push(clock.now() - start);
      const key = await queue.get();
      queue.done(key!);
    }
    // Delays of 10, 20, 40, 80 ms, each measured from the previous run.
    assert.deepEqual(runs, [10, 30, 70, 150]);
    assert.equal(queue.numRequeues("k"), 4);
    queue.forget("k");
    assert.equal(queue.numRequeues("k"), 0);
    queue.addRateLimited("k");
    await clock.advance(10);
    assert.equal(queue.len(), 1, "after forget the delay starts at the base again");
  });

  test("high-priority keys are handed out before low-priority ones that waited longer", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    for (const key of ["list-1", "list-2", "list-3"]) queue.add(key, "low");
    queue.add("new-tenant");
    assert.equal(queue.lenOf("low"), 3);
    assert.equal(queue.lenOf("high"), 1);
    assert.equal(await queue.get(), "new-tenant");
    assert.equal(await queue.get(), "list-1", "low-priority keys keep their order");
  });

  test("a waiting low-priority key added again with high priority moves up, and is still one key", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("a", "low");
    queue.add("b", "low");
    queue.add("b", "high");
    queue.add("b", "low");
    assert.equal(queue.len(), 2);
    assert.deepEqual([await queue.get(), await queue.get()], ["b", "a"]);
  });

  test("a key re-added while processed goes back with the highest priority it was asked for", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    queue.add("busy");
    assert.equal(await queue.get(), "busy");
    for (const key of ["x", "y"]) queue.add(key, "low");
    queue.add("busy", "low");
    queue.add("busy", "high");
    queue.done("busy");
    assert.equal(await queue.get(), "busy");
  });

  test("low-priority keys are not starved: one in ten handed out while both wait", async () => {
    const queue = new WorkQueue({ clock: new ManualClock() });
    for (let i = 0; i < 3; i++) queue.add(`low-${i}`, "low");
    for (let i = 0; i < 30; i++) queue.add(`high-${i}`);
    const order: string[] = [];
    for (let i = 0; i < 33; i++) {
      const key = (await queue.get())!;
      order.push(key);
      queue.done(key);
    }
    assert.deepEqual(
      order.map((k, i) => (k.startsWith("low") ? i : -1)).filter((i) => i >= 0),
      [9, 19, 29],
    );
  });

  test("delayed and rate-limited adds keep the priority they were given", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    queue.addAfter("later-low", 10, "low");
    queue.addAfter("later-high", 20);
    await clock.advance(20);
    assert.equal(queue.lenOf("low"), 1);
    assert.equal(queue.lenOf("high"), 1);
    assert.equal(await queue.get(), "later-high");
  });

  test("shutDown drains remaining keys, then get() resolves undefined, and adds are ignored", async () => {
    const clock = new ManualClock();
    const queue = new WorkQueue({ clock });
    const idle = queue.get();
    queue.add("a");
    assert.equal(await idle, "a");
    queue.add("b");
    queue.addAfter("c", 10);
    const waiterQueue = new WorkQueue({ clock });
    const parked = waiterQueue.get();
    waiterQueue.shutDown();
    assert.equal(await parked, undefined, "parked workers are released");

    queue.shutDown();
    queue.add("d");
    assert.equal(await queue.get(), "b", "keys queued before shutdown are drained");
    assert.equal(await queue.get(), undefined);
    await clock.advance(20);
    assert.equal(queue.len(), 0, "delayed adds are cancelled by shutdown");
    assert.equal(clock.pendingTimers(), 0);
    assert.ok(queue.isShuttingDown());
  });
});
