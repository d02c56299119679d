import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { RuntimeStatusBody } from "../admin/schemas.js";
import type { Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";
import {
  DEFAULT_PROFILE_ANNOTATION,
  defaultProfile,
  pendingOf,
  resolveServer,
  serverModel,
  serverName,
  userModel,
} from "./models.js";

function runtime(service: string, instance: string, extra: Partial<Runtime> = {}): Runtime {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Runtime",
    metadata: { namespace: "ns", name: `${service}-${instance}` },
    spec: { user: "alice", tenant: "t", service, instance },
    ...extra,
  } as Runtime;
}

const service = (name: string, annotations?: Record<string, string>) =>
  ({ metadata: { name, ...(annotations ? { annotations } : {}) }, spec: {} }) as unknown as RuntimeService;

describe("JupyterHub's models of runtimes", () => {
  it("name a server by its instance, the default server by '', and by service when two share it", () => {
    const lab = runtime("jupyter", "lab");
    const main = runtime("jupyter", "default");
    assert.equal(serverName(lab, [lab, main]), "lab");
    assert.equal(serverName(main, [lab, main]), "");
    const echoLab = runtime("echo", "lab");
    assert.equal(serverName(lab, [lab, echoLab]), "jupyter.lab");
    assert.deepEqual(resolveServer([lab, echoLab], "echo.lab"), { kind: "found", runtime: echoLab });
    assert.deepEqual(resolveServer([lab, echoLab], "lab"), {
      kind: "ambiguous",
      services: ["echo", "jupyter"],
    });
    assert.deepEqual(resolveServer([lab], ""), { kind: "none", instance: "default" });
    assert.deepEqual(resolveServer([lab], "web"), { kind: "none", instance: "web" });
  });

  it("tell pending spawn and stop from the runtime's wanted and current state", () => {
    const at = (desiredState: "Running" | "Stopped", phase: string) =>
      pendingOf(
        runtime("s", "i", {
          spec: { user: "a", tenant: "t", service: "s", instance: "i", desiredState },
          status: { phase },
        } as Partial<Runtime>),
      );
    assert.equal(at("Running", "Starting"), "spawn");
    assert.equal(at("Running", "Running"), null);
    assert.equal(at("Running", "Failed"), null);
    assert.equal(at("Stopped", "Running"), "stop");
    assert.equal(at("Stopped", "Stopped"), null);
    assert.equal(at("Running", "Deleting"), "stop");
  });

  it("pick the annotated profile, else the only one, else none", () => {
    assert.equal(defaultProfile([service("a"), service("b")]), undefined);
    assert.equal(defaultProfile([service("a")])?.metadata?.name, "a");
    const marked = service("b", { [DEFAULT_PROFILE_ANNOTATION]: "true" });
    assert.equal(defaultProfile([service("a"), marked])?.metadata?.name, "b");
  });

  it("show a ready server with its URL path, options and activity, and a user without stopped servers", () => {
    const running = runtime("jupyter", "lab", {
      spec: {
        user: "alice",
        tenant: "t",
        service: "jupyter",
        instance: "lab",
        desiredState: "Running",
        config: { cpu: "1" },
      },
      status: { phase: "Running" },
    } as Partial<Runtime>);
    const status = {
      ready: true,
      url: "http://proxy:8000/r/abc/",
      startedAt: "2026-01-01T00:00:00Z",
      lastActivity: "2026-01-01T01:00:00Z",
      namespace: "ns",
      name: "jupyter-lab",
      service: "jupyter",
      instance: "lab",
      phase: "Running",
    } as RuntimeStatusBody;
    const model = serverModel(running, status, "lab", "http://proxy:8000", false);
    assert.equal(model.url, "/r/abc/");
    assert.equal(model.ready, true);
    assert.equal(model.pending, null);
    assert.equal(model.progress_url, "/hub/api/users/alice/servers/lab/progress");
    assert.deepEqual(model.user_options, { profile: "jupyter", cpu: "1" });
    assert.equal(model.last_activity, "2026-01-01T01:00:00Z");
    assert.equal(model.state, undefined);
    const stopped = { ...model, name: "old", ready: false, stopped: true };
    const user = userModel("alice", [model, stopped], null, {
      admin: false,
      groups: [],
      includeStopped: false,
      withServers: true,
    });
    assert.deepEqual(Object.keys(user.servers!), ["lab"]);
    assert.equal(user.server, null);
    assert.equal(user.last_activity, "2026-01-01T01:00:00Z");
  });
});
