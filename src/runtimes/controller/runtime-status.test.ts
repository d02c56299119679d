import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Runtime } from "../api/runtime.js";
import { newRouteToken, ownedStatus, StatusDraft, withLastWritten } from "./runtime-status.js";

const runtime = (status: Runtime["status"]) =>
  ({ metadata: { name: "r", namespace: "n", generation: 3 }, spec: {}, status }) as unknown as Runtime;

describe("a runtime's status as the controller owns it", () => {
  it("route tokens are 43 url-safe characters, never the same", () => {
    const a = newRouteToken();
    assert.match(a, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a, newRouteToken());
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
