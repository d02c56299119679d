import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { describe, test } from "node:test";
import { silentLogger } from "../../../kube/index.js";
import type { RouteView } from "../route.js";
import { StaticRouteSource } from "../source.js";
import type { Principal } from "./access.js";
import { SESSION_COOKIE } from "./credentials.js";
import { RouteGuard } from "./guard.js";
import { SessionKeys } from "./keys.js";
import { newSessionKey } from "./sealed.js";

const view: RouteView = {
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
  access: { users: new Set(), groups: new Set() },
};

const ALICE = "thub_alice-token";
const BOB = "thub_bob-token";

/** A guard over JupyterHub tokens of alice and bob, counting how often their holder is looked up. */
function guardOf(cacheTtlMs = 10_000) {
  const lookups: string[] = [];
  const holders: Record<string, Principal> = {
    [ALICE]: { username: "alice", tenant: "acme", groups: [], scopes: new Set(["access:servers"]) },
    [BOB]: { username: "bob", groups: [], scopes: new Set(["access:servers"]) },
  };
  const keys = new SessionKeys(new StaticRouteSource(), silentLogger, newSessionKey());
  const guard = new RouteGuard({
    keys,
    cacheTtlMs,
    hubTokens: async (token) => {
      lookups.push(token);
      return holders[token];
    },
  });
  return { guard, lookups };
}

/** A request on `socket` (one keep-alive connection) with these headers. */
const requestOn = (socket: object, headers: Record<string, string>) =>
  ({ socket, headers }) as unknown as IncomingMessage;

describe("the route guard on a keep-alive connection", () => {
  test("a credential sent again on one connection names the same holder; another credential on it is identified anew", async () => {
    const { guard, lookups } = guardOf();
    const connection = {};
    for (let i = 0; i < 3; i++) {
      const who = await guard.identify(requestOn(connection, { authorization: `token ${ALICE}` }), view);
      assert.equal(who.principal?.username, "alice");
    }
    assert.deepEqual(lookups, [ALICE]);
    // Another caller's credential on the same connection (an ingress's pooled one): never alice's answer.
    const bob = await guard.identify(requestOn(connection, { authorization: `token ${BOB}` }), view);
    assert.equal(bob.principal?.username, "bob");
    const unknown = await guard.identify(requestOn(connection, { authorization: "token thub_nobody" }), view);
    assert.equal(unknown.principal, undefined);
    const none = await guard.identify(requestOn(connection, {}), view);
    assert.equal(none.principal, undefined);
  });

  test("the connection keeps an answer no longer than the guard's cache: then the holder is asked again", async () => {
    const { guard, lookups } = guardOf(1);
    const connection = {};
    await guard.identify(requestOn(connection, { authorization: `token ${ALICE}` }), view);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await guard.identify(requestOn(connection, { authorization: `token ${ALICE}` }), view);
    assert.deepEqual(lookups, [ALICE, ALICE]);
  });

  test("a session cookie opened once per connection still binds to its runtime, and a changed cookie is opened anew", async () => {
    const { guard } = guardOf();
    const session = await guard.session(ALICE, view);
    assert.ok(session);
    const connection = {};
    const cookie = { cookie: `${SESSION_COOKIE}=${session.cookie}` };
    for (let i = 0; i < 2; i++) {
      const who = await guard.identify(requestOn(connection, cookie), view);
      assert.equal(who.principal?.username, "alice");
      assert.equal(who.principal && who.via, "cookie");
    }
    // The same cookie sent for another runtime on that connection is refused.
    const other = await guard.identify(requestOn(connection, cookie), { ...view, key: "ns/other" });
    assert.equal(other.principal, undefined);
    const forged = { cookie: `${SESSION_COOKIE}=${session.cookie.slice(0, -2)}AA` };
    assert.equal((await guard.identify(requestOn(connection, forged), view)).principal, undefined);
  });
});
