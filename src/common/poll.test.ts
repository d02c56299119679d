import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pollPauses, pollUntil } from "./poll.js";

describe("pollUntil", () => {
  it("returns the first answer, asking again after each miss", async () => {
    let asks = 0;
    const answer = await pollUntil(() => (++asks === 3 ? "ready" : undefined), {
      timeoutMs: 5_000,
      intervalMs: 1,
    });
    assert.equal(answer, "ready");
    assert.equal(asks, 3);
  });

  it("keeps a falsy answer (only undefined is a miss)", async () => {
    assert.equal(await pollUntil(async () => 0, { timeoutMs: 10 }), 0);
    assert.equal(await pollUntil(async () => false, { timeoutMs: 10 }), false);
  });

  it("gives up with undefined after the deadline, having asked once more at it", async () => {
    const times: number[] = [];
    const started = Date.now();
    const answer = await pollUntil(
      () => {
        times.push(Date.now() - started);
        return undefined;
      },
      { timeoutMs: 100, intervalMs: 30 },
    );
    assert.equal(answer, undefined);
    assert.ok(times.length >= 3, `asked ${times.length} times`);
    assert.ok(times.at(-1)! >= 99, `the last ask (${times.at(-1)} ms) falls on the deadline`);
  });

  it("doubles the pause after each miss up to the maximum, or keeps it without one", () => {
    const take = (pauses: Generator<number>, n: number) =>
      Array.from({ length: n }, () => pauses.next().value);
    assert.deepEqual(take(pollPauses({ intervalMs: 20, maxIntervalMs: 60 }), 5), [20, 40, 60, 60, 60]);
    assert.deepEqual(take(pollPauses({ intervalMs: 500 }), 3), [500, 500, 500]);
    assert.deepEqual(take(pollPauses({}), 2), [250, 250]);
  });

  it("stops when its signal is aborted", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(
      pollUntil(() => undefined, { timeoutMs: 60_000, intervalMs: 10_000, signal: controller.signal }),
      { name: "AbortError" },
    );
  });
});
