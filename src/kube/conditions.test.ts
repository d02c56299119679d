import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  type Condition,
  findCondition,
  formatKubeTime,
  isFalse,
  isTrue,
  removeCondition,
  setCondition,
} from "./conditions.js";

const T0 = Date.UTC(2025, 0, 1, 12, 0, 0, 250);
const T1 = T0 + 60_000;

describe("conditions", () => {
  test("formatKubeTime drops sub-second precision like metav1.Time", () => {
    assert.equal(formatKubeTime(T0), "2025-01-01T12:00:00Z");
  });

  test("adding a condition stamps the transition time", () => {
    const conditions = setCondition(
      undefined,
      { type: "Ready", status: "False", reason: "Pending", message: "" },
      T0,
    );
    assert.deepEqual(conditions, [
      {
        type: "Ready",
        status: "False",
        reason: "Pending",
        message: "",
        lastTransitionTime: "2025-01-01T12:00:00Z",
      },
    ]);
  });

  test("same status keeps lastTransitionTime while reason, message and generation update", () => {
    const before = setCondition([], { type: "Ready", status: "False", reason: "Pending", message: "a" }, T0);
    const after = setCondition(
      before,
      { type: "Ready", status: "False", reason: "StillPending", message: "b", observedGeneration: 3 },
      T1,
    );
    assert.equal(after[0]?.lastTransitionTime, "2025-01-01T12:00:00Z");
    assert.equal(after[0]?.reason, "StillPending");
    assert.equal(after[0]?.message, "b");
    assert.equal(after[0]?.observedGeneration, 3);
    assert.equal(before[0]?.reason, "Pending", "the input list is not mutated");
  });

  test("a status change moves lastTransitionTime and keeps the other conditions and their order", () => {
    let conditions: Condition[] = [];
    conditions = setCondition(
      conditions,
      { type: "Ready", status: "False", reason: "Pending", message: "" },
      T0,
    );
    conditions = setCondition(conditions, { type: "Synced", status: "True", reason: "Ok", message: "" }, T0);
    conditions = setCondition(conditions, { type: "Ready", status: "True", reason: "Ok", message: "" }, T1);
    assert.deepEqual(
      conditions.map((c) => [c.type, c.status, c.lastTransitionTime]),
      [
        ["Ready", "True", "2025-01-01T12:01:00Z"],
        ["Synced", "True", "2025-01-01T12:00:00Z"],
      ],
    );
  });

  test("lookups", () => {
    const conditions = setCondition([], { type: "Ready", status: "True", reason: "Ok", message: "" }, T0);
    assert.ok(isTrue(conditions, "Ready"));
    assert.ok(!isFalse(conditions, "Ready"));
    assert.ok(!isTrue(conditions, "Missing"));
    assert.ok(!isTrue(undefined, "Ready"));
    assert.equal(findCondition(conditions, "Ready")?.reason, "Ok");
    assert.equal(findCondition(conditions, "Missing"), undefined);
    assert.deepEqual(removeCondition(conditions, "Ready"), []);
  });

  test("rejects values the API server would reject", () => {
    assert.throws(() =>
      setCondition([], { type: "Ready", status: "True", reason: "not ok", message: "" }, T0),
    );
    assert.throws(() =>
      setCondition([], { type: "Ready", status: "true" as "True", reason: "Ok", message: "" }, T0),
    );
    assert.throws(() => setCondition([], { type: "", status: "True", reason: "Ok", message: "" }, T0));
  });
});
