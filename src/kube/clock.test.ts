import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock, sleep, systemClock } from "./clock.js";

describe("ManualClock", () => {
  test("fires timers in due order, including timers scheduled while advancing", async () => {
    const clock = new ManualClock(0);
    const fired: string[] = [];
    clock.setTimer(30, () => fired.push(`c@${clock.now()}`));
    clock.setTimer(10, () => {
      fired.push(`a@${clock.now()}`);
      clock.setTimer(5, () => fired.push(`b@${clock.now()}`));
    });
    const cancel = clock.setTimer(20, () => fired.push("cancelled"));
    cancel();
    await clock.advance(25);
    assert.deepEqual(fired, ["a@10", "b@15"]);
    assert.equal(clock.now(), 25);
    await clock.advance(5);
    assert.deepEqual(fired, ["a@10", "b@15", "c@30"]);
    assert.equal(clock.pendingTimers(), 0);
  });

  test("sleep resolves after the delay, or early when aborted", async () => {
    const clock = new ManualClock(0);
    let slept = false;
    void sleep(clock, 100).then(() => {
      slept = true;
    });
    await clock.advance(99);
    assert.equal(slept, false);
    await clock.advance(1);
    assert.equal(slept, true);

    const abort = new AbortController();
    const early = sleep(clock, 1_000_000, abort.signal);
    abort.abort();
    await early;
    assert.equal(clock.pendingTimers(), 0, "an aborted sleep cancels its timer");
    await sleep(clock, 5, abort.signal);
  });

  test("the system clock really waits", async () => {
    const start = Date.now();
    await sleep(systemClock, 20);
    assert.ok(Date.now() - start >= 15);
  });
});

test("the system clock clamps delays Node cannot represent instead of firing at once", async () => {
  let fired = false;
  const cancel = systemClock.setTimer(98_138_718_332, () => {
    fired = true;
  });
  await new Promise((r) => setTimeout(r, 50));
  cancel();
  assert.equal(fired, false);
});
