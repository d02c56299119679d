/**
 * A KubeSpawner-style runtime: JupyterHub's own single-user server (`jupyterhub-singleuser` of
 * jupyterhub 6.1.1 from PyPI) on the process node, given KubeSpawner's `JUPYTERHUB_*` environment
 * by tenantry (RuntimeService `spec.jupyterhub`), talking to tenantry's JupyterHub API: it serves
 * under its prefix through the proxy to its owner's token and refuses another user's (a kernel's
 * WebSocket too), sends a browser signed in at the proxy to the Hub's authorize endpoint under its
 * route, logs the owner in through OAuth (authorize → code → token → its cookie; JupyterLab in
 * Chromium), and reports its activity. The OAuth endpoints refuse what JupyterHub refuses.
 */
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { V1Secret } from "@kubernetes/client-node";
import { request } from "undici";
import { LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../../src/localcluster/index.js";
import type { Runtime, RuntimeServiceSpec } from "../../src/runtimes/index.js";
import { launchBrowser } from "../dashboard/support.js";
import { testEnvironment, testKubeConfig } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { httpsJson } from "../support/https-json.js";
import { runCell } from "./jupyter-kernel.js";
import { browserLogin, browserSession } from "./owner-session.js";
import { ProcessNodeRuntimes, type TestUser } from "./process-node-support.js";

const proxy = () => testEnvironment().tenantry.runtimesProxyUrl!;
/** Where the browser's picture of JupyterLab goes (beside the test run's logs unless told). */
const SCREENSHOTS = process.env.TENANTRY_TEST_SCREENSHOTS ?? join(testEnvironment().dir, "screenshots");

/** KubeSpawner's usual command, through the generic plugin. */
function singleUserServiceSpec(): RuntimeServiceSpec {
  return {
    plugin: { builtin: "generic" },
    defaults: {
      image: LOCAL_IMAGES.jupyter,
      command: ["jupyterhub-singleuser"],
      port: 8888,
      memory: "1Gi",
      servesUnderBasePath: true,
      readinessProbe: "tcp",
      // Seconds between activity reports (JupyterHub's default is 300).
      env: { JUPYTERHUB_ACTIVITY_INTERVAL: "3" },
    },
    pods: PROCESS_NODE_PLACEMENT,
    jupyterhub: true,
    startTimeoutSeconds: 900,
  } as RuntimeServiceSpec;
}

const cookiesOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((c) => c.split(";")[0]!)
    .join("; ");

/** A Secret of the home cluster read with `token` (an identity token) through kube-apiserver. */
function readSecretAs(token: string, namespace: string, name: string) {
  const cluster = testKubeConfig("home").getCurrentCluster()!;
  return httpsJson(`${cluster.server}/api/v1/namespaces/${namespace}/secrets/${name}`, {
    ca: Buffer.from(cluster.caData!, "base64").toString("utf8"),
    headers: { authorization: `Bearer ${token}` },
  });
}

describe("a KubeSpawner-style runtime (jupyterhub-singleuser)", () => {
  const runtimes = new ProcessNodeRuntimes();
  let alice: TestUser;
  let mallory: TestUser;
  /** A user alice shares her server with. */
  let friend: TestUser;
  let service: string;
  let url: string;
  let runtime: Runtime;
  let serverToken: string;
  const clientId = () => `jupyterhub-user-${alice.name}-lab`;

  before(async () => {
    [alice, mallory, friend] = await Promise.all([
      runtimes.user("sualice"),
      runtimes.user("sumallory"),
      runtimes.user("sufriend"),
    ]);
    service = await runtimes.service("singleuser", singleUserServiceSpec());
    const started = await runtimes.start(alice, service, "lab", { timeoutMs: 900_000 });
    url = started.body.url as string;
    runtime = await runtimes.read(alice, service, "lab");
    const secret = (await runtimes.home.core.readNamespacedSecret({
      name: `${runtime.metadata!.name}-jupyterhub`,
      namespace: runtime.metadata!.namespace!,
    })) as V1Secret;
    serverToken = Buffer.from(secret.data!.token!, "base64").toString("utf8");
  });
  after(() => runtimes.cleanUp());

  test("its API token has the server role's scopes, and only its owner (and its pod) read the Secret", async () => {
    const me = await fetch(`${proxy()}/hub/api/user`, { headers: { authorization: `token ${serverToken}` } });
    assert.equal(me.status, 200);
    assert.ok(me.headers.get("x-jupyterhub-version"), "single-user servers read the Hub's version here");
    const model = (await me.json()) as { name: string; scopes: string[] };
    assert.equal(model.name, alice.name);
    // Expanded, as JupyterHub lists them: users:activity holds read:users:activity.
    assert.deepEqual(model.scopes, [
      `access:servers!server=${alice.name}/lab`,
      `read:users:activity!user=${alice.name}`,
      `users:activity!user=${alice.name}`,
    ]);
    const { namespace, name } = runtime.metadata as { namespace: string; name: string };
    assert.equal((await readSecretAs(alice.token, namespace, `${name}-jupyterhub`)).status, 200);
    assert.equal((await readSecretAs(mallory.token, namespace, `${name}-jupyterhub`)).status, 403);
  });

  test("serves /api/status under its prefix to its owner's token and refuses another user's", async () => {
    const ok = await fetch(`${url}api/status`, { headers: { authorization: `token ${alice.token}` } });
    assert.equal(ok.status, 200, await ok.clone().text());
    assert.ok(((await ok.json()) as { started: string }).started);
    const hubToken = await fetch(`${url}api/status`, { headers: { authorization: `token ${serverToken}` } });
    assert.equal(hubToken.status, 200);
    const other = await fetch(`${url}api/status`, { headers: { authorization: `token ${mallory.token}` } });
    assert.equal(other.status, 403);
    // ?token= is no credential at the proxy (nor, since JupyterHub 5, at the server on pages and API
    // calls); a kernel's channels, past the proxy with the owner's header, run a cell.
    const inUrl = await fetch(`${url}api/status?token=${alice.token}`);
    assert.equal(inUrl.status, 401);
    const owner = { Authorization: `token ${alice.token}` };
    assert.equal(await runCell(url, alice.token, "6 * 7", owner), "42");
  });

  test("reports its activity: the server's last_activity advances in the Hub's user model", async () => {
    const before = new Date();
    // Straight to the pod, past the proxy: only the server's own report can tell the Hub of it.
    const endpoint = runtime.status!.endpoint!.url!.replace(/\/?$/, "/");
    const created = await fetch(`${endpoint}api/contents`, {
      method: "POST",
      headers: { authorization: `token ${serverToken}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "notebook" }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    await eventually(
      async () => {
        const res = await fetch(`${proxy()}/hub/api/users/${alice.name}`, {
          headers: { authorization: `token ${alice.token}` },
        });
        const user = (await res.json()) as { servers: Record<string, { last_activity: string | null }> };
        const last = Date.parse(user.servers.lab?.last_activity ?? "");
        assert.ok(last >= Math.floor(before.getTime() / 1000) * 1000, JSON.stringify(user.servers.lab));
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
  });

  /**
   * A browser signed in at the proxy as `who` meets the server's own hub-auth and goes through
   * OAuth: /lab → the Hub's authorize under the route (`beforeGrant` may try it first) → a code →
   * the server's callback → the server's cookie. The cookies it ends with, the code and the callback.
   */
  async function serverLogin(who: TestUser, beforeGrant?: (authorize: URL) => Promise<void>) {
    const signedIn = await browserLogin(proxy(), `${url}lab`, { username: who.name, password: who.password });
    const routeSession = signedIn.cookie;
    // Until the proxy's informer holds a new grant, a granted user may still be refused.
    const lab = await eventually(async () => {
      const r = await fetch(`${url}lab`, { redirect: "manual", headers: { cookie: routeSession } });
      assert.equal(r.status, 302, await r.clone().text());
      return r;
    });
    const authorize = new URL(lab.headers.get("location")!, proxy());
    assert.equal(authorize.pathname, `${new URL(url).pathname}.tenantry/hub/api/oauth2/authorize`);
    assert.equal(authorize.searchParams.get("client_id"), clientId());
    assert.equal(authorize.searchParams.get("code_challenge_method"), "S256");
    const stateCookie = `${cookiesOf(lab)}; ${routeSession}`;
    await beforeGrant?.(authorize);
    const granted = await eventually(async () => {
      const r = await fetch(authorize, { redirect: "manual", headers: { cookie: routeSession } });
      assert.equal(r.status, 302, await r.clone().text());
      return r;
    });
    const callback = new URL(granted.headers.get("location")!, proxy());
    assert.equal(callback.pathname, `${new URL(url).pathname}oauth_callback`);
    const code = callback.searchParams.get("code")!;
    const done = await fetch(callback, { redirect: "manual", headers: { cookie: stateCookie } });
    assert.equal(done.status, 302, await done.clone().text());
    const serverCookie = cookiesOf(done);
    assert.match(serverCookie, new RegExp(`jupyterhub-user-${alice.name}-lab=`));
    return { routeSession, session: `${serverCookie}; ${routeSession}`, code, callback };
  }

  /** `path` of the server opened as a browser opens a page (fetch() would say Sec-Fetch-Mode: cors, which needs an XSRF token). */
  async function openAsPage(path: string, cookie: string) {
    const r = await request(`${url}${path}`, { headers: { cookie, "sec-fetch-mode": "navigate" } });
    return { status: r.statusCode, body: await r.body.text() };
  }

  /** The Hub's authorize asked directly (not under the route) with `token`, for alice's server. */
  const authorizeDirectly = (token: string) =>
    fetch(
      `${proxy()}/hub/api/oauth2/authorize?${new URLSearchParams({ client_id: clientId(), response_type: "code" })}`,
      { redirect: "manual", headers: { authorization: `token ${token}` } },
    );

  test("logs a browser in through OAuth: authorize → code → token → the server's cookie", async () => {
    const page = await fetch(`${url}api/contents`, { redirect: "manual" });
    assert.equal(page.status, 401, "an API call without credentials is refused at the proxy");
    // Signed in at the proxy, the browser meets the server's own hub-auth.
    const { routeSession, session, code, callback } = await serverLogin(alice, async (authorize) => {
      // Nobody logged in: no code.
      const anonymous = await fetch(authorize, { redirect: "manual" });
      assert.equal(anonymous.status, 401);
      // Another user may not open alice's server.
      const refused = await fetch(authorize, {
        redirect: "manual",
        headers: { authorization: `token ${mallory.token}` },
      });
      assert.equal(refused.status, 403);
    });
    const opened = await openAsPage("lab", session);
    assert.equal(opened.status, 200, "the cookies alone open JupyterLab");
    assert.match(opened.body, /JupyterLab/);
    assert.equal((await openAsPage("api/status", session)).status, 200);
    // The proxy's session alone is not the server's: it asks for its own.
    assert.equal((await openAsPage("api/status", routeSession)).status, 403);
    // The code was good once.
    const again = await fetch(`${proxy()}/hub/api/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        client_id: clientId(),
        client_secret: serverToken,
        grant_type: "authorization_code",
        code,
        redirect_uri: callback.pathname,
      }),
    });
    assert.equal(again.status, 400);
    assert.equal(((await again.json()) as { error: string }).error, "invalid_grant");
  });

  test("a user the server is shared with (spec.access) logs in through its hub-auth and opens /lab; not once the share is taken back", async () => {
    const share = (body: object) =>
      fetch(`${proxy()}/services/${alice.name}/${service}/lab/access`, {
        method: "PUT",
        headers: { authorization: `Bearer ${alice.token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    // Not shared: the Hub refuses them a code for alice's server, as it refuses mallory.
    assert.equal((await authorizeDirectly(friend.token)).status, 403);
    const shared = await share({ users: [friend.name] });
    assert.equal(shared.status, 200, await shared.clone().text());
    const { session } = await serverLogin(friend);
    const opened = await openAsPage("lab", session);
    assert.equal(opened.status, 200, "the shared user's cookies open JupyterLab");
    assert.match(opened.body, /JupyterLab/);
    assert.equal((await openAsPage("api/status", session)).status, 200);
    // Whom it is not shared with: no code from the Hub, whichever way they ask.
    assert.equal((await authorizeDirectly(mallory.token)).status, 403);
    const revoked = await share({});
    assert.equal(revoked.status, 200, await revoked.clone().text());
    await eventually(async () => assert.equal((await authorizeDirectly(friend.token)).status, 403));
    // Nor may they come in at the proxy any more.
    const atProxy = await fetch(`${url}api/status`, { headers: { authorization: `token ${friend.token}` } });
    assert.equal(atProxy.status, 403);
  });

  test("the OAuth endpoints refuse an unknown client, a redirect URI not the client's and a wrong secret", async () => {
    const authorize = (params: Record<string, string>) =>
      fetch(`${proxy()}/hub/api/oauth2/authorize?${new URLSearchParams(params)}`, {
        redirect: "manual",
        headers: { authorization: `token ${alice.token}` },
      });
    const unknown = await authorize({ client_id: "jupyterhub-user-nobody", response_type: "code" });
    assert.equal(unknown.status, 400);
    assert.match(((await unknown.json()) as { message: string }).message, /client_id/);
    const elsewhere = await authorize({
      client_id: clientId(),
      response_type: "code",
      redirect_uri: "https://attacker.example/steal",
    });
    assert.equal(elsewhere.status, 400, "never redirected to a URI the client did not register");
    assert.match(((await elsewhere.json()) as { message: string }).message, /redirect/i);
    const wrongSecret = await fetch(`${proxy()}/hub/api/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        client_id: clientId(),
        client_secret: alice.token,
        grant_type: "authorization_code",
        code: "x",
      }),
    });
    assert.equal(wrongSecret.status, 401);
    assert.equal(((await wrongSecret.json()) as { error: string }).error, "invalid_client");
  });

  test("/lab in Chromium: the owner's session logs in through OAuth, JupyterLab's launcher renders and a notebook runs a cell", async () => {
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await browserSession(context, proxy(), `${url}lab`, { username: alice.name, password: alice.password });
      const page = await context.newPage();
      // What the page met on the way, told when it does not get there.
      const seen: string[] = [];
      page.on(
        "response",
        (r) => r.status() >= 400 && seen.push(`${r.status()} ${r.request().method()} ${r.url()}`),
      );
      page.on("websocket", (ws) => {
        seen.push(`websocket ${ws.url()}`);
        ws.on("socketerror", (e) => seen.push(`websocket error ${e}`));
        ws.on("close", () => seen.push(`websocket closed ${ws.url()}`));
      });
      page.on("console", (m) => m.type() === "error" && seen.push(`console: ${m.text()}`));
      await page.goto(`${url}lab`);
      // The launcher's cards: a notebook with the Python kernel.
      const card = page.locator(".jp-LauncherCard", { hasText: "Python 3 (ipykernel)" }).first();
      await card.waitFor({ timeout: 120_000 });
      assert.equal(new URL(page.url()).pathname, `${new URL(url).pathname}lab`);
      assert.match(await page.title(), /JupyterLab/);
      // A notebook opened from the launcher runs a cell on its kernel, over the WebSocket, with the cookie alone.
      await card.click();
      // Its kernel connected (a cell run before would find no kernel).
      await page
        .locator("#jp-main-statusbar", { hasText: "Python 3 (ipykernel) | Idle" })
        .waitFor({ timeout: 120_000 });
      await page.locator(".jp-Notebook .jp-Cell .cm-content").first().click();
      await page.keyboard.type("6 * 7");
      await page.keyboard.press("Shift+Enter");
      mkdirSync(SCREENSHOTS, { recursive: true });
      try {
        await page.locator(".jp-OutputArea-output", { hasText: "42" }).first().waitFor({ timeout: 120_000 });
      } catch (err) {
        throw new Error(`${(err as Error).message}\nthe page met:\n${seen.join("\n")}`);
      } finally {
        await page.screenshot({ path: join(SCREENSHOTS, "jupyterlab-singleuser.png") });
      }
    } finally {
      await browser.close();
    }
  });

  test("deleting the runtime revokes its token", async () => {
    await runtimes.home.objects.delete(runtime as never);
    await eventually(
      async () => {
        const me = await fetch(`${proxy()}/hub/api/user`, {
          headers: { authorization: `token ${serverToken}` },
        });
        assert.equal(me.status, 403);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
  });
});
