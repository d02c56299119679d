import assert from "node:assert/strict";
import { test } from "node:test";
import { UsageHistory } from "./history.js";

test("usage history keeps a point per change, the last of a second, up to its limit", () => {
  const history = new UsageHistory(3);
  history.record("demo", { pods: { used: 1, hard: 20 } }, 1_000);
  history.record("demo", { pods: { used: 1, hard: 20 } }, 2_000);
  assert.deepEqual(history.of("demo").pods, [{ t: 1, used: 1, hard: 20 }], "no change, no point");
  history.record("demo", { pods: { used: 2, hard: 20 } }, 3_000);
  history.record("demo", { pods: { used: 3, hard: 20 } }, 3_500);
  assert.deepEqual(
    history.of("demo").pods?.at(-1),
    { t: 3, used: 3, hard: 20 },
    "the same second's last value",
  );
  assert.equal(history.of("demo").pods?.length, 2);
  history.record("demo", { pods: { used: 4, hard: 20 } }, 4_000);
  history.record("demo", { pods: { used: 4, hard: 30 } }, 5_000);
  assert.deepEqual(
    history.of("demo").pods?.map((p) => p.t),
    [3, 4, 5],
    "the oldest points go beyond the limit",
  );
  assert.deepEqual(history.of("other"), {});
  history.forget("demo");
  assert.deepEqual(history.of("demo"), {});
});
