/**
 * `owner-auth` against the service-module conformance suite, then what only it does: the sign-in
 * page and its session cookie, other users and groups, credentials kept from the runtime.
 */
import assert from "node:assert/strict";
import type { IncomingHttpHeaders } from "node:http";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { DEFAULT_SESSION_COOKIE, OWNER_AUTH_MODULE } from "../../src/runtimes/index.js";
import { type Backend, startBackend } from "../../testing/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { createRuntime, homeClient, removeObject } from "./cluster-support.js";
import { serviceModuleConformance } from "./proxy-module-conformance.js";
import { API, httpRequest, newToken, openWebSocket, serviceObject } from "./support.js";

const tenant = uniqueName("oat");
const owner = uniqueName("owner");
const other = uniqueName("other");
const operator = uniqueName("operator");
const password = "owner-auth-secret-1";
const tokens: Record<string, string> = {};
let identity: BuiltinIdentity;

async function users(): Promise<void> {
  identity = await sharedBuiltinIdentity();
  for (const name of [owner, other, operator]) {
    await identity.createUser({
      name,
      password,
      tenant,
      tenantAdmin: false,
      ...(name === operator ? { groups: ["runtime-operators"] } : {}),
    });
    tokens[name] = (await identity.login({ username: name, password })).token;
  }
}

async function removeUsers(): Promise<void> {
  for (const name of [owner, other, operator]) await identity?.deleteUser(name).catch(() => {});
  await removeObject(homeClient(), { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
}

const values = {
  settings: { "inject.X-Service-Token": "first" },
  changedSettings: { "inject.X-Service-Token": "second" },
};

serviceModuleConformance(OWNER_AUTH_MODULE, () => ({
  module: OWNER_AUTH_MODULE,
  ...values,
  badSettings: { settings: { cookieName: "not a cookie name" }, key: "cookieName" },
  owner: () => ({ user: owner, tenant }),
  setUp: users,
  tearDown: async () => {
    await removeUsers();
    await stopSharedBuiltinIdentity();
  },
  allowed: async () => ({ authorization: `Bearer ${tokens[owner]}` }),
  refused: async (): Promise<{ headers: Record<string, string>; status: number }[]> => [
    { headers: {}, status: 401 },
    { headers: { authorization: "Bearer not-a-token" }, status: 401 },
    { headers: { authorization: `Bearer ${tokens[other]}` }, status: 403 },
  ],
  received(headers: IncomingHttpHeaders, which) {
    assert.equal(headers["x-service-token"], values[which]["inject.X-Service-Token"]);
    assert.equal(headers.authorization, undefined, "the owner's token never reaches the runtime");
  },
}));

describe("owner-auth sign-in and sessions", () => {
  const client = homeClient();
  const namespace = uniqueName("rtoa");
  const service = uniqueName("oasvc");
  const secretName = uniqueName("oa-settings");
  const token = newToken();
  let backend: Backend;
  let base: string;

  before(async () => {
    await users();
    base = `${testEnvironment().tenantry.runtimesProxyUrl}/r/${token}`;
    backend = await startBackend();
    await client.core.createNamespace({ body: { metadata: { name: namespace } } });
    await client.objects.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: secretName, namespace: "tenantry-system" },
      stringData: { allowGroups: "runtime-operators" },
    } as KubernetesObject);
    await client.objects.create(
      serviceObject(service, {
        name: OWNER_AUTH_MODULE,
        secretRef: { name: secretName },
      }) as KubernetesObject,
    );
    await createRuntime(client, {
      namespace,
      name: "rt",
      token,
      user: owner,
      tenant,
      service,
      endpoint: backend.url,
    });
    await eventually(async () => {
      const r = await httpRequest(`${base}/echo`, { headers: { authorization: `Bearer ${tokens[owner]}` } });
      assert.equal(r.status, 200);
    });
  });

  after(async () => {
    await removeObject(client, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    await removeObject(client, { apiVersion: API, kind: "RuntimeService", metadata: { name: service } });
    await removeObject(client, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: secretName, namespace: "tenantry-system" },
    });
    await backend?.close();
    await removeUsers();
    await stopSharedBuiltinIdentity();
  });

  test("a browser without a session gets the sign-in page; signing in sets a cookie for this runtime only", async () => {
    const page = await httpRequest(`${base}/lab`, { headers: { accept: "text/html" } });
    assert.equal(page.status, 401);
    assert.match(page.body, /action="\/r\/[^"]+\/\.tenantry\/session"/);
    const signIn = await httpRequest(`${base}/.tenantry/session`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${encodeURIComponent(tokens[owner]!)}`,
    });
    assert.equal(signIn.status, 303);
    assert.equal(signIn.headers.location, `/r/${token}/`);
    const cookie = String(signIn.headers["set-cookie"]);
    assert.match(cookie, new RegExp(`^${DEFAULT_SESSION_COOKIE}=`));
    assert.match(cookie, new RegExp(`Path=/r/${token}/;`));
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Lax/);
    const session = cookie.split(";")[0]!;
    const r = await httpRequest(`${base}/echo`, { headers: { cookie: `theme=dark; ${session}` } });
    assert.equal(r.status, 200);
    assert.equal(
      r.json<{ headers: IncomingHttpHeaders }>().headers.cookie,
      "theme=dark",
      "the session cookie stays with the proxy",
    );
    const { ws } = await openWebSocket(`${base}/ws`, { cookie: session });
    ws.close();
  });

  test("another user's token signs nobody in; a member of an allowed group passes", async () => {
    const refused = await httpRequest(`${base}/.tenantry/session`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${encodeURIComponent(tokens[other]!)}`,
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers["set-cookie"], undefined);
    const operatorCall = await httpRequest(`${base}/echo`, {
      headers: { authorization: `Bearer ${tokens[operator]}` },
    });
    assert.equal(operatorCall.status, 200);
  });

  test("a revoked token's cookie no longer passes, and is cleared", async () => {
    const fresh = (await identity.login({ username: owner, password })).token;
    const signIn = await httpRequest(`${base}/.tenantry/session`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `token=${encodeURIComponent(fresh)}`,
    });
    const session = String(signIn.headers["set-cookie"]).split(";")[0]!;
    await identity.revoke(fresh);
    const after = await eventually(async () => {
      const got = await httpRequest(`${base}/echo`, {
        headers: { cookie: session, accept: "application/json" },
      });
      assert.equal(got.status, 401);
      return got;
    });
    assert.match(String(after.headers["set-cookie"]), /Max-Age=0/);
  });
});
