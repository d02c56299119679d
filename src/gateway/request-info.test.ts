import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parsePath, queryFlag, requestInfo } from "./request-info.js";

function info(method: string, url: string) {
  const [path, query = ""] = url.split("?");
  const parsed = parsePath(path!);
  assert.ok(parsed.ok, `path ${path} refused`);
  return requestInfo(method, parsed.path.segments, new URLSearchParams(query));
}

describe("parsePath", () => {
  test("takes the /tenants/{tenant}/ prefix off and keeps the rest as sent", () => {
    const parsed = parsePath("/tenants/acme/api/v1/namespaces/acme-dev/configmaps/a%3Ab");
    assert.ok(parsed.ok);
    assert.equal(parsed.path.tenant, "acme");
    assert.equal(parsed.path.upstreamPath, "/api/v1/namespaces/acme-dev/configmaps/a%3Ab");
    assert.deepEqual(parsed.path.segments, ["api", "v1", "namespaces", "acme-dev", "configmaps", "a:b"]);
    const root = parsePath("/tenants/acme");
    assert.ok(root.ok);
    assert.equal(root.path.upstreamPath, "/");
  });

  test("refuses dot segments, empty segments, encoded slashes and bad escapes", () => {
    for (const path of [
      "/api/v1/namespaces/%2e%2e",
      "/api/v1/namespaces/..",
      "/api/v1/namespaces/.",
      "//api/v1/namespaces",
      "/api//v1/namespaces",
      "/tenants/a/../b/api/v1/namespaces",
      "/tenants/a/%2e%2e/b/api/v1/namespaces",
      "/api/v1/namespaces/a%2fb",
      "/api/v1/namespaces/%zz",
      "/tenants/Not_A_Tenant/api",
      "api/v1",
    ]) {
      assert.equal(parsePath(path).ok, false, path);
    }
  });

  test("a trailing slash is allowed, as the API server trims it", () => {
    const parsed = parsePath("/api/");
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.path.segments, ["api"]);
  });
});

describe("requestInfo", () => {
  test("list, watch and get of namespaces", () => {
    assert.deepEqual(info("GET", "/api/v1/namespaces"), {
      isResource: true,
      verb: "list",
      apiGroup: "",
      apiVersion: "v1",
      resource: "namespaces",
      legacyWatch: false,
    });
    assert.equal(info("GET", "/api/v1/namespaces?watch=1").verb, "watch");
    assert.equal(info("GET", "/api/v1/namespaces?watch=yes").verb, "watch");
    assert.equal(info("GET", "/api/v1/namespaces?watch=false").verb, "list");
    assert.equal(info("GET", "/api/v1/namespaces?watch").verb, "watch");
    const one = info("GET", "/api/v1/namespaces/a");
    assert.ok(one.isResource);
    assert.equal(one.verb, "get");
    assert.equal(one.name, "a");
    assert.equal(one.namespace, "a");
    const status = info("PUT", "/api/v1/namespaces/a/status");
    assert.ok(status.isResource);
    assert.equal(status.resource, "namespaces");
    assert.equal(status.subresource, "status");
  });

  test("the legacy watch prefix is a watch, also of one object", () => {
    const legacy = info("GET", "/api/v1/watch/namespaces/b");
    assert.ok(legacy.isResource);
    assert.equal(legacy.verb, "watch");
    assert.equal(legacy.name, "b");
    assert.equal(legacy.legacyWatch, true);
  });

  test("namespaced resources, groups and subresources", () => {
    const exec = info("POST", "/api/v1/namespaces/ns/pods/p/exec?command=sh");
    assert.ok(exec.isResource);
    assert.deepEqual(
      [exec.verb, exec.namespace, exec.resource, exec.name, exec.subresource],
      ["create", "ns", "pods", "p", "exec"],
    );
    const classes = info("GET", "/apis/storage.k8s.io/v1/storageclasses");
    assert.ok(classes.isResource);
    assert.deepEqual(
      [classes.apiGroup, classes.resource, classes.verb],
      ["storage.k8s.io", "storageclasses", "list"],
    );
    assert.equal(info("DELETE", "/api/v1/namespaces/ns/configmaps").verb, "deletecollection");
  });

  test("discovery and other paths are not resource requests", () => {
    for (const path of ["/api", "/api/v1", "/apis", "/apis/apps/v1", "/version", "/openapi/v3", "/"]) {
      assert.equal(info("GET", path).isResource, false, path);
    }
  });

  test("boolean query flags read like the API server reads them", () => {
    assert.equal(queryFlag(null), false);
    assert.equal(queryFlag(""), true);
    assert.equal(queryFlag("0"), false);
    assert.equal(queryFlag("False"), false);
    assert.equal(queryFlag("1"), true);
    assert.equal(queryFlag("true"), true);
  });
});
