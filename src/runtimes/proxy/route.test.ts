import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Runtime } from "../api/runtime.js";
import { parseEndpoint, parseRoutePath, routeView, targetPath } from "./route.js";

const TOKEN = "A".repeat(20) + "b_-9".repeat(4) + "z".repeat(7);

function runtime(
  status: Record<string, unknown> | undefined,
  spec: Partial<Runtime["spec"]> = {},
  deleting = false,
): Runtime {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Runtime",
    metadata: {
      namespace: "ns",
      name: "rt",
      ...(deleting ? { deletionTimestamp: "2025-01-01T00:00:00Z" } : {}),
    },
    spec: { user: "alice", tenant: "acme", service: "nb", instance: "one", desiredState: "Running", ...spec },
    ...(status ? { status } : {}),
  } as unknown as Runtime;
}

const ready = (extra: Record<string, unknown> = {}) => ({
  phase: "Running",
  route: { token: TOKEN },
  endpoint: { url: "http://127.81.0.5:8888" },
  conditions: [{ type: "Ready", status: "True" }],
  ...extra,
});

describe("route paths", () => {
  test("the token is the segment after /r/; the rest keeps its path and query", () => {
    assert.deepEqual(parseRoutePath(`/r/${TOKEN}/lab/tree?x=1`), { token: TOKEN, rest: "/lab/tree?x=1" });
    assert.deepEqual(parseRoutePath(`/r/${TOKEN}`), { token: TOKEN, rest: "" });
    assert.deepEqual(parseRoutePath(`/r/${TOKEN}?x=1`), { token: TOKEN, rest: "?x=1" });
  });

  test("anything but a well-formed token is no route", () => {
    for (const url of [
      "/services/x",
      "/r/",
      "/r//x",
      "/r/short/x",
      `/r/${TOKEN}%2F/x`,
      `/r/${"a".repeat(129)}`,
      "/R/x",
    ]) {
      assert.equal(parseRoutePath(url), undefined, url);
    }
  });

  test("the backend path is the endpoint's path, then the rest", () => {
    const root = parseEndpoint("http://10.0.0.1:8888") as Exclude<ReturnType<typeof parseEndpoint>, string>;
    assert.equal(targetPath(root, "/lab?x=1"), "/lab?x=1");
    assert.equal(targetPath(root, ""), "/");
    assert.equal(targetPath(root, "?x=1"), "/?x=1");
    const based = parseEndpoint(`http://10.0.0.1:8888/r/${TOKEN}/`) as typeof root;
    assert.equal(based.basePath, `/r/${TOKEN}`);
    assert.equal(targetPath(based, "/lab"), `/r/${TOKEN}/lab`);
    assert.equal(targetPath(based, ""), `/r/${TOKEN}`);
    assert.equal(root.origin, "http://10.0.0.1:8888");
    assert.equal((parseEndpoint("http://10.0.0.1") as typeof root).port, 80);
  });

  test("endpoints the proxy cannot use say why", () => {
    assert.match(parseEndpoint("https://10.0.0.1:443") as string, /only http/);
    assert.match(parseEndpoint("not a url") as string, /not a URL/);
    assert.match(parseEndpoint("http://u:p@10.0.0.1/") as string, /only scheme, host, port and path/);
  });
});

describe("route views", () => {
  test("a running runtime whose Ready condition is True is ready, with its target", () => {
    const view = routeView(runtime(ready()))!;
    assert.equal(view.status, "ready");
    assert.equal(view.key, "ns/rt");
    assert.equal(view.target?.origin, "http://127.81.0.5:8888");
  });

  test("not ready: starting, failed, stopped (even while its pod still answers), being deleted", () => {
    assert.equal(routeView(runtime({ phase: "Starting", route: { token: TOKEN } }))!.status, "starting");
    assert.equal(
      routeView(runtime(ready({ conditions: [{ type: "Ready", status: "False" }] })))!.status,
      "starting",
    );
    assert.equal(routeView(runtime(ready({ endpoint: undefined })))!.status, "starting");
    assert.equal(routeView(runtime({ phase: "Failed", route: { token: TOKEN } }))!.status, "failed");
    assert.equal(routeView(runtime(ready(), { desiredState: "Stopped" }))!.status, "stopped");
    const deleting = routeView(runtime(ready(), {}, true))!;
    assert.equal(deleting.status, "deleting");
    assert.equal(deleting.phase, "Deleting");
  });

  test("no token, no route; a ready runtime with an unusable endpoint says why", () => {
    assert.equal(routeView(runtime(undefined)), undefined);
    assert.equal(routeView(runtime({ phase: "Pending" })), undefined);
    const bad = routeView(runtime(ready({ endpoint: { url: "ftp://x" } })))!;
    assert.equal(bad.target, undefined);
    assert.match(bad.targetError!, /only http/);
  });

  test("a view is computed once per object", () => {
    const obj = runtime(ready());
    assert.equal(routeView(obj), routeView(obj));
  });
});
