import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { silentLogger } from "../../kube/index.js";
import type { Runtime } from "../api/runtime.js";
import { ActivityRecorder, type ActivityWriteResult, type ActivityWriter, LiveRoute } from "./activity.js";
import { StaticRouteSource } from "./source.js";

const TOKEN = "t".repeat(43);

function runtime(name: string, token: string, lastActivity?: string): Runtime {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Runtime",
    metadata: { namespace: "ns", name, resourceVersion: "7" },
    spec: { user: "u", tenant: "t", service: "s", instance: name, desiredState: "Running" },
    status: { route: { token }, ...(lastActivity ? { lastActivity } : {}) },
  } as Runtime;
}

/** Records each write; answers as told. */
class RecordingWriter implements ActivityWriter {
  readonly writes: { name: string; time: string; resourceVersion?: string }[] = [];
  answer: ActivityWriteResult = "written";
  async write(rt: Runtime, time: string): Promise<ActivityWriteResult> {
    this.writes.push({ name: rt.metadata!.name!, time, resourceVersion: rt.metadata?.resourceVersion });
    return this.answer;
  }
}

function setUp() {
  const source = new StaticRouteSource();
  const routes = new Map<string, LiveRoute>();
  const writer = new RecordingWriter();
  const recorder = new ActivityRecorder(routes, { source, writer, logger: silentLogger });
  const live = (name: string, token = TOKEN) => {
    const route = new LiveRoute(`ns/${name}`, "ns", name, token);
    routes.set(route.key, route);
    return route;
  };
  return { source, routes, writer, recorder, live };
}

describe("last activity", () => {
  test("a stamp newer than the Runtime's is written once, in seconds, with the version it was compared with", async () => {
    const { source, writer, recorder, live } = setUp();
    source.putRuntime(runtime("a", TOKEN, "2020-01-01T00:00:00Z"));
    const route = live("a");
    route.lastActivity = Date.UTC(2025, 0, 1, 12, 0, 0, 700);
    await recorder.flush();
    await recorder.flush();
    assert.deepEqual(writer.writes, [{ name: "a", time: "2025-01-01T12:00:00Z", resourceVersion: "7" }]);
  });

  test("a Runtime already showing a later time is not written (another replica was there first)", async () => {
    const { source, writer, recorder, live } = setUp();
    source.putRuntime(runtime("a", TOKEN, "2030-01-01T00:00:00Z"));
    live("a").touch();
    await recorder.flush();
    assert.equal(writer.writes.length, 0);
  });

  test("a conflict or a failure is tried again at the next flush", async () => {
    const { source, writer, recorder, live } = setUp();
    source.putRuntime(runtime("a", TOKEN));
    live("a").touch();
    writer.answer = "conflict";
    await recorder.flush();
    writer.answer = "written";
    await recorder.flush();
    await recorder.flush();
    assert.equal(writer.writes.length, 2);
  });

  test("routes whose token is gone take their stamp with them; idle ones are forgotten", async () => {
    const { source, routes, writer, recorder, live } = setUp();
    source.putRuntime(runtime("b", TOKEN));
    live("gone", "g".repeat(43)).touch();
    const idle = live("b");
    await recorder.flush();
    assert.equal(writer.writes.length, 0);
    assert.equal(routes.size, 0);
    void idle;
  });

  test("a route with open connections stays while idle", async () => {
    const { source, routes, recorder, live } = setUp();
    source.putRuntime(runtime("c", TOKEN));
    const route = live("c");
    route.requests.add(() => {});
    await recorder.flush();
    assert.equal(routes.size, 1);
  });
});
