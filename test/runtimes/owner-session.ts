/**
 * Signing in to runtimes as the proxy asks: users of the built-in identity service of the test
 * tenantry (with a token for `Authorization: Bearer`), and a browser's login — the redirect to the
 * login page, the password form, the callback with its one-time code, the session cookie.
 */
import assert from "node:assert/strict";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { BrowserContext } from "playwright-core";
import { LOGIN_PAGE, SESSION_COOKIE, STATE_COOKIE } from "../../src/runtimes/index.js";
import { uniqueName } from "../support/clusters.js";
import { sharedBuiltinIdentity } from "../support/identity.js";
import { homeClient, removeObject } from "./cluster-support.js";
import { API, httpRequest, type Reply } from "./support.js";

export interface RuntimeUser {
  user: string;
  tenant: string;
  password: string;
  /** A token of tenantry's identity service. */
  token: string;
  /** `Authorization: Bearer <token>`. */
  headers: Record<string, string>;
}

/** A built-in user in `tenant` (a new tenant by default), with a token. */
export async function runtimeUser(
  prefix: string,
  options: { tenant?: string; groups?: string[] } = {},
): Promise<RuntimeUser> {
  const identity = await sharedBuiltinIdentity();
  const user = uniqueName(prefix);
  const tenant = options.tenant ?? uniqueName(`${prefix}-t`);
  const password = `${user}-password-1`;
  await identity.createUser({
    name: user,
    password,
    tenant,
    tenantAdmin: false,
    ...(options.groups ? { groups: options.groups } : {}),
  });
  const { token } = await identity.login({ username: user, password });
  return { user, tenant, password, token, headers: { authorization: `Bearer ${token}` } };
}

/** Removes the users and their tenants (the caller stops the shared identity service). */
export async function removeRuntimeUsers(...users: (RuntimeUser | undefined)[]): Promise<void> {
  const identity = await sharedBuiltinIdentity();
  for (const u of users) {
    if (!u) continue;
    await identity.deleteUser(u.user).catch(() => {});
    await removeObject(homeClient(), {
      apiVersion: API,
      kind: "Tenant",
      metadata: { name: u.tenant },
    } as KubernetesObject);
  }
}

const cookieOf = (reply: Reply, name: string): string | undefined => {
  const all = ([] as string[]).concat(reply.headers["set-cookie"] ?? []);
  return all.find((c) => c.startsWith(`${name}=`));
};

export interface BrowserLogin {
  /** `tenantry-runtime-session=…`, to send back as a Cookie header. */
  cookie: string;
  /** The Set-Cookie header that set it. */
  setCookie: string;
  /** Where the browser was sent at the end (the runtime URL it asked for). */
  landed: string;
}

/**
 * What a browser does opening `url` (a runtime's address through `proxy`) without a session:
 * redirected to the login page, signs in with the password, comes back through the callback.
 */
export async function browserLogin(
  proxy: string,
  url: string,
  credentials: { username: string; password: string },
): Promise<BrowserLogin> {
  const first = await httpRequest(url, { headers: { accept: "text/html" } });
  assert.equal(first.status, 302, `a browser without a session is sent to the login page: ${first.body}`);
  const location = new URL(String(first.headers.location), proxy);
  assert.equal(location.pathname, LOGIN_PAGE);
  const state = cookieOf(first, STATE_COOKIE)?.split(";")[0];
  assert.ok(state, "the redirect sets the login's state cookie");
  const page = await httpRequest(location.href, { headers: { accept: "text/html" } });
  assert.equal(page.status, 200);
  assert.match(page.body, /name="password"/);
  const form = new URLSearchParams({
    next: location.searchParams.get("next") ?? "",
    state: location.searchParams.get("state") ?? "",
    username: credentials.username,
    password: credentials.password,
  });
  const signedIn = await httpRequest(`${proxy}${LOGIN_PAGE}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html" },
    body: form.toString(),
  });
  assert.equal(signedIn.status, 303, signedIn.body);
  const callback = await httpRequest(new URL(String(signedIn.headers.location), proxy).href, {
    headers: { accept: "text/html", cookie: state },
  });
  assert.equal(callback.status, 302, callback.body);
  const setCookie = cookieOf(callback, SESSION_COOKIE);
  assert.ok(setCookie, "the callback sets the session cookie");
  return {
    cookie: setCookie.split(";")[0]!,
    setCookie,
    landed: new URL(String(callback.headers.location), proxy).href,
  };
}

/**
 * A browser context (Playwright's) holding `credentials`' session for the runtime at `url`, signed
 * in as `browserLogin` does: the cookie the proxy set, for the route's path.
 */
export async function browserSession(
  context: BrowserContext,
  proxy: string,
  url: string,
  credentials: { username: string; password: string },
): Promise<void> {
  const { cookie } = await browserLogin(proxy, url, credentials);
  const [name, ...value] = cookie.split("=");
  const { hostname, pathname } = new URL(url);
  const path = pathname.replace(/^(\/r\/[^/]+\/).*$/, "$1");
  await context.addCookies([
    { name: name!, value: value.join("="), domain: hostname, path, httpOnly: true, sameSite: "Lax" },
  ]);
}
