/**
 * The one conformance suite every service module of the runtimes proxy runs (Table 1): each
 * module's test file calls `serviceModuleConformance` with a fixture, and the suite drives the
 * module through the proxy of the tenantry serving the home cluster — a RuntimeService naming the
 * module, its Secret in tenantry-system, a ready Runtime whose endpoint is a real local server,
 * opened by its owner with the session a browser's login gives (the proxy's own guard passed, the
 * module is what each test sees).
 */
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { after, before, describe, it } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { ModuleSettings } from "../../src/runtimes/index.js";
import { type Backend, startBackend } from "../../testing/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { stopSharedBuiltinIdentity } from "../support/identity.js";
import { createRuntime, homeClient, removeObject } from "./cluster-support.js";
import { browserLogin, type RuntimeUser, removeRuntimeUsers, runtimeUser } from "./owner-session.js";
import { API, httpRequest, newToken, openWebSocket, serviceObject } from "./support.js";

export interface ModuleFixture {
  /** The module's name (`RuntimeService.spec.proxyModule.name`). */
  module: string;
  /** Settings the module takes, and others whose effect differs observably. */
  settings: ModuleSettings;
  changedSettings: ModuleSettings;
  /** Settings the module refuses, and the key its refusal names. */
  badSettings: { settings: ModuleSettings; key: string };
  /** Headers of a request (of the runtime's owner) the module lets through. */
  allowed(): Promise<Record<string, string>>;
  /** Headers of requests the module refuses, with the status it answers; absent for a module that refuses none. */
  refused?(): Promise<{ headers: Record<string, string>; status: number }[]>;
  /** Checks what the runtime received from an allowed request (HTTP or upgrade) under either settings. */
  received(headers: IncomingHttpHeaders, which: "settings" | "changedSettings"): void;
  setUp?(): Promise<void>;
  tearDown?(): Promise<void>;
}

function secretOf(name: string, settings: ModuleSettings) {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: "tenantry-system" },
    data: Object.fromEntries(
      Object.entries(settings).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
    ),
  } as KubernetesObject;
}

export function serviceModuleConformance(name: string, fixture: () => ModuleFixture): void {
  describe(`${name} service module conformance`, () => {
    const client = homeClient();
    const namespace = uniqueName("rtmod");
    const service = uniqueName("msvc");
    const secretName = uniqueName("rtmod-settings");
    const token = newToken();
    let f: ModuleFixture;
    let backend: Backend;
    let proxy: string;
    let base: string;
    let owner: RuntimeUser;
    /** The owner's session cookie for this runtime. */
    let session: string;
    const allowed = async () => ({ ...(await f.allowed()), cookie: session });

    const setSecret = async (settings: ModuleSettings) => {
      await client.objects.replace(secretOf(secretName, settings)).catch(async () => {
        await client.objects.create(secretOf(secretName, settings));
      });
    };

    /** An allowed request answers 200 and the runtime received it amended as `which` says. */
    const servedWith = async (which: "settings" | "changedSettings") => {
      const got = await httpRequest(`${base}/echo`, { headers: await allowed() });
      assert.equal(got.status, 200, got.body);
      f.received(got.json<{ headers: IncomingHttpHeaders }>().headers, which);
    };

    before(async () => {
      f = fixture();
      await f.setUp?.();
      proxy = testEnvironment().tenantry.runtimesProxyUrl!;
      assert.ok(proxy, "the test tenantry serves the runtimes proxy");
      base = `${proxy}/r/${token}`;
      backend = await startBackend();
      await client.core.createNamespace({ body: { metadata: { name: namespace } } });
      await setSecret(f.settings);
      await client.objects.create(
        serviceObject(service, { name: f.module, secretRef: { name: secretName } }) as KubernetesObject,
      );
      owner = await runtimeUser("modowner");
      await createRuntime(client, {
        namespace,
        name: "rt",
        token,
        user: owner.user,
        tenant: owner.tenant,
        service,
        endpoint: backend.url,
      });
      session = (await browserLogin(proxy, `${base}/`, { username: owner.user, password: owner.password }))
        .cookie;
      await eventually(() => servedWith("settings"));
    });

    after(async () => {
      await removeObject(client, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
      await removeObject(client, { apiVersion: API, kind: "RuntimeService", metadata: { name: service } });
      await removeObject(client, secretOf(secretName, {}));
      await backend?.close();
      await f?.tearDown?.();
      await removeRuntimeUsers(owner);
      await stopSharedBuiltinIdentity();
    });

    it("is initialised with its Secret: an allowed request reaches the runtime, amended as the settings say", async () => {
      await servedWith("settings");
    });

    it("lets an allowed WebSocket upgrade through, amended the same way", async () => {
      const { ws, greeting } = await openWebSocket(`${base}/ws`, await allowed());
      f.received(greeting.headers, "settings");
      ws.close();
    });

    it("answers refused requests and upgrades itself: nothing reaches the runtime", async (t) => {
      if (!f.refused) return t.skip("this module refuses nothing");
      backend.seen.length = 0;
      for (const { headers, status } of await f.refused()) {
        const asOwner = { ...headers, cookie: session };
        const got = await httpRequest(`${base}/echo`, {
          headers: { ...asOwner, accept: "application/json" },
        });
        assert.equal(got.status, status, got.body);
        await assert.rejects(openWebSocket(`${base}/ws`, asOwner), { status });
      }
      assert.deepEqual(backend.seen, [], "the runtime received nothing");
    });

    it("passes request bodies through unchanged, streamed", async () => {
      const body = randomBytes(8 * 1024 * 1024);
      const got = await httpRequest(`${base}/upload`, {
        method: "POST",
        headers: { ...(await allowed()), "content-type": "application/octet-stream" },
        body,
      });
      assert.equal(got.status, 200, got.body);
      assert.deepEqual(got.json(), {
        bytes: body.length,
        sha256: createHash("sha256").update(body).digest("hex"),
      });
    });

    it("is initialised again when its Secret changes: the new settings take effect", async () => {
      await setSecret(f.changedSettings);
      await eventually(() => servedWith("changedSettings"));
      await setSecret(f.settings);
      await eventually(() => servedWith("settings"));
    });

    it("settings it refuses make the service's routes answer 503 naming the module and the setting, until fixed", async () => {
      await setSecret(f.badSettings.settings);
      const refused = await eventually(async () => {
        const got = await httpRequest(`${base}/echo`, { headers: await allowed() });
        assert.equal(got.status, 503, got.body);
        return got;
      });
      const detail = String(refused.json().detail);
      assert.match(detail, new RegExp(`"${f.module}"`));
      assert.ok(detail.includes(`setting ${f.badSettings.key}`), detail);
      await assert.rejects(openWebSocket(`${base}/ws`, await allowed()), { status: 503 });
      await setSecret(f.settings);
      await eventually(() => servedWith("settings"));
    });

    it("a missing Secret makes the routes answer 503 naming it; recreated, they serve again", async () => {
      await removeObject(client, secretOf(secretName, {}));
      const missing = await eventually(async () => {
        const got = await httpRequest(`${base}/echo`, { headers: await allowed() });
        assert.equal(got.status, 503, got.body);
        return got;
      });
      assert.match(String(missing.json().detail), new RegExp(`Secret tenantry-system/${secretName}`));
      await setSecret(f.settings);
      await eventually(() => servedWith("settings"));
    });
  });
}
