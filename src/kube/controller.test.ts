import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { flushAsync, ManualClock } from "./clock.js";
import {
  Controller,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  terminalError,
} from "./controller.js";
import { Informer } from "./informer.js";
import type { ListResult, ListWatchSource, RawWatchEvent } from "./list-watch.js";
import { ItemExponentialRateLimiter } from "./ratelimit.js";

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await flushAsync();
}

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function cm(name: string, resourceVersion: string): V1ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "ns", resourceVersion } };
}

/** Informer source whose list waits for the test and whose watch events the test pushes. */
class ScriptedSource implements ListWatchSource<V1ConfigMap> {
  readonly cluster = "home";
  readonly description = "scripted";
  readonly listed = deferred<ListResult<V1ConfigMap>>();
  push: (event: RawWatchEvent) => void = () => {};

  list(): Promise<ListResult<V1ConfigMap>> {
    return this.listed.promise;
  }

  watch(_rv: string, _timeout: number, onEvent: (event: RawWatchEvent) => void) {
    this.push = onEvent;
    return { abort: () => {} };
  }
}

function harness(reconcile: (key: string, ctx: ReconcileContext) => Promise<ReconcileResult>, workers = 1) {
  const clock = new ManualClock();
  const calls: string[] = [];
  const controller = new Controller({
    name: "test",
    workers,
    clock,
    rateLimiter: new ItemExponentialRateLimiter({ baseDelayMs: 10 }),
    reconcile: (key, ctx) => {
      calls.push(key);
      return reconcile(key, ctx);
    },
  });
  return { clock, calls, controller };
}

describe("Controller", () => {
  test("reconciles enqueued keys, de-duplicating keys that are already waiting", async () => {
    const { calls, controller } = harness(async () => reconcileDone());
    controller.enqueue("home/ns/a");
    controller.enqueue("home/ns/a");
    controller.enqueue("home/ns/b");
    await controller.start();
    await settle();
    assert.deepEqual(calls, ["home/ns/a", "home/ns/b"]);
    assert.equal(controller.stats().reconcilesTotal, 2);
    await controller.stop();
  });

  test("the context carries the parsed object reference", async () => {
    const seen: ReconcileContext[] = [];
    const { controller } = harness(async (_key, ctx) => {
      seen.push(ctx);
      return reconcileDone();
    });
    controller.enqueue("edge-1//node-1");
    await controller.start();
    await settle();
    assert.deepEqual(seen[0]?.ref, { cluster: "edge-1", name: "node-1" });
    assert.equal(seen[0]?.retries, 0);
    assert.equal(seen[0]?.signal.aborted, false);
    await controller.stop();
  });

  test("a thrown error retries with per-key exponential backoff until success, then forgets", async () => {
    let failuresLeft = 3;
    const retriesSeen: number[] = [];
    const { clock, calls, controller } = harness(async (_key, ctx) => {
      retriesSeen.push(ctx.retries);
      if (failuresLeft-- > 0) throw new Error("transient");
      return reconcileDone();
    });
    controller.enqueue("home/ns/a");
    await controller.start();
    await settle();
    assert.equal(calls.length, 1);
    await clock.advance(9);
    assert.equal(calls.length, 1, "first retry waits 10 ms");
    await clock.advance(1);
    assert.equal(calls.length, 2);
    await clock.advance(19);
    assert.equal(calls.length, 2, "second retry waits 20 ms");
    await clock.advance(1);
    assert.equal(calls.length, 3);
    await clock.advance(40);
    assert.equal(calls.length, 4);
    assert.deepEqual(retriesSeen, [0, 1, 2, 3]);
    assert.equal(controller.stats().reconcileErrorsTotal, 3);
    // Success forgot the backoff: a new failure starts again at the base delay.
    failuresLeft = 1;
    controller.enqueue("home/ns/a");
    await settle();
    await clock.advance(10);
    assert.equal(calls.length, 6);
    assert.equal(retriesSeen.at(-1), 1);
    await controller.stop();
  });

  test("requeueAfter reconciles again after the delay; terminal errors are not retried", async () => {
    const results: Record<string, ReconcileResult> = {
      "home/ns/later": requeueAfter(5000),
      "home/ns/broken": terminalError(new Error("invalid spec")),
    };
    const { clock, calls, controller } = harness(async (key) => results[key] ?? reconcileDone());
    controller.enqueue("home/ns/later");
    controller.enqueue("home/ns/broken");
    await controller.start();
    await settle();
    results["home/ns/later"] = reconcileDone();
    assert.equal(controller.stats().delayedKeys, 1);
    await clock.advance(4999);
    assert.deepEqual(calls, ["home/ns/later", "home/ns/broken"]);
    await clock.advance(1);
    assert.deepEqual(calls, ["home/ns/later", "home/ns/broken", "home/ns/later"]);
    await clock.advance(100_000);
    assert.equal(calls.length, 3, "the terminal key was not retried");
    const stats = controller.stats();
    assert.equal(stats.terminalErrorsTotal, 1);
    assert.equal(stats.requeueAfterTotal, 1);
    assert.equal(stats.reconcileErrorsTotal, 0);
    await controller.stop();
  });

  test("workers run different keys in parallel but never the same key twice at once", async () => {
    const gates = new Map<string, ReturnType<typeof deferred<void>>>();
    let running = 0;
    let maxRunning = 0;
    const active = new Set<string>();
    const { calls, controller } = harness(async (key) => {
      assert.ok(!active.has(key), `${key} reconciled concurrently`);
      active.add(key);
      running++;
      maxRunning = Math.max(maxRunning, running);
      const gate = deferred();
      gates.set(key, gate);
      await gate.promise;
      active.delete(key);
      running--;
      return reconcileDone();
    }, 3);
    await controller.start();
    controller.enqueue("home/ns/a");
    controller.enqueue("home/ns/b");
    await settle();
    controller.enqueue("home/ns/a");
    await settle();
    assert.equal(maxRunning, 2);
    assert.deepEqual(calls, ["home/ns/a", "home/ns/b"]);
    assert.equal(controller.stats().inFlight, 2);
    gates.get("home/ns/a")?.resolve();
    await settle();
    assert.deepEqual(
      calls,
      ["home/ns/a", "home/ns/b", "home/ns/a"],
      "the re-add runs after the first finished",
    );
    gates.get("home/ns/a")?.resolve();
    gates.get("home/ns/b")?.resolve();
    await controller.stop();
  });

  test("watch() turns informer events into keys, and start() waits for the informer to sync", async () => {
    const source = new ScriptedSource();
    const informer = new Informer(source, { clock: new ManualClock() });
    const { calls, controller } = harness(async () => reconcileDone());
    controller.watch(informer);
    controller.watch(informer, (obj, cluster) => [`${cluster}//owner-of-${obj.metadata?.name}`]);
    informer.start();
    let started = false;
    void controller.start().then(() => {
      started = true;
    });
    await settle();
    assert.equal(started, false, "workers must not run on an unsynced cache");
    assert.deepEqual(calls, []);
    source.listed.resolve({ items: [cm("a", "1")], resourceVersion: "1" });
    await settle();
    assert.equal(started, true);
    assert.deepEqual(calls.sort(), ["home//owner-of-a", "home/ns/a"]);
    calls.length = 0;
    source.push({ type: "MODIFIED", object: cm("a", "2") });
    source.push({ type: "DELETED", object: cm("a", "3") });
    await settle();
    assert.deepEqual([...new Set(calls)].sort(), ["home//owner-of-a", "home/ns/a"]);
    await controller.stop();
    const before = calls.length;
    source.push({ type: "ADDED", object: cm("b", "4") });
    await settle();
    assert.equal(calls.length, before, "a stopped controller no longer reacts to events");
    await informer.stop();
  });

  test("an object added while listed objects wait is reconciled before them; a status-only change waits", async () => {
    const source = new ScriptedSource();
    const informer = new Informer(source, { clock: new ManualClock() });
    const gate = deferred();
    const { calls, controller } = harness(async (key) => {
      if (key === "home/ns/listed-0") await gate.promise;
      return reconcileDone();
    });
    controller.watch(informer);
    informer.start();
    source.listed.resolve({
      items: Array.from({ length: 5 }, (_, i) => ({
        ...cm(`listed-${i}`, "1"),
        metadata: { ...cm(`listed-${i}`, "1").metadata, generation: 1 },
      })),
      resourceVersion: "1",
    });
    await controller.start();
    await settle();
    assert.deepEqual(calls, ["home/ns/listed-0"], "the one worker is busy with the first listed key");
    assert.equal(controller.stats().lowPriorityDepth, 4);
    const generation = (name: string, rv: string, g: number, status?: string) => ({
      ...cm(name, rv),
      metadata: { ...cm(name, rv).metadata, generation: g },
      ...(status ? { data: { status } } : {}),
    });
    source.push({ type: "MODIFIED", object: generation("listed-4", "2", 1, "status only") });
    source.push({ type: "ADDED", object: cm("new", "3") });
    source.push({ type: "MODIFIED", object: generation("listed-3", "4", 2) });
    gate.resolve();
    await settle();
    assert.deepEqual(calls, [
      "home/ns/listed-0",
      "home/ns/new",
      "home/ns/listed-3",
      "home/ns/listed-1",
      "home/ns/listed-2",
      "home/ns/listed-4",
    ]);
    await controller.stop();
    await informer.stop();
  });

  test("stop() waits for in-flight reconciles and takes no further keys", async () => {
    const gate = deferred();
    const { calls, controller } = harness(async () => {
      await gate.promise;
      return reconcileDone();
    });
    controller.enqueue("home/ns/a");
    controller.enqueue("home/ns/b");
    await controller.start();
    await settle();
    let stopped = false;
    const stopping = controller.stop().then(() => {
      stopped = true;
    });
    await settle();
    assert.equal(stopped, false, "still waiting for the in-flight reconcile");
    gate.resolve();
    await stopping;
    assert.deepEqual(calls, ["home/ns/a"], "b was never started");
  });

  test("stop({ timeoutMs: 0 }) abandons in-flight reconciles at once and aborts their signal", async () => {
    let signal: AbortSignal | undefined;
    const { controller } = harness(async (_key, ctx) => {
      signal = ctx.signal;
      return new Promise<ReconcileResult>(() => {});
    });
    controller.enqueue("home/ns/stuck");
    await controller.start();
    await settle();
    assert.equal(controller.stats().inFlight, 1);
    await controller.stop({ timeoutMs: 0 });
    assert.equal(signal?.aborted, true);
  });

  test("a graceful stop that runs out of time abandons the reconcile after the timeout", async () => {
    let signal: AbortSignal | undefined;
    const { clock, controller } = harness(async (_key, ctx) => {
      signal = ctx.signal;
      return new Promise<ReconcileResult>(() => {});
    });
    controller.enqueue("home/ns/stuck");
    await controller.start();
    await settle();
    let stopped = false;
    const stopping = controller.stop({ timeoutMs: 1000 }).then(() => {
      stopped = true;
    });
    await clock.advance(999);
    assert.equal(stopped, false);
    await clock.advance(1);
    await stopping;
    assert.equal(signal?.aborted, true);
  });
});
