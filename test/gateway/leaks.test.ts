/**
 * Every way we could think of for tenant A's owner to get a list of tenant B's namespaces out of
 * the gateway. Any answer carrying one of B's namespace names fails the test, except the echo of a
 * name the request itself carried (a 403 or 404 naming it).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { uniqueName } from "../support/clusters.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  type Answer,
  call,
  createTenant,
  deleteTenants,
  startTestGateway,
  type TestGateway,
  waitForNamespaces,
  watchFor,
} from "./support.js";

const TABLE =
  "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

describe("no path of the gateway leaks another tenant's namespaces", () => {
  const a = uniqueName("lka");
  const b = uniqueName("lkb");
  const aNamespaces = [`${a}-one`, `${a}-two`];
  const bNamespaces = [`${b}-one`, `${b}-two`, `${b}-three`];
  const [b1, b2] = bNamespaces as [string, string, string];
  let alice: TestUser;
  let gw: TestGateway;

  before(async () => {
    alice = await testUser(uniqueName("alice"));
    const bob = await testUser(uniqueName("bob"));
    await Promise.all([
      createTenant(a, {
        owners: [{ kind: "User", name: alice.name }],
        namespaces: [{ name: "one" }, { name: "two" }],
      }),
      createTenant(b, {
        owners: [{ kind: "User", name: bob.name }],
        namespaces: [{ name: "one" }, { name: "two" }, { name: "three" }],
      }),
    ]);
    gw = await startTestGateway();
    await waitForNamespaces(gw.informers, [...aNamespaces, ...bNamespaces]);
  });

  after(async () => {
    await gw?.stop();
    await deleteTenants([a, b]);
  });

  /** The B namespaces an answer shows, leaving out those the request named itself. */
  function leaked(answer: Answer, named: string[] = []): string[] {
    return bNamespaces.filter((ns) => !named.includes(ns) && answer.body.includes(ns));
  }

  test("plain requests, selectors, Tables, protobuf, paging, tenant paths and path tricks", async () => {
    const paths: { path: string; headers?: Record<string, string> }[] = [
      { path: "/api/v1/namespaces" },
      { path: "/api/v1/namespaces/" },
      { path: `/api/v1/namespaces?labelSelector=${encodeURIComponent(`tenantry.dev/tenant!=${a}`)}` },
      { path: `/api/v1/namespaces?labelSelector=${encodeURIComponent(`tenantry.dev/tenant=${b}`)}` },
      {
        path: `/api/v1/namespaces?labelSelector=${encodeURIComponent(`tenantry.dev/tenant in (${a},${b})`)}`,
      },
      { path: `/api/v1/namespaces?labelSelector=${encodeURIComponent("!tenantry.dev/tenant")}` },
      { path: "/api/v1/namespaces?labelSelector=" },
      { path: `/api/v1/namespaces?labelSelector=${encodeURIComponent("x in (y")}` },
      { path: `/api/v1/namespaces?labelSelector=${encodeURIComponent(")")}` },
      {
        path: `/api/v1/namespaces?labelSelector=a&labelSelector=${encodeURIComponent(`tenantry.dev/tenant=${b}`)}`,
      },
      { path: `/api/v1/namespaces?label%53elector=${encodeURIComponent(`tenantry.dev/tenant=${b}`)}` },
      { path: `/api/v1/namespaces?fieldSelector=${encodeURIComponent(`metadata.name=${b1}`)}` },
      { path: `/api/v1/namespaces?fieldSelector=${encodeURIComponent(`metadata.name!=${aNamespaces[0]}`)}` },
      { path: "/api/v1/namespaces?limit=1" },
      { path: "/api/v1/namespaces?resourceVersion=0" },
      { path: "/api/v1/namespaces?watch=0" },
      { path: "/api/v1/namespaces?watch=false&watch=true" },
      { path: "/api/v1/namespaces", headers: { accept: TABLE } },
      { path: "/api/v1/namespaces?includeObject=Object", headers: { accept: TABLE } },
      { path: "/api/v1/namespaces", headers: { accept: "application/vnd.kubernetes.protobuf" } },
      {
        path: "/api/v1/namespaces",
        headers: { accept: "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1" },
      },
      { path: "/api/v1/namespaces", headers: { "accept-encoding": "gzip" } },
      { path: `/tenants/${b}/api/v1/namespaces` },
      {
        path: `/tenants/${a}/api/v1/namespaces?labelSelector=${encodeURIComponent(`tenantry.dev/tenant=${b}`)}`,
      },
      {
        path: `/tenants/${a}/api/v1/namespaces?labelSelector=${encodeURIComponent(`tenantry.dev/tenant!=${a}`)}`,
      },
      { path: `/tenants/${a}/../${b}/api/v1/namespaces` },
      { path: `/tenants/${a}/%2e%2e/${b}/api/v1/namespaces` },
      { path: `/tenants/${a}/%2E%2E/%2E%2E/api/v1/namespaces` },
      { path: `/tenants/${a}/api/v1/namespaces/%2e%2e/%2e%2e/api/v1/namespaces` },
      { path: "/api/v1/namespaces/%2e%2e" },
      { path: "/api/v1/namespaces/.." },
      { path: "/api/v1/namespaces/%2e" },
      { path: "/api/v1/namespaces/%2f" },
      { path: "//api/v1/namespaces" },
      { path: "/api//v1/namespaces" },
      { path: "/api/v1//namespaces" },
      { path: "/./api/v1/namespaces" },
      { path: "/api/v1/namespaces%3Fwatch=1" },
      { path: "/api/v1/namespaces;labelSelector=x" },
      { path: "/API/v1/namespaces" },
      { path: "/api/v1/watch/namespaces?timeoutSeconds=1" },
      { path: `/api/v1/watch/namespaces/${b1}?timeoutSeconds=1` },
      { path: "/api/v1/proxy/namespaces" },
      { path: "/apis/tenantry.dev/v1alpha1/tenants" },
      { path: `/apis/tenantry.dev/v1alpha1/tenants/${b}` },
      { path: "/api/v1/events" },
      { path: "/api/v1/configmaps" },
      { path: "/api/v1/serviceaccounts" },
      { path: "/api/v1/resourcequotas" },
      { path: "/apis/networking.k8s.io/v1/networkpolicies" },
      { path: "/apis/rbac.authorization.k8s.io/v1/rolebindings" },
      { path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" },
      { path: "/apis/coordination.k8s.io/v1/leases" },
      { path: "/apis/events.k8s.io/v1/events" },
      { path: "/api" },
      { path: "/apis" },
      { path: "/api/v1" },
      { path: "/openapi/v3" },
      { path: "/version" },
      { path: "/metrics" },
      { path: "/healthz" },
      { path: `/tenants/${a}/apis/tenantry.dev/v1alpha1/tenants` },
      {
        path: "/api/v1/namespaces?watch=1",
        headers: {
          connection: "Upgrade",
          upgrade: "websocket",
          "sec-websocket-version": "13",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          origin: "http://localhost",
        },
      },
    ];
    const failures: string[] = [];
    for (const { path, headers } of paths) {
      const answer = await call(gw.gateway, path, { user: alice, ...(headers ? { headers } : {}) });
      const shown = leaked(answer);
      if (shown.length)
        failures.push(`${path} (${answer.status}) shows ${shown.join(", ")}: ${answer.body.slice(0, 300)}`);
    }
    assert.deepEqual(failures, []);
  });

  test("the next page of a paged list shows no more than the first", async () => {
    const first = await call(gw.gateway, "/api/v1/namespaces?limit=1", { user: alice });
    const token = (JSON.parse(first.body) as { metadata: { continue?: string } }).metadata.continue;
    assert.ok(token, "a first page of one namespace out of two has a continue token");
    const next = await call(
      gw.gateway,
      `/api/v1/namespaces?limit=500&continue=${encodeURIComponent(token)}`,
      {
        user: alice,
      },
    );
    assert.deepEqual(leaked(next), []);
    assert.equal(next.status, 200);
  });

  test("requests naming B's namespaces get 403 or 404, and nothing about the others", async () => {
    const paths = [
      `/api/v1/namespaces/${b1}`,
      `/api/v1/namespaces/${b1}?watch=1`,
      `/api/v1/namespaces/${b1}/status`,
      `/api/v1/namespaces/${b1}/configmaps`,
      `/api/v1/namespaces/${b1}/pods`,
      `/api/v1/namespaces/${b1}/resourcequotas`,
      `/api/v1/namespaces/${b1}/events`,
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${b1}/rolebindings`,
      `/tenants/${a}/api/v1/namespaces/${b1}`,
      `/tenants/${a}/api/v1/namespaces/${b1}/configmaps`,
      `/tenants/${b}/api/v1/namespaces/${b1}`,
      `/api/v1/namespaces/${b1}`.replace(b1, encodeURIComponent(b1).replace("-", "%2D")),
    ];
    const failures: string[] = [];
    for (const path of paths) {
      const answer = await call(gw.gateway, path, { user: alice, headers: { accept: TABLE } });
      const shown = leaked(answer, [b1]);
      if (answer.status < 400 || shown.length) {
        failures.push(`${path} (${answer.status}) ${answer.body.slice(0, 300)}`);
      }
    }
    assert.deepEqual(failures, []);
    const existing = await call(gw.gateway, `/api/v1/namespaces/${b1}`, { user: alice });
    const missing = await call(gw.gateway, `/api/v1/namespaces/${b}-nothing`, { user: alice });
    assert.equal(existing.status, 404);
    assert.equal(existing.body.replaceAll(b1, "NAME"), missing.body.replaceAll(`${b}-nothing`, "NAME"));
  });

  test("watches, plain and as Tables, from the start and from now, show none of B's namespaces", async () => {
    for (const path of [
      "/api/v1/namespaces?watch=1&resourceVersion=0",
      "/api/v1/namespaces?watch=1",
      `/api/v1/namespaces?watch=1&labelSelector=${encodeURIComponent(`tenantry.dev/tenant=${b}`)}`,
      "/api/v1/namespaces?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
      `/tenants/${b}/api/v1/namespaces?watch=1&resourceVersion=0`,
      `/tenants/${a}/api/v1/namespaces?watch=1&resourceVersion=0`,
    ]) {
      const plain = await watchFor(gw.gateway, path, alice, 1000);
      assert.deepEqual(leaked(plain), [], `${path}: ${plain.body.slice(0, 300)}`);
      const table = await watchFor(gw.gateway, path, alice, 1000, undefined, { accept: TABLE });
      assert.deepEqual(leaked(table), [], `${path} as Table: ${table.body.slice(0, 300)}`);
    }
    // A watch from the start shows A's namespaces (so it did run), and only those.
    const mine = await watchFor(gw.gateway, "/api/v1/namespaces?watch=1&resourceVersion=0", alice, 1000);
    for (const ns of aNamespaces)
      assert.ok(mine.body.includes(ns), `${ns} missing from ${mine.body.slice(0, 200)}`);
    void b2;
  });
});
