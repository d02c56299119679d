import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RUNTIME_START_GATE_ANNOTATION, type Runtime, startGateOf } from "../api/runtime.js";
import { newRouteToken, ownedStatus, StatusDraft, withLastWritten } from "./runtime-status.js";

const runtime = (status: Runtime["status"]) =>
  ({ metadata: { name: "r", namespace: "n", generation: 3 }, spec: {}, status }) as unknown as Runtime;

describe("a runtime's status as the controller owns it", () => {
  it("route tokens are 43 url-safe characters, never the same", () => {
    const a = newRouteToken();
    assert.match(a, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a, newRouteToken());
  });

  it("a start that failed in a step keeps that step as the failed one", () => {
    const draft = new StatusDraft(runtime({ phase: "Starting" }));
    draft.step("Volumes", { state: "Failed", message: "restore failed" });
    draft.failStep("restore failed");
    assert.deepEqual(
      draft.status.steps?.map((s) => s.state),
      ["Pending", "Failed", "Pending", "Pending", "Pending"],
    );
  });

  it("a start gate is read from its annotation; one that is not JSON still holds the start", () => {
    const gated = (value?: string) =>
      ({
        metadata: value === undefined ? {} : { annotations: { [RUNTIME_START_GATE_ANNOTATION]: value } },
      }) as Runtime;
    assert.equal(startGateOf(gated()), undefined);
    assert.deepEqual(
      startGateOf(gated('{"reason":"Restoring","message":"1 of 2 claims","failedGeneration":4}')),
      {
        reason: "Restoring",
        message: "1 of 2 claims",
        failedGeneration: 4,
      },
    );
    assert.deepEqual(startGateOf(gated("wait")), {
      reason: "StartGated",
      message: `annotation ${RUNTIME_START_GATE_ANNOTATION}: wait`,
    });
  });

  it("never includes lastActivity, the proxy's field", () => {
    assert.deepEqual(ownedStatus({ phase: "Running", lastActivity: "2026-01-01T00:00:00Z" }), {
      phase: "Running",
    });
  });

  it("a new start: a new token, steps back to Pending, the session's endpoint gone", () => {
    const draft = new StatusDraft(
      runtime({
        phase: "Stopped",
        endpoint: { url: "http://127.0.0.1:1" },
        route: { token: "x".repeat(43) },
      }),
    );
    const token = draft.beginStart();
    assert.equal(draft.status.route?.token, token);
    assert.equal(draft.status.endpoint, undefined);
    assert.equal(draft.status.observedGeneration, 3);
    assert.deepEqual(
      draft.status.steps?.map((s) => s.state),
      ["Pending", "Pending", "Pending", "Pending", "Pending"],
    );
    assert.ok(draft.changed());
  });

  it("a cache behind the controller's last write is overlaid with it, keeping lastActivity", () => {
    const cached = runtime({ phase: "Pending", lastActivity: "2026-01-01T00:00:00Z" });
    const behind = withLastWritten(cached, { phase: "Starting", route: { token: "t".repeat(43) } });
    assert.deepEqual(behind?.status, {
      phase: "Starting",
      route: { token: "t".repeat(43) },
      lastActivity: "2026-01-01T00:00:00Z",
    });
    assert.equal(withLastWritten(cached, { phase: "Pending" }), undefined);
  });
});
