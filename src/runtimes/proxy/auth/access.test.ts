import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { expandScopes, roleScopes } from "../../hub/scopes.js";
import type { RouteView } from "../route.js";
import { accessOf } from "./access.js";

const view = (access: { users?: string[]; groups?: string[] } = {}): RouteView => ({
  key: "ns/rt",
  namespace: "ns",
  name: "rt",
  token: "t".repeat(43),
  user: "alice",
  tenant: "acme",
  service: "jupyter",
  instance: "lab",
  status: "ready",
  phase: "Running",
  access: { users: new Set(access.users ?? []), groups: new Set(access.groups ?? []) },
});

describe("who may use a runtime", () => {
  test("its user in its tenant; the same name in another tenant is someone else", () => {
    assert.equal(accessOf({ username: "alice", tenant: "acme", groups: [] }, view()), "owner");
    assert.equal(accessOf({ username: "alice", tenant: "other", groups: [] }, view()), undefined);
    assert.equal(accessOf({ username: "bob", tenant: "acme", groups: [] }, view()), undefined);
  });

  test("users and groups spec.access names", () => {
    const shared = view({ users: ["bob"], groups: ["tenantry:tenant:acme"] });
    assert.equal(accessOf({ username: "bob", tenant: "x", groups: [] }, shared), "user grant");
    assert.equal(accessOf({ username: "carol", groups: ["tenantry:tenant:acme"] }, shared), "group grant");
    assert.equal(accessOf({ username: "dave", groups: ["other"] }, shared), undefined);
  });

  test("a JupyterHub token: access:servers on this server, its user's, or all; grants only with its own access scope", () => {
    const token = (username: string, scopes: Set<string>, tenant?: string) => ({
      username,
      groups: [],
      scopes,
      ...(tenant ? { tenant } : {}),
    });
    assert.equal(accessOf(token("alice", roleScopes("alice", false), "acme"), view()), "owner");
    assert.equal(accessOf(token("alice", expandScopes(["read:users"], "alice"), "acme"), view()), undefined);
    const server = expandScopes(["access:servers!server=alice/lab"], "bob");
    assert.equal(accessOf(token("bob", server), view()), "access:servers");
    const otherServer = expandScopes(["access:servers!server=alice/other"], "bob");
    assert.equal(accessOf(token("bob", otherServer), view()), undefined);
    assert.equal(accessOf(token("root", roleScopes("root", true)), view()), "access:servers");
    assert.equal(accessOf(token("alice", roleScopes("alice", false), "other"), view()), undefined);
    assert.equal(accessOf(token("bob", roleScopes("bob", false)), view({ users: ["bob"] })), "user grant");
    const readOnly = expandScopes(["read:users"], "bob");
    assert.equal(accessOf(token("bob", readOnly), view({ users: ["bob"] })), undefined);
  });
});
