/**
 * The runtime `tenantry up` ends its demo with, on the shared clusters: the demo's RuntimeService
 * (a real Jupyter Server through the example plugin on the process node, or the echo server where
 * Python 3 with venv is missing) becomes Ready, and a runtime of it started through the runtimes
 * proxy the way `tenantry up` and `tenantry runtime start` start it answers through that proxy:
 * JupyterLab loads and a Python kernel runs a cell over its WebSocket.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { type DemoRuntimeService, installDemoRuntimeService, jupyterTokenOf } from "../../src/app/demo.js";
import { startRuntime } from "../../src/cli/runtime.js";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import type { Runtime } from "../../src/runtimes/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { RUNTIMES_API as API, clusterClient, removeObject } from "../support/runtimes.js";
import { runCell } from "./jupyter-kernel.js";
import { browserLogin } from "./owner-session.js";

describe("the demo's runtime", () => {
  const home = clusterClient();
  const tenant = uniqueName("demo-rt");
  const user = uniqueName("dana");
  const password = "demo-runtime-secret-1";
  let identity: BuiltinIdentity;
  let service: DemoRuntimeService | undefined;

  before(async () => {
    identity = await sharedBuiltinIdentity();
    await identity.createUser({ name: user, password, tenant, tenantAdmin: true });
  });

  after(async () => {
    for (const runtime of (await home.objects.list(API, "Runtime")).items as Runtime[]) {
      if (runtime.spec.user === user) await removeObject(home, runtime);
    }
    if (service) {
      await removeObject(home, { apiVersion: API, kind: "RuntimeService", metadata: { name: service.name } });
    }
    await removeObject(home, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await identity?.deleteUser(user).catch(() => {});
    await stopSharedBuiltinIdentity();
  });

  test("is Ready, starts through the proxy and answers there", async () => {
    service = await installDemoRuntimeService(home);
    const proxyUrl = testEnvironment().tenantry.runtimesProxyUrl;
    assert.ok(proxyUrl, "the test tenantry runs the runtimes proxy");
    const { token } = await identity.login({ username: user, password });
    const status = await startRuntime(
      { url: proxyUrl, token, user },
      service.name,
      "lab",
      {},
      {
        wait: true,
        quiet: true,
      },
    );
    assert.equal(status.phase, "Running", JSON.stringify(status));
    assert.ok(status.url?.startsWith(`${proxyUrl}/r/`), status.url);
    // As `tenantry up` prints it: a browser opening the URL signs in with the user's password first.
    const anonymous = await fetch(`${status.url}api`, { headers: { accept: "application/json" } });
    assert.equal(anonymous.status, 401, "the URL alone opens nothing");
    if (service.kind === "jupyter") {
      const jupyterToken = await jupyterTokenOf(home, status.namespace, status.name);
      const printed = `${status.url}lab?token=${jupyterToken}`;
      const { cookie, landed } = await browserLogin(proxyUrl, printed, { username: user, password });
      assert.equal(landed, printed, "signed in, the browser is back on the printed URL");
      const version = await fetch(`${status.url}api`, { headers: { cookie } });
      assert.equal(version.status, 200);
      assert.match(((await version.json()) as { version: string }).version, /^\d+\.\d+/);
      const contents = await fetch(`${status.url}api/contents`, {
        headers: { Authorization: `token ${jupyterToken}`, cookie },
      });
      assert.equal(contents.status, 200, "the token printed for the demo logs in");
      const curl = await fetch(`${status.url}api/contents?token=${jupyterToken}`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      assert.equal(curl.status, 200, "curl with the owner's token and the Jupyter token in the query");
      // As in the real notebook images: JupyterLab, and a Python kernel that runs a cell.
      const lab = await fetch(landed, { headers: { cookie } });
      assert.equal(lab.status, 200);
      assert.match(await lab.text(), /JupyterLab/);
      assert.equal(await runCell(status.url!, jupyterToken, "1 + 1", { cookie }), "2");
    } else {
      const echoed = await fetch(`${status.url}hello`, { headers: { Authorization: `Bearer ${token}` } });
      assert.equal(echoed.status, 200);
      assert.match(await echoed.text(), /GET \/hello/);
    }
    // The demo's service is applied again at every `tenantry up`: a second apply changes nothing.
    const again = await installDemoRuntimeService(home);
    assert.equal(again.name, service.name);
    const object = (await home.objects.read({
      apiVersion: API,
      kind: "RuntimeService",
      metadata: { name: service.name },
    } as KubernetesObject & { metadata: { name: string } })) as KubernetesObject;
    assert.equal(object.metadata?.generation, 1);
  });
});
