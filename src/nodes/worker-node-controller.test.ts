import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { WorkerNodePhase, WorkerNodeStatus } from "./api/worker-node.js";
import { joinTimedOut } from "./worker-node-controller.js";

const created = Date.UTC(2026, 0, 5, 8, 0, 0);
const deadline = created + 600_000;
const at = (phase: WorkerNodePhase, offsetMs: number) => ({
  phase,
  time: new Date(created + offsetMs).toISOString(),
});

describe("the join deadline", () => {
  it("fails a node that has not joined by then", () => {
    const joining: WorkerNodeStatus = {
      phase: "Joining",
      phases: [at("Building", 0), at("Available", 30_000), at("Joining", 60_000)],
    };
    assert.equal(joinTimedOut(joining, deadline, deadline - 1), false);
    assert.equal(joinTimedOut(joining, deadline, deadline), true);
    assert.equal(joinTimedOut({}, deadline, deadline + 1), true, "a node with no phase yet");
  });

  it("never fails a node that joined, however long ago its deadline passed", () => {
    const running: WorkerNodeStatus = {
      phase: "Running",
      phases: [at("Building", 0), at("Available", 30_000), at("Joining", 60_000), at("Running", 90_000)],
    };
    // A Running node looked at while its provider is briefly unavailable, days after it joined.
    assert.equal(joinTimedOut(running, deadline, deadline + 3 * 86_400_000), false);
    // Back on its way after it joined once (a node replaced mid-run still went through Running).
    assert.equal(joinTimedOut({ ...running, phase: "Joining" }, deadline, deadline + 1), false);
  });
});
