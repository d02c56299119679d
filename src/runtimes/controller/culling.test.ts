import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";
import { cullDecision, cullingLimits, lastUsed } from "./culling.js";

const service = (spec: Partial<RuntimeService["spec"]>) =>
  ({ spec: { plugin: { builtin: "generic" }, ...spec } }) as RuntimeService;
const runtime = (spec: Partial<Runtime["spec"]> = {}, status: Runtime["status"] = {}) =>
  ({ spec: { user: "alice", tenant: "acme", service: "echo", instance: "one", ...spec }, status }) as Runtime;
const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 9, 0, seconds)).toISOString();
const ms = (seconds: number) => Date.parse(at(seconds));

describe("culling limits", () => {
  it("lets a runtime ask for less than its service, never more", () => {
    const bound = service({ idleTimeoutSeconds: 600, maxAgeSeconds: 3600 });
    assert.deepEqual(cullingLimits(bound, runtime({ idleTimeoutSeconds: 120 })), {
      idleTimeoutSeconds: 120,
      maxAgeSeconds: 3600,
    });
    assert.deepEqual(cullingLimits(bound, runtime({ idleTimeoutSeconds: 9000, maxAgeSeconds: 60 })), {
      idleTimeoutSeconds: 600,
      maxAgeSeconds: 60,
    });
    // A service without a bound: the runtime's own, or none.
    assert.deepEqual(cullingLimits(service({}), runtime({ idleTimeoutSeconds: 30 })), {
      idleTimeoutSeconds: 30,
    });
    assert.deepEqual(cullingLimits(service({}), runtime()), {});
  });

  it("leaves idle culling to what else culls the runtime (a BackupPolicy), not its maximum age", () => {
    const limits = cullingLimits(
      service({ idleTimeoutSeconds: 600, maxAgeSeconds: 3600 }),
      runtime(),
      () => "BackupPolicy echo",
    );
    assert.deepEqual(limits, { maxAgeSeconds: 3600 });
  });
});

describe("a cull decision", () => {
  it("counts activity from this session only: a resume starts the clock again", () => {
    assert.equal(lastUsed(runtime({}, { startedAt: at(100), lastActivity: at(40) })), ms(100));
    assert.equal(lastUsed(runtime({}, { startedAt: at(100), lastActivity: at(140) })), ms(140));
  });

  it("culls once idle past the timeout and the activity lag, naming the idle time", () => {
    const r = runtime({}, { startedAt: at(0), lastActivity: at(10) });
    const limits = { idleTimeoutSeconds: 30 };
    assert.deepEqual(cullDecision(r, limits, ms(44), 5_000), { cull: false, recheckMs: 1_000 });
    const decision = cullDecision(r, limits, ms(50), 5_000);
    assert.equal(decision.cull, true);
    assert.ok(decision.cull && decision.reason === "Idle" && decision.idleSeconds === 40);
    assert.match(decision.cull ? decision.message : "", /idle for 40 s .* its idle timeout is 30 s/);
  });

  it("says when to look again", () => {
    const r = runtime({}, { startedAt: at(0), lastActivity: at(10) });
    assert.deepEqual(cullDecision(r, { idleTimeoutSeconds: 30 }, ms(20)), { cull: false, recheckMs: 20_000 });
    assert.deepEqual(cullDecision(r, { idleTimeoutSeconds: 30, maxAgeSeconds: 25 }, ms(20)), {
      cull: false,
      recheckMs: 5_000,
    });
    assert.deepEqual(cullDecision(r, {}, ms(20)), { cull: false });
  });

  it("culls an active runtime at its maximum age", () => {
    const r = runtime({}, { startedAt: at(0), lastActivity: at(59) });
    const decision = cullDecision(r, { idleTimeoutSeconds: 600, maxAgeSeconds: 60 }, ms(60));
    assert.ok(decision.cull && decision.reason === "MaxAge", JSON.stringify(decision));
    assert.match(decision.cull ? decision.message : "", /running for 60 s, its maximum age is 60 s/);
  });

  it("never culls a runtime that has not become Running", () => {
    assert.deepEqual(cullDecision(runtime(), { idleTimeoutSeconds: 10, maxAgeSeconds: 10 }, ms(600)), {
      cull: false,
    });
  });
});
