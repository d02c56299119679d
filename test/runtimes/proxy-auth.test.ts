/**
 * Runtimes behind the proxy of the tenantry serving the home cluster, tried from the attacker's
 * side: with the URL alone, with another tenant's user, with forged, expired and borrowed cookies;
 * and from the owner's: a browser's login through tenantry's identity, tokens, sharing with a user
 * and a group through the Admin API, and taking it back.
 */
import assert from "node:assert/strict";
import type { IncomingHttpHeaders } from "node:http";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject, V1Secret } from "@kubernetes/client-node";
import { SESSION_COOKIE, SESSION_KEY_SECRET, seal } from "../../src/runtimes/index.js";
import { type Backend, startBackend } from "../../testing/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { createRuntime, homeClient, removeObject } from "./cluster-support.js";
import { browserLogin, type RuntimeUser, removeRuntimeUsers, runtimeUser } from "./owner-session.js";
import { API, closed, httpRequest, newToken, openWebSocket, serviceObject } from "./support.js";

describe("runtimes proxy: who gets in", () => {
  const client = homeClient();
  const namespace = uniqueName("rtauth");
  const service = uniqueName("asvc");
  const publicService = uniqueName("asvc-pub");
  const group = uniqueName("team");
  const tokens = { mine: newToken(), mineToo: newToken(), theirs: newToken(), open: newToken() };
  let proxy: string;
  let backend: Backend;
  let owner: RuntimeUser;
  /** Another tenant's user who has the owner's URL. */
  let intruder: RuntimeUser;
  let friend: RuntimeUser;
  let member: RuntimeUser;
  const url = (token: string, rest = "/echo") => `${proxy}/r/${token}${rest}`;
  const access = `/services/${"%OWNER%"}/${service}/mine/access`;
  const share = (body: unknown, headers: Record<string, string>) =>
    httpRequest(`${proxy}${access.replace("%OWNER%", owner.user)}`, {
      method: "PUT",
      headers: { ...headers, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
  const status = async (token: string, headers: Record<string, string>) =>
    (await httpRequest(url(token), { headers: { accept: "application/json", ...headers } })).status;

  before(async () => {
    proxy = testEnvironment().tenantry.runtimesProxyUrl!;
    assert.ok(proxy, "the test tenantry serves the runtimes proxy");
    owner = await runtimeUser("owner");
    intruder = await runtimeUser("intruder");
    friend = await runtimeUser("friend");
    member = await runtimeUser("member", { groups: [group] });
    backend = await startBackend();
    await client.core.createNamespace({ body: { metadata: { name: namespace } } });
    await client.objects.create(serviceObject(service) as KubernetesObject);
    await client.objects.create(
      serviceObject(publicService, undefined, { routeAccess: "Public" }) as KubernetesObject,
    );
    const runtime = (name: string, token: string, who: RuntimeUser, svc = service) =>
      createRuntime(client, {
        namespace,
        name,
        token,
        user: who.user,
        tenant: who.tenant,
        service: svc,
        endpoint: backend.url,
      });
    await runtime("mine", tokens.mine, owner);
    await runtime("mine-too", tokens.mineToo, owner);
    await runtime("theirs", tokens.theirs, intruder);
    await runtime("open", tokens.open, owner, publicService);
    for (const token of [tokens.mine, tokens.mineToo, tokens.theirs]) {
      await eventually(async () =>
        assert.equal(await status(token, owner.headers), token === tokens.theirs ? 403 : 200),
      );
    }
  });

  after(async () => {
    await removeObject(client, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    for (const name of [service, publicService]) {
      await removeObject(client, { apiVersion: API, kind: "RuntimeService", metadata: { name } });
    }
    await backend?.close();
    await removeRuntimeUsers(owner, intruder, friend, member);
    await stopSharedBuiltinIdentity();
  });

  test("another tenant's user with the URL is refused 403, HTTP and WebSocket; the owner gets in", async () => {
    const refused = await httpRequest(url(tokens.mine), { headers: intruder.headers });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers["content-type"], "application/problem+json");
    assert.match(refused.json<{ detail: string }>().detail, new RegExp(`not shared with ${intruder.user}`));
    await assert.rejects(openWebSocket(url(tokens.mine, "/ws"), intruder.headers), { status: 403 });
    const { ws } = await openWebSocket(url(tokens.mine, "/ws"), owner.headers);
    ws.close();
    await closed(ws);
  });

  test("an API client without credentials gets 401 problem+json, HTTP and WebSocket; a bad token too", async () => {
    const anonymous = await httpRequest(url(tokens.mine), { headers: { accept: "application/json" } });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers["content-type"], "application/problem+json");
    assert.match(String(anonymous.headers["www-authenticate"]), /^Bearer/);
    await assert.rejects(openWebSocket(url(tokens.mine, "/ws")), { status: 401 });
    assert.equal(await status(tokens.mine, { authorization: "Bearer not-a-token" }), 401);
  });

  test("a logged-out browser is sent to the login page and, signed in, lands back on the runtime URL; credentials stay with the proxy", async () => {
    const asked = url(tokens.mine, "/lab/tree?x=1");
    const login = await browserLogin(proxy, asked, { username: owner.user, password: owner.password });
    assert.equal(login.landed, asked);
    assert.match(login.setCookie, new RegExp(`Path=/r/${tokens.mine}/;`));
    assert.match(login.setCookie, /HttpOnly/);
    assert.match(login.setCookie, /SameSite=Lax/);
    assert.doesNotMatch(login.setCookie, /Secure/, "served over plain HTTP here");
    const page = await httpRequest(login.landed, {
      headers: {
        accept: "text/html",
        cookie: `theme=dark; ${login.cookie}`,
        authorization: "token the-runtimes-own",
      },
    });
    assert.equal(page.status, 200);
    const seen = page.json<{ url: string; headers: IncomingHttpHeaders }>();
    assert.equal(seen.url, "/lab/tree?x=1");
    assert.equal(seen.headers.cookie, "theme=dark", "the session cookie never reaches the runtime");
    assert.equal(seen.headers.authorization, "token the-runtimes-own", "the runtime's own credential passes");
    const bearer = await httpRequest(url(tokens.mine), { headers: owner.headers });
    assert.equal(bearer.json<{ headers: IncomingHttpHeaders }>().headers.authorization, undefined);
    const { ws, greeting } = await openWebSocket(url(tokens.mine, "/ws"), { cookie: login.cookie });
    assert.equal(greeting.headers.cookie, undefined);
    ws.close();
    // The cookie is this runtime's: not the owner's other runtime, not another user's.
    assert.equal(await status(tokens.mineToo, { cookie: login.cookie }), 401);
    assert.equal(await status(tokens.theirs, { cookie: login.cookie }), 401);
    const logout = await httpRequest(url(tokens.mine, "/.tenantry/logout"), {
      headers: { cookie: login.cookie },
    });
    assert.match(String(logout.headers["set-cookie"]), new RegExp(`^${SESSION_COOKIE}=; .*Max-Age=0`));
  });

  test("a wrong password is refused on the login page; a code is used once, only with its state cookie", async () => {
    const first = await httpRequest(url(tokens.mine, "/"), { headers: { accept: "text/html" } });
    const location = new URL(String(first.headers.location), proxy);
    const form = (password: string) =>
      new URLSearchParams({
        next: location.searchParams.get("next")!,
        state: location.searchParams.get("state")!,
        username: owner.user,
        password,
      }).toString();
    const post = (body: string) =>
      httpRequest(`${proxy}${location.pathname}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body,
      });
    const wrong = await post(form("not-the-password"));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers["set-cookie"], undefined);
    const right = await post(form(owner.password));
    assert.equal(right.status, 303);
    const callback = new URL(String(right.headers.location), proxy).href;
    const stateCookie = String(first.headers["set-cookie"]).split(";")[0]!;
    assert.equal((await httpRequest(callback)).status, 400, "another browser (no state cookie) gets nothing");
    assert.equal((await httpRequest(callback, { headers: { cookie: stateCookie } })).status, 302);
    assert.equal(
      (await httpRequest(callback, { headers: { cookie: stateCookie } })).status,
      400,
      "used once",
    );
    const elsewhere = await post(
      new URLSearchParams({
        next: "https://evil.example/",
        state: location.searchParams.get("state")!,
        username: owner.user,
        password: owner.password,
      }).toString(),
    );
    assert.equal(elsewhere.status, 400, "next stays on runtimes");
  });

  test("a forged, expired or revoked session is refused, and cleared", async () => {
    const forged = `${SESSION_COOKIE}=v1.AAAAAAAAAAAAAAAA.AAAA.AAAAAAAAAAAAAAAAAAAAAA`;
    const refused = await httpRequest(url(tokens.mine), {
      headers: { cookie: forged, accept: "application/json" },
    });
    assert.equal(refused.status, 401);
    assert.match(String(refused.headers["set-cookie"]), /Max-Age=0/);
    const secret = await client.core.readNamespacedSecret({
      name: SESSION_KEY_SECRET,
      namespace: "tenantry-system",
    });
    const key = Buffer.from((secret as V1Secret).data!.key!, "base64");
    const { createHash } = await import("node:crypto");
    const bound = {
      tok: owner.token,
      r: `${namespace}/mine`,
      t: createHash("sha256").update(tokens.mine).digest("base64url"),
    };
    const live = `${SESSION_COOKIE}=${seal(key, "session", { ...bound, exp: Date.now() + 60_000 })}`;
    assert.equal(await status(tokens.mine, { cookie: live }), 200, "sealed under the shared key, it opens");
    const expired = `${SESSION_COOKIE}=${seal(key, "session", { ...bound, exp: Date.now() - 1000 })}`;
    const stale = await httpRequest(url(tokens.mine), {
      headers: { cookie: expired, accept: "application/json" },
    });
    assert.equal(stale.status, 401);
    assert.match(stale.json<{ detail: string }>().detail, /expired/);
    const browser = await httpRequest(url(tokens.mine), {
      headers: { cookie: expired, accept: "text/html" },
    });
    assert.equal(browser.status, 302, "a browser with an expired session signs in again");
    // A session whose sign-in was revoked (logout) ends with it.
    const identity = await sharedBuiltinIdentity();
    const fresh = (await identity.login({ username: owner.user, password: owner.password })).token;
    const revocable = `${SESSION_COOKIE}=${seal(key, "session", { ...bound, tok: fresh, exp: Date.now() + 60_000 })}`;
    assert.equal(await status(tokens.mine, { cookie: revocable }), 200);
    await identity.revoke(fresh);
    await eventually(async () => assert.equal(await status(tokens.mine, { cookie: revocable }), 401));
  });

  test("the owner shares with a user and a group, then takes it back; a JupyterHub token needs access:servers", async () => {
    assert.equal(await status(tokens.mine, friend.headers), 403);
    const refusedShare = await share({ users: [intruder.user] }, intruder.headers);
    assert.ok(refusedShare.status === 403 || refusedShare.status === 404, `${refusedShare.status}`);
    const shared = await share({ users: [friend.user], groups: [group] }, owner.headers);
    assert.equal(shared.status, 200, shared.body);
    assert.deepEqual(shared.json(), { users: [friend.user], groups: [group] });
    await eventually(async () => assert.equal(await status(tokens.mine, friend.headers), 200));
    await eventually(async () => assert.equal(await status(tokens.mine, member.headers), 200));
    assert.equal(await status(tokens.mine, intruder.headers), 403);
    const { ws } = await openWebSocket(url(tokens.mine, "/ws"), friend.headers);
    const revoked = await share({}, owner.headers);
    assert.deepEqual(revoked.json(), { users: [], groups: [] });
    await eventually(async () => assert.equal(await status(tokens.mine, friend.headers), 403));
    assert.equal(await status(tokens.mine, member.headers), 403);
    await closed(ws);

    const hubToken = async (scopes: string[]) => {
      const r = await httpRequest(`${proxy}/hub/api/users/${owner.user}/tokens`, {
        method: "POST",
        headers: { ...owner.headers, "content-type": "application/json" },
        body: JSON.stringify({ scopes, note: "proxy test" }),
      });
      assert.equal(r.status, 201, r.body);
      return r.json<{ token: string }>().token;
    };
    const serverToken = await hubToken([`access:servers!server=${owner.user}/mine`]);
    const readOnly = await hubToken([`read:users!user=${owner.user}`]);
    await eventually(async () =>
      assert.equal(await status(tokens.mine, { authorization: `token ${serverToken}` }), 200),
    );
    assert.equal(await status(tokens.mineToo, { authorization: `token ${serverToken}` }), 403);
    assert.equal(await status(tokens.mine, { authorization: `token ${readOnly}` }), 403);
  });

  test("bad grants are refused naming the field and the limit; nothing changes", async () => {
    const tooMany = await share({ users: Array.from({ length: 65 }, (_, i) => `u${i}`) }, owner.headers);
    assert.equal(tooMany.status, 400);
    assert.match(String(tooMany.headers["content-type"]), /^application\/problem\+json/);
    const problem = tooMany.json<{ field: string; limit: number }>();
    assert.equal(problem.field, "users");
    assert.equal(problem.limit, 64);
    const tooLong = await share({ groups: ["g".repeat(257)] }, owner.headers);
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.json<{ field: string }>().field, /^groups/);
    assert.equal(await status(tokens.mine, friend.headers), 403);
  });

  test("a service declared public is served to anyone with the URL", async () => {
    await eventually(async () => assert.equal(await status(tokens.open, {}), 200));
  });
});
