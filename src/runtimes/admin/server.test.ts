import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { ClusterClient } from "../../kube/index.js";
import type { Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";
import { checkStartLimits } from "./limits.js";
import { OPENAPI_PATH, RuntimesAdmin } from "./server.js";

/** A client for an API server that is not there: these requests must be answered before any call. */
function unreachableClient(): ClusterClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "none", server: "https://127.0.0.1:1", skipTLSVerify: true }],
    users: [{ name: "u", token: "t" }],
    contexts: [{ name: "c", cluster: "none", user: "u" }],
    currentContext: "c",
  });
  return new ClusterClient("none", kc);
}

describe("runtimes Admin API requests refused before any lookup", () => {
  const admin = new RuntimesAdmin({ client: unreachableClient() });

  it("publishes an OpenAPI document with every route", async () => {
    const res = await admin.inject({ method: "GET", url: OPENAPI_PATH });
    assert.equal(res.statusCode, 200);
    const doc = res.json() as { openapi: string; paths: Record<string, Record<string, unknown>> };
    assert.match(doc.openapi, /^3\./);
    const paths = doc.paths;
    assert.ok(paths["/services/{user}/{service}/{instance}"]?.post);
    assert.ok(paths["/services/{user}/{service}/{instance}"]?.get);
    assert.ok(paths["/services/{user}/{service}/{instance}"]?.delete);
    assert.ok(paths["/services/{user}/{service}/{instance}/stop"]?.delete);
    assert.ok(paths["/services/{user}/{service}/{instance}/progress"]?.get);
    assert.ok(paths["/services/{user}"]?.get);
    assert.ok(paths["/services"]?.get);
  });

  it("answers a bad service or instance name 400 naming the field and the limit", async () => {
    const upper = await admin.inject({ method: "POST", url: "/services/alice/Jupyter/one", payload: {} });
    assert.equal(upper.statusCode, 400);
    assert.equal(upper.headers["content-type"], "application/problem+json; charset=utf-8");
    assert.equal(upper.json().field, "service");
    assert.ok(upper.json().limit);
    const long = await admin.inject({ method: "GET", url: `/services/alice/jupyter/${"a".repeat(64)}` });
    assert.equal(long.statusCode, 400);
    assert.equal(long.json().field, "instance");
    assert.equal(long.json().limit, 63);
  });

  it("answers a body that is no JSON object 400 naming the body", async () => {
    const res = await admin.inject({
      method: "POST",
      url: "/services/alice/jupyter/one",
      headers: { "content-type": "application/json" },
      payload: "[1,2]",
    });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().status, 400);
  });

  it("answers a bad page size 400 naming limit and its bound", async () => {
    const res = await admin.inject({ method: "GET", url: "/services/alice?limit=501" });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().field, "limit");
    assert.equal(res.json().limit, 500);
  });

  it("answers a request without a token 401", async () => {
    const res = await admin.inject({ method: "GET", url: "/services/alice/jupyter/one" });
    assert.equal(res.statusCode, 401);
    assert.match(res.json().detail, /no bearer token/);
  });
});

function runtime(
  user: string,
  instance: string,
  phase?: Runtime["status"] extends infer S ? (S extends { phase?: infer P } ? P : never) : never,
  desiredState: "Running" | "Stopped" = "Running",
): Runtime {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Runtime",
    metadata: { name: `svc-${instance}`, namespace: `t-rt-${user}` },
    spec: { user, tenant: "t", service: "svc", instance, desiredState },
    ...(phase ? { status: { phase } } : {}),
  } as Runtime;
}

describe("start limits", () => {
  const service = {
    metadata: { name: "svc" },
    spec: {
      plugin: { builtin: "generic" },
      limits: { concurrentStartsPerUser: 2, concurrentStarts: 3, instancesPerUser: 3 },
    },
  } as RuntimeService;

  it("allows a start under every limit", () => {
    assert.equal(checkStartLimits(service, "alice", [runtime("alice", "a", "Running")], true), undefined);
  });

  it("refuses a user's third concurrent start, naming concurrentStartsPerUser", () => {
    const r = checkStartLimits(
      service,
      "alice",
      [runtime("alice", "a"), runtime("alice", "b", "Starting")],
      true,
    );
    assert.equal(r?.field, "concurrentStartsPerUser");
    assert.equal(r?.limit, 2);
  });

  it("allows exactly the limit: the last start that fits is accepted, the next refused naming how many", () => {
    const ten = {
      ...service,
      spec: { ...service.spec, limits: { concurrentStartsPerUser: 10, instancesPerUser: 100 } },
    } as RuntimeService;
    const starting = (n: number) =>
      Array.from({ length: n }, (_, i) => runtime("alice", `i${i}`, "Starting"));
    assert.equal(checkStartLimits(ten, "alice", starting(9), true), undefined, "the 10th of 10");
    assert.equal(checkStartLimits(ten, "alice", starting(5), true, { user: 4, all: 4 }), undefined);
    const eleventh = checkStartLimits(ten, "alice", starting(5), true, { user: 5, all: 5 });
    assert.equal(eleventh?.field, "concurrentStartsPerUser");
    assert.match(eleventh!.detail, /has 10 starts/);
  });

  it("refuses past the service's concurrent starts, counting starts not yet in the cache", () => {
    const r = checkStartLimits(service, "carol", [runtime("alice", "a"), runtime("bob", "b")], true, {
      user: 0,
      all: 1,
    });
    assert.equal(r?.field, "concurrentStarts");
  });

  it("refuses a new instance past instancesPerUser, but not a resume", () => {
    const mine = [
      runtime("alice", "a", "Running"),
      runtime("alice", "b", "Stopped", "Stopped"),
      runtime("alice", "c", "Running"),
    ];
    assert.equal(checkStartLimits(service, "alice", mine, true)?.field, "instancesPerUser");
    assert.equal(checkStartLimits(service, "alice", mine, false), undefined);
  });

  it("does not count stopped or failed runtimes as starts", () => {
    const r = checkStartLimits(
      service,
      "alice",
      [runtime("alice", "a", "Failed"), runtime("alice", "b", undefined, "Stopped")],
      true,
    );
    assert.equal(r, undefined);
  });
});

describe("the JupyterHub REST API beside it", () => {
  const admin = new RuntimesAdmin({ client: unreachableClient() });

  it("tells its version without credentials, as JupyterHub does", async () => {
    for (const url of ["/hub/api", "/hub/api/"]) {
      const res = await admin.inject({ method: "GET", url });
      assert.equal(res.statusCode, 200, url);
      assert.match((res.json() as { version: string }).version, /^\d+\.\d+\.\d+$/);
    }
  });

  it("refuses everything else without credentials, in JupyterHub's error shape", async () => {
    for (const [method, url] of [
      ["GET", "/hub/api/users"],
      ["GET", "/hub/api/users/alice"],
      ["POST", "/hub/api/users/alice/servers/lab"],
      ["DELETE", "/hub/api/users/alice/server"],
      ["POST", "/hub/api/users/alice/tokens"],
    ] as const) {
      const res = await admin.inject({ method, url });
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.deepEqual(res.json(), { status: 403, message: "Missing or invalid credentials." });
    }
    const unknown = await admin.inject({ method: "GET", url: "/hub/api/no/such/path" });
    assert.equal(unknown.statusCode, 404);
    assert.equal((unknown.json() as { status: number }).status, 404);
  });

  it("is not in the Admin API's OpenAPI document", async () => {
    const doc = (await admin.inject({ method: "GET", url: OPENAPI_PATH })).json() as { paths: object };
    assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith("/hub")));
  });
});
