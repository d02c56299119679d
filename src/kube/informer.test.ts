import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { flushAsync, ManualClock } from "./clock.js";
import { diffSnapshot, Informer } from "./informer.js";
import {
  type ListResult,
  type ListWatchSource,
  type RawWatchEvent,
  WatchAbortedError,
} from "./list-watch.js";

function cm(name: string, resourceVersion: string, data: Record<string, string> = {}): V1ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace: "ns", resourceVersion }, data };
}

interface FakeWatch {
  resourceVersion: string;
  timeoutSeconds: number;
  send(type: string, object: unknown): void;
  close(error?: unknown): void;
  aborted: boolean;
  closed: boolean;
}

/** Scripted list/watch: lists answer from `listResults` (or throw), watches are driven by the test. */
class FakeSource implements ListWatchSource<V1ConfigMap> {
  readonly cluster = "home";
  readonly description = "v1/ConfigMap (fake)";
  listResults: Array<ListResult<V1ConfigMap> | Error> = [];
  listCalls = 0;
  watches: FakeWatch[] = [];

  async list(): Promise<ListResult<V1ConfigMap>> {
    this.listCalls++;
    const next = this.listResults.shift();
    if (!next) throw new Error("unexpected list");
    if (next instanceof Error) throw next;
    return next;
  }

  watch(
    resourceVersion: string,
    timeoutSeconds: number,
    onEvent: (event: RawWatchEvent) => void,
    onClose: (error?: unknown) => void,
  ) {
    const watch: FakeWatch = {
      resourceVersion,
      timeoutSeconds,
      aborted: false,
      closed: false,
      send: (type, object) => {
        if (!watch.closed) onEvent({ type, object });
      },
      close: (error) => {
        if (watch.closed) return;
        watch.closed = true;
        onClose(error);
      },
    };
    this.watches.push(watch);
    return {
      abort: () => {
        watch.aborted = true;
        watch.close(new WatchAbortedError());
      },
    };
  }

  get current(): FakeWatch {
    const watch = this.watches.at(-1);
    assert.ok(watch, "no watch was opened");
    return watch;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await flushAsync();
}

function recordEvents(informer: Informer<V1ConfigMap>): string[] {
  const events: string[] = [];
  informer.addHandler({
    onAdd: (obj) => events.push(`add ${obj.metadata?.name}@${obj.metadata?.resourceVersion}`),
    onUpdate: (oldObj, newObj) =>
      events.push(
        `update ${newObj.metadata?.name}@${oldObj.metadata?.resourceVersion}->${newObj.metadata?.resourceVersion}`,
      ),
    onDelete: (obj) => events.push(`delete ${obj.metadata?.name}`),
  });
  return events;
}

/** An informer with deterministic jitter (random = 0.5 gives the exact nominal delays). */
function setup() {
  const clock = new ManualClock();
  const source = new FakeSource();
  const informer = new Informer(source, { clock, random: () => 0.5, watchTimeoutSeconds: 300 });
  const events = recordEvents(informer);
  return { clock, source, informer, events };
}

function names(informer: Informer<V1ConfigMap>): string[] {
  return informer
    .list()
    .map((obj) => `${obj.metadata?.name}@${obj.metadata?.resourceVersion}`)
    .sort();
}

describe("diffSnapshot", () => {
  test("reports added, changed and vanished objects, and nothing for unchanged ones", () => {
    const previous = new Map([
      ["ns/a", cm("a", "1")],
      ["ns/b", cm("b", "2")],
      ["ns/c", cm("c", "3")],
    ]);
    const diff = diffSnapshot(previous, [cm("a", "1"), cm("b", "5"), cm("d", "6")]);
    assert.deepEqual(
      diff.added.map((o) => o.metadata?.name),
      ["d"],
    );
    assert.deepEqual(
      diff.updated.map(({ oldObj, newObj }) => [
        oldObj.metadata?.resourceVersion,
        newObj.metadata?.resourceVersion,
      ]),
      [["2", "5"]],
    );
    assert.deepEqual(
      diff.deleted.map((o) => o.metadata?.name),
      ["c"],
    );
  });
});

describe("Informer", () => {
  test("stopped right after its first list, it opens no watch and stops at once", async () => {
    const { source, informer } = setup();
    source.listResults.push({ items: [cm("a", "1")], resourceVersion: "10" });
    informer.start();
    await informer.waitForSync();
    // The informer's loop has not reached its watch yet: a watch opened after the stop would
    // keep stop() waiting until the watch's own end.
    const stopping = informer.stop();
    await settle();
    assert.ok(
      source.watches.every((w) => w.aborted),
      "no watch is left open after stop()",
    );
    await stopping;
  });

  test("lists, syncs, then watches from the list's resourceVersion with a randomized timeout", async () => {
    const { source, informer, events } = setup();
    source.listResults.push({ items: [cm("a", "1"), cm("b", "2")], resourceVersion: "10" });
    assert.equal(informer.hasSynced(), false);
    informer.start();
    await informer.waitForSync();
    assert.equal(informer.hasSynced(), true);
    assert.deepEqual(names(informer), ["a@1", "b@2"]);
    assert.deepEqual(events, ["add a@1", "add b@2"]);
    await settle();
    assert.equal(source.current.resourceVersion, "10");
    assert.equal(source.current.timeoutSeconds, 450, "between 1x and 2x the configured watch timeout");
    assert.equal(informer.get("ns", "a")?.metadata?.resourceVersion, "1");
    assert.equal(informer.get("other", "a"), undefined);
    await informer.stop();
  });

  test("applies watch events to the cache and tells handlers, with old and new object on update", async () => {
    const { source, informer, events } = setup();
    source.listResults.push({ items: [cm("a", "1")], resourceVersion: "10" });
    informer.start();
    await settle();
    source.current.send("ADDED", cm("b", "11"));
    source.current.send("MODIFIED", cm("a", "12", { k: "v" }));
    source.current.send("DELETED", cm("b", "13"));
    source.current.send("BOOKMARK", { kind: "ConfigMap", metadata: { resourceVersion: "14" } });
    assert.deepEqual(events, ["add a@1", "add b@11", "update a@1->12", "delete b"]);
    assert.deepEqual(names(informer), ["a@12"]);
    assert.equal(informer.lastResourceVersion(), "14");
    assert.equal(informer.stats().events, 4);
    await informer.stop();
  });

  test("a 410 ERROR event relists at once and reports what changed meanwhile, including deletions", async () => {
    const { source, informer, events } = setup();
    source.listResults.push({ items: [cm("a", "1"), cm("b", "2"), cm("c", "3")], resourceVersion: "10" });
    informer.start();
    await settle();
    events.length = 0;
    source.listResults.push({ items: [cm("a", "1"), cm("b", "20"), cm("d", "21")], resourceVersion: "30" });
    source.current.send("ERROR", {
      kind: "Status",
      code: 410,
      reason: "Expired",
      message: "too old resource version",
    });
    await settle();
    assert.equal(source.listCalls, 2, "relisted without waiting for a backoff");
    assert.deepEqual(events, ["delete c", "add d@21", "update b@2->20"]);
    assert.deepEqual(names(informer), ["a@1", "b@20", "d@21"]);
    assert.equal(source.current.resourceVersion, "30", "watch resumes from the new list");
    assert.equal(informer.stats().expired, 1);
    await informer.stop();
  });

  test("a 410 on the watch request itself also relists", async () => {
    const { source, informer } = setup();
    source.listResults.push({ items: [], resourceVersion: "10" });
    source.listResults.push({ items: [cm("x", "40")], resourceVersion: "40" });
    informer.start();
    await settle();
    source.current.close(Object.assign(new Error("Gone"), { statusCode: 410 }));
    await settle();
    assert.equal(source.listCalls, 2);
    assert.deepEqual(names(informer), ["x@40"]);
    await informer.stop();
  });

  test("other watch failures reconnect from the last resourceVersion with exponential backoff, forever", async () => {
    const { clock, source, informer } = setup();
    source.listResults.push({ items: [cm("a", "1")], resourceVersion: "10" });
    informer.start();
    await settle();
    source.current.send("MODIFIED", cm("a", "15"));
    const delays: number[] = [];
    for (let failure = 0; failure < 12; failure++) {
      const watchesBefore = source.watches.length;
      source.current.close(new Error("connection reset"));
      await settle();
      let waited = 0;
      while (source.watches.length === watchesBefore) {
        await clock.advance(50);
        waited += 50;
        assert.ok(waited <= 40_000, "reconnect never happened");
      }
      delays.push(waited);
      assert.equal(source.current.resourceVersion, "15", "resumes from the last seen resourceVersion");
    }
    // 100 ms doubling, capped at 30 s (measured in 50 ms steps).
    assert.deepEqual(delays, [100, 200, 400, 800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000, 30_000]);
    assert.equal(source.listCalls, 1, "no relist for ordinary failures");
    assert.equal(informer.stats().failures, 12);
    await informer.stop();
  });

  test("backoff is jittered and resets after a healthy watch", async () => {
    const clock = new ManualClock();
    const source = new FakeSource();
    const informer = new Informer(source, { clock, random: () => 1 });
    source.listResults.push({ items: [], resourceVersion: "1" });
    informer.start();
    await settle();
    source.current.close(new Error("reset"));
    await settle();
    await clock.advance(119);
    assert.equal(source.watches.length, 1, "+20% jitter: not before 120 ms");
    await clock.advance(1);
    assert.equal(source.watches.length, 2);
    source.current.close(new Error("reset"));
    await settle();
    await clock.advance(240);
    assert.equal(source.watches.length, 3, "second failure waits 2 × 120 ms");
    source.current.send("ADDED", cm("a", "2"));
    source.current.close(new Error("reset"));
    await settle();
    await clock.advance(120);
    assert.equal(source.watches.length, 4, "a watch that delivered events resets the backoff");
    await informer.stop();
  });

  test("a clean close of a long-lived watch reconnects at once; an immediate clean close backs off", async () => {
    const { clock, source, informer } = setup();
    source.listResults.push({ items: [], resourceVersion: "1" });
    informer.start();
    await settle();
    await clock.advance(5_000);
    source.current.close();
    await settle();
    assert.equal(source.watches.length, 2, "server-side timeout: re-watch without delay");
    source.current.close();
    await settle();
    assert.equal(source.watches.length, 2, "closed right away with nothing received: treated as a failure");
    await clock.advance(100);
    assert.equal(source.watches.length, 3);
    await informer.stop();
  });

  test("a failing initial list is retried with backoff and waitForSync resolves once it succeeds", async () => {
    const { clock, source, informer } = setup();
    source.listResults.push(new Error("connection refused"), new Error("connection refused"));
    source.listResults.push({ items: [cm("a", "1")], resourceVersion: "5" });
    informer.start();
    let synced = false;
    void informer.waitForSync().then(() => {
      synced = true;
    });
    await settle();
    assert.equal(source.listCalls, 1);
    await clock.advance(100);
    assert.equal(source.listCalls, 2);
    assert.equal(synced, false);
    await clock.advance(200);
    assert.equal(source.listCalls, 3);
    assert.equal(synced, true);
    await informer.stop();
  });

  test("waitForSync can time out", async () => {
    const { clock, source, informer } = setup();
    source.listResults.push(new Error("down"));
    informer.start();
    const rejected = assert.rejects(informer.waitForSync({ timeoutMs: 1000 }), /did not sync within 1000 ms/);
    await clock.advance(1000);
    await rejected;
    await informer.stop();
  });

  test("disconnectForTest drops the connection and the informer reconnects", async () => {
    const { clock, source, informer } = setup();
    source.listResults.push({ items: [], resourceVersion: "7" });
    assert.equal(informer.disconnectForTest(), false);
    informer.start();
    await settle();
    source.current.send("ADDED", cm("a", "8"));
    assert.equal(informer.disconnectForTest(), true);
    assert.equal(source.current.aborted, true);
    await settle();
    await clock.advance(100);
    assert.equal(source.watches.length, 2);
    assert.equal(source.current.resourceVersion, "8");
    source.current.send("ADDED", cm("b", "9"));
    assert.deepEqual(names(informer), ["a@8", "b@9"]);
    await informer.stop();
  });

  test("a watch that outlives its timeout is treated as a dead connection", async () => {
    const { clock, source, informer } = setup();
    source.listResults.push({ items: [], resourceVersion: "7" });
    informer.start();
    await settle();
    const timeoutMs = source.current.timeoutSeconds * 1000;
    await clock.advance(timeoutMs + 29_000);
    assert.equal(source.watches.length, 1);
    await clock.advance(1_000);
    assert.equal(source.watches[0]?.aborted, true);
    await clock.advance(100);
    assert.equal(source.watches.length, 2, "reconnects after the first backoff step");
    await informer.stop();
  });

  test("late handlers get the current objects replayed; a throwing handler does not disturb others", async () => {
    const { source, informer } = setup();
    source.listResults.push({ items: [cm("a", "1")], resourceVersion: "10" });
    informer.addHandler({
      onAdd: () => {
        throw new Error("handler bug");
      },
    });
    informer.start();
    await settle();
    const late = recordEvents(informer);
    assert.deepEqual(late, ["add a@1"]);
    source.current.send("ADDED", cm("b", "11"));
    assert.deepEqual(late, ["add a@1", "add b@11"]);
    await informer.stop();
  });

  test("stop ends the loop, aborts the watch, rejects sync waiters and leaves no timers", async () => {
    const { clock, source, informer } = setup();
    source.listResults.push(new Error("down"));
    informer.start();
    const rejected = assert.rejects(informer.waitForSync(), /stopped/);
    await settle();
    await informer.stop();
    await rejected;
    assert.equal(clock.pendingTimers(), 0);
    assert.throws(() => informer.start(), /cannot be restarted/);

    const second = setup();
    second.source.listResults.push({ items: [], resourceVersion: "1" });
    second.informer.start();
    await settle();
    await second.informer.stop();
    assert.equal(second.source.current.aborted, true);
    await second.clock.advance(60_000);
    assert.equal(second.source.watches.length, 1);
    assert.equal(second.clock.pendingTimers(), 0);
  });
});

describe("informer indexes", () => {
  const byOwner = (obj: V1ConfigMap) => (obj.data?.owners ?? "").split(",").filter(Boolean);
  const namesOf = (objects: V1ConfigMap[]) => objects.map((o) => o.metadata?.name).sort();

  test("follow lists, adds, updates and deletes, and cost the answer's size", async () => {
    const { source, informer } = setup();
    informer.addIndex("owner", byOwner);
    source.listResults.push({
      items: [cm("a", "1", { owners: "alice" }), cm("b", "2", { owners: "alice,bob" })],
      resourceVersion: "2",
    });
    informer.start();
    await settle();
    assert.deepEqual(namesOf(informer.byIndex("owner", "alice")), ["a", "b"]);
    assert.deepEqual(namesOf(informer.byIndex("owner", "bob")), ["b"]);

    source.current.send("MODIFIED", cm("b", "3", { owners: "carol" }));
    source.current.send("ADDED", cm("c", "4", { owners: "bob" }));
    source.current.send("DELETED", cm("a", "5", { owners: "" }));
    await settle();
    // The delete is indexed by the cached object, not by the (possibly changed) final state.
    assert.deepEqual(namesOf(informer.byIndex("owner", "alice")), []);
    assert.deepEqual(namesOf(informer.byIndex("owner", "bob")), ["c"]);
    assert.deepEqual(namesOf(informer.byIndex("owner", "carol")), ["b"]);
    assert.deepEqual(informer.byIndex("owner", "nobody"), []);
    assert.throws(() => informer.byIndex("missing", "x"), /no index "missing"/);
    await informer.stop();
  });

  test("a relist rebuilds the index from the new snapshot", async () => {
    const { source, informer, clock } = setup();
    informer.addIndex("owner", byOwner);
    source.listResults.push({ items: [cm("a", "1", { owners: "alice" })], resourceVersion: "1" });
    informer.start();
    await settle();
    source.listResults.push({ items: [cm("z", "9", { owners: "alice" })], resourceVersion: "9" });
    source.current.close(Object.assign(new Error("gone"), { statusCode: 410 }));
    await settle();
    clock.advance(60_000);
    await settle();
    assert.deepEqual(namesOf(informer.byIndex("owner", "alice")), ["z"]);
    await informer.stop();
  });

  test("an index added after the cache filled covers what is cached", async () => {
    const { source, informer } = setup();
    source.listResults.push({ items: [cm("a", "1", { owners: "alice" })], resourceVersion: "1" });
    informer.start();
    await settle();
    informer.addIndex("owner", byOwner);
    assert.deepEqual(namesOf(informer.byIndex("owner", "alice")), ["a"]);
    assert.throws(() => informer.addIndex("owner", byOwner), /exists already/);
    await informer.stop();
  });

  test("objects of one namespace come from an index made on first use and kept up to date", async () => {
    const { source, informer } = setup();
    const inNs = (name: string, rv: string, namespace: string): V1ConfigMap => ({
      ...cm(name, rv),
      metadata: { name, namespace, resourceVersion: rv },
    });
    source.listResults.push({ items: [inNs("a", "1", "one"), inNs("b", "2", "two")], resourceVersion: "2" });
    informer.start();
    await settle();
    assert.deepEqual(namesOf(informer.inNamespace("one")), ["a"]);
    source.current.send("ADDED", inNs("c", "3", "one"));
    source.current.send("DELETED", inNs("a", "4", "one"));
    await settle();
    assert.deepEqual(namesOf(informer.inNamespace("one")), ["c"]);
    assert.deepEqual(namesOf(informer.inNamespace("two")), ["b"]);
    assert.deepEqual(informer.inNamespace("none"), []);
    await informer.stop();
  });
});
