import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { StopRequest } from "./shutdown.js";

test("the first signal stops, its copies are the same request, a later one hurries", async () => {
  const hurried: string[] = [];
  const stop = new StopRequest({ sameRequestMs: 200, onHurry: (reason) => hurried.push(reason) });
  try {
    assert.equal(stop.isRequested, false);
    // A terminal's Ctrl-C, then npm's copy of it.
    process.emit("SIGINT", "SIGINT");
    process.emit("SIGINT", "SIGINT");
    assert.equal(await stop.requested, "SIGINT");
    assert.equal(stop.isRequested, true);
    assert.equal(stop.hurry.aborted, false, "the copy is not a second Ctrl-C");
    await sleep(250);
    process.emit("SIGTERM", "SIGTERM");
    assert.equal(stop.hurry.aborted, true);
    assert.deepEqual(hurried, ["SIGTERM again"]);
    stop.hurryNow("once is enough");
    assert.deepEqual(hurried, ["SIGTERM again"]);
  } finally {
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.removeAllListeners(signal);
  }
});
