/**
 * The runtimes proxy on the shared clusters: the proxy of the tenantry serving the home cluster,
 * and a second replica started here, both following the Runtime objects through informers. The
 * tests write what the controller would write to a Runtime's status (route token, endpoint, Ready),
 * with the endpoint a real HTTP and WebSocket server on 127.0.0.1.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { Authenticator, type BuiltinIdentity } from "../../src/identity/index.js";
import { LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../../src/localcluster/index.js";
import {
  InformerRouteSource,
  KubeActivityWriter,
  type RuntimesProxy,
  runtimePlacement,
  startRuntimesProxy,
} from "../../src/runtimes/index.js";
import { type Backend, startBackend } from "../../testing/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { podReady, processNodePod, webSocketExchange } from "../support/process-node.js";
import {
  createRuntime,
  homeClient,
  patchSpec,
  readRuntime,
  removeObject,
  writeStatus,
} from "./cluster-support.js";
import { type RuntimeUser, removeRuntimeUsers, runtimeUser } from "./owner-session.js";
import {
  API,
  closed,
  echo,
  httpRequest,
  newToken,
  openWebSocket,
  type RuntimeShape,
  serviceObject,
} from "./support.js";

describe("runtimes proxy on the clusters", () => {
  const client = homeClient();
  const namespace = uniqueName("rtproxy");
  const service = uniqueName("psvc");
  const unknownModuleService = uniqueName("psvc-odd");
  let backend: Backend;
  /** A second replica: same cluster, its own informers; writes last activity every 300 ms. */
  let replica: RuntimesProxy;
  let tenantryProxy: string;
  /** Whose runtimes these are: every request signs in as them (the proxy's default). */
  let owner: RuntimeUser;
  let identity: BuiltinIdentity;
  const shape = (name: string, extra: Partial<RuntimeShape> = {}): RuntimeShape => ({
    namespace,
    name,
    token: newToken(),
    service,
    user: owner.user,
    tenant: owner.tenant,
    ...extra,
  });
  const startReplica = () =>
    startRuntimesProxy({
      source: new InformerRouteSource(client),
      authenticator: new Authenticator({ providers: [identity] }),
      activity: { writer: new KubeActivityWriter(client), intervalMs: 300 },
      registry: new Registry(),
    });

  before(async () => {
    const url = testEnvironment().tenantry.runtimesProxyUrl;
    assert.ok(url, "the test tenantry serves the runtimes proxy");
    tenantryProxy = url;
    identity = await sharedBuiltinIdentity();
    owner = await runtimeUser("pxowner");
    backend = await startBackend();
    await client.core.createNamespace({ body: { metadata: { name: namespace } } });
    await client.objects.create(serviceObject(service) as KubernetesObject);
    await client.objects.create(
      serviceObject(unknownModuleService, { name: "no-such-module" }) as KubernetesObject,
    );
    replica = await startReplica();
  });

  after(async () => {
    await replica?.stop();
    await removeObject(client, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    for (const name of [service, unknownModuleService]) {
      await removeObject(client, { apiVersion: API, kind: "RuntimeService", metadata: { name } });
    }
    await backend?.close();
    await removeRuntimeUsers(owner);
    await stopSharedBuiltinIdentity();
  });

  test("a Runtime's route is served by tenantry's proxy and by a second replica, HTTP and WebSocket", async () => {
    const rt = shape("served", { endpoint: backend.url });
    await createRuntime(client, rt);
    for (const proxy of [tenantryProxy, replica.url]) {
      const r = await eventually(async () => {
        const got = await httpRequest(`${proxy}/r/${rt.token}/api/echo?x=1`, { headers: owner.headers });
        assert.equal(got.status, 200, got.body);
        return got;
      });
      assert.equal(r.json().url, "/api/echo?x=1");
      const { ws, greeting } = await openWebSocket(
        `${proxy}/r/${rt.token}/api/kernels/k/channels`,
        owner.headers,
      );
      assert.equal(greeting.url, "/api/kernels/k/channels");
      assert.equal(await echo(ws, "through the proxy"), "through the proxy");
      ws.close();
      await closed(ws);
    }
  });

  test("a proxy restarted serves every route as soon as it listens", async () => {
    const rt = shape("restart", { endpoint: backend.url });
    await createRuntime(client, rt);
    await eventually(async () =>
      assert.equal(
        (await httpRequest(`${replica.url}/r/${rt.token}/`, { headers: owner.headers })).status,
        200,
      ),
    );
    await replica.stop();
    replica = await startReplica();
    assert.equal(
      (await httpRequest(`${replica.url}/r/${rt.token}/hello`, { headers: owner.headers })).body,
      "hello\n",
    );
  });

  test("an unknown token is 404; a deleted runtime's token is 404 on every replica, and its WebSockets close", async () => {
    assert.equal(
      (await httpRequest(`${tenantryProxy}/r/${newToken()}/`, { headers: owner.headers })).status,
      404,
    );
    const rt = shape("deleted", { endpoint: backend.url });
    await createRuntime(client, rt);
    const { ws } = await eventually(() => openWebSocket(`${replica.url}/r/${rt.token}/ws`, owner.headers));
    await removeObject(client, { apiVersion: API, kind: "Runtime", metadata: { name: rt.name, namespace } });
    await closed(ws);
    for (const proxy of [tenantryProxy, replica.url]) {
      await eventually(async () =>
        assert.equal(
          (await httpRequest(`${proxy}/r/${rt.token}/hello`, { headers: owner.headers })).status,
          404,
        ),
      );
    }
  });

  test("while not Ready, 503 with a page following the start; served once Ready", async () => {
    const rt = shape("starting");
    await createRuntime(client, rt);
    const page = await eventually(async () => {
      const got = await httpRequest(`${tenantryProxy}/r/${rt.token}/lab`, {
        headers: { ...owner.headers, accept: "text/html" },
      });
      assert.equal(got.status, 503);
      return got;
    });
    assert.match(page.body, new RegExp(`/r/${rt.token}/\\.tenantry/progress`));
    const json = await httpRequest(`${tenantryProxy}/r/${rt.token}/api`, {
      headers: { ...owner.headers, accept: "application/json" },
    });
    assert.equal(json.json().phase, "Starting");
    assert.equal(json.headers["retry-after"], "2");

    const progress = fetch(`${tenantryProxy}/r/${rt.token}/.tenantry/progress`, {
      headers: owner.headers,
      signal: AbortSignal.timeout(30_000),
    }).then((r) => r.text());
    await new Promise((resolve) => setTimeout(resolve, 200));
    await writeStatus(client, { ...rt, endpoint: backend.url });
    const events = (await progress).split("\n\n").filter((e) => e.startsWith("data: "));
    assert.ok(events.length >= 1);
    assert.equal(JSON.parse(events.at(-1)!.slice(6)).ready, true);
    assert.equal(
      (await httpRequest(`${tenantryProxy}/r/${rt.token}/hello`, { headers: owner.headers })).body,
      "hello\n",
    );
  });

  test("a stop closes the runtime's WebSockets at once; the next start's token replaces the old one", async () => {
    const rt = shape("stopped", { endpoint: backend.url });
    await createRuntime(client, rt);
    const { ws } = await eventually(() => openWebSocket(`${tenantryProxy}/r/${rt.token}/ws`, owner.headers));
    await patchSpec(client, rt, { desiredState: "Stopped" });
    await closed(ws);
    const stopped = await httpRequest(`${tenantryProxy}/r/${rt.token}/`, {
      headers: { ...owner.headers, accept: "application/json" },
    });
    assert.equal(stopped.status, 503);
    await patchSpec(client, rt, { desiredState: "Running" });
    const resumed = { ...rt, token: newToken() };
    await writeStatus(client, resumed);
    await eventually(async () => {
      assert.equal(
        (await httpRequest(`${tenantryProxy}/r/${resumed.token}/hello`, { headers: owner.headers })).status,
        200,
      );
      assert.equal(
        (await httpRequest(`${tenantryProxy}/r/${rt.token}/hello`, { headers: owner.headers })).status,
        404,
      );
    });
  });

  test("last activity is written to the Runtime's status, and never moved back", async () => {
    const rt = shape("activity", { endpoint: backend.url });
    await createRuntime(client, rt);
    const before = Math.floor(Date.now() / 1000) * 1000;
    await eventually(async () =>
      assert.equal(
        (await httpRequest(`${replica.url}/r/${rt.token}/hello`, { headers: owner.headers })).status,
        200,
      ),
    );
    const written = await eventually(async () => {
      const stamp = (await readRuntime(client, rt)).status?.lastActivity;
      assert.ok(stamp, "status.lastActivity is set");
      return Date.parse(stamp);
    });
    assert.ok(
      written >= before && written <= Date.now(),
      `${new Date(written).toISOString()} is this request's`,
    );
    // Another replica wrote a later time: this one's older stamp does not replace it.
    const later = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");
    await writeStatus(client, rt, { lastActivity: later });
    await eventually(async () => {
      await httpRequest(`${replica.url}/r/${rt.token}/hello`, { headers: owner.headers });
      await replica.flushActivity();
      assert.equal((await readRuntime(client, rt)).status?.lastActivity, later);
    });
    await replica.flushActivity();
    assert.equal((await readRuntime(client, rt)).status?.lastActivity, later);
  });

  test("a runtime pod on the process node is reached at its pod IP, HTTP and WebSocket", async () => {
    const pod = processNodePod("echo", [
      {
        name: "echo",
        image: LOCAL_IMAGES.echo,
        env: [{ name: "PORT", value: "8080" }],
        readinessProbe: { httpGet: { path: "/", port: 8080 }, periodSeconds: 1 },
      },
    ]);
    await client.core.createNamespacedPod({ namespace, body: pod });
    const running = await eventually(
      async () => {
        const got = await client.core.readNamespacedPod({ namespace, name: "echo" });
        assert.ok(podReady(got) && got.status?.podIP, "the echo pod is Ready with a pod IP");
        return got;
      },
      { timeoutMs: 90_000 },
    );
    // As the controller writes it (contract rule 3): the pod IP, the service serving at its root.
    const rt = shape("on-a-pod", { endpoint: `http://${running.status!.podIP}:8080` });
    await createRuntime(client, rt);
    const answer = await eventually(async () => {
      const got = await httpRequest(`${tenantryProxy}/r/${rt.token}/notebooks?x=1`, {
        headers: owner.headers,
      });
      assert.equal(got.status, 200, got.body);
      return got;
    });
    assert.match(answer.body, /^Request served by echo\n\nGET \/notebooks\?x=1 HTTP\/1\.1/);
    const messages = await webSocketExchange(
      `${tenantryProxy.replace(/^http/, "ws")}/r/${rt.token}/ws`,
      ["one"],
      {
        done: (received) => received.length === 2,
        headers: owner.headers,
      },
    );
    assert.deepEqual(messages, ["Request served by echo", "one"]);
  });

  test("a service naming a module the proxy does not know answers 503 naming it", async () => {
    const rt = shape("odd", { endpoint: backend.url, service: unknownModuleService });
    await createRuntime(client, rt);
    const seen = backend.seen.length;
    const r = await eventually(async () => {
      const got = await httpRequest(`${tenantryProxy}/r/${rt.token}/`, { headers: owner.headers });
      assert.equal(got.status, 503);
      return got;
    });
    assert.match(String(r.json().detail), /service module "no-such-module" .* not known/);
    assert.equal(backend.seen.length, seen, "nothing reached the runtime");
  });
});

describe("the Admin API through the runtimes proxy", () => {
  const client = homeClient();
  const tenant = uniqueName("rtp");
  const service = uniqueName("psvc-admin");
  const user = uniqueName("pat");
  let identity: BuiltinIdentity;
  let token: string;

  before(async () => {
    identity = await sharedBuiltinIdentity();
    // A real runtime: the generic plugin's echo server on the process node, started by the controller.
    const echo = serviceObject(service);
    echo.spec = {
      ...echo.spec,
      defaults: { image: LOCAL_IMAGES.echo, port: 8080 },
      pods: PROCESS_NODE_PLACEMENT,
    };
    await client.objects.create(echo as KubernetesObject);
    await identity.createUser({ name: user, password: "proxy-secret-1", tenant, tenantAdmin: false });
    token = (await identity.login({ username: user, password: "proxy-secret-1" })).token;
  });

  after(async () => {
    await removeObject(client, { apiVersion: API, kind: "RuntimeService", metadata: { name: service } });
    await identity?.deleteUser(user).catch(() => {});
    await removeObject(client, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: runtimePlacement({ tenant, user, service, instance: "x" }).namespace },
    });
    await removeObject(client, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await stopSharedBuiltinIdentity();
  });

  test("every path outside /r/ is the Admin API's, and the runtime URLs it reports point at the proxy", async () => {
    const proxy = testEnvironment().tenantry.runtimesProxyUrl!;
    const openapi = await httpRequest(`${proxy}/services/openapi.json`);
    assert.equal(openapi.status, 200);
    assert.ok(openapi.json().openapi);
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const base = `${proxy}/services/${user}/${service}/one`;
    const started = await eventually(async () => {
      const got = await httpRequest(base, { method: "POST", headers, body: "{}" });
      assert.equal(got.status, 202, got.body);
      return got;
    });
    assert.equal(started.json().progressUrl, `${base}/progress`);
    // The progress stream, through the proxy, ends with the runtime's URL: the proxy's, by token.
    const events = await fetch(`${base}/progress`, { headers, signal: AbortSignal.timeout(120_000) }).then(
      (r) => r.text(),
    );
    const url = new RegExp(`"url":"(${proxy}/r/[A-Za-z0-9_-]{43}/)"`).exec(events)?.[1];
    assert.ok(url, events);
    const status = await httpRequest(base, { headers });
    assert.equal(status.status, 200, status.body);
    assert.equal(status.json().url, url);
    const served = await httpRequest(`${url}hello`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(served.status, 200, served.body);
    assert.match(served.body, /^Request served by \S+\n\nGET \/hello HTTP\/1\.1/);
    // The progress of a runtime already ready is one event, and the stream ends.
    const again = await fetch(`${base}/progress`, { headers, signal: AbortSignal.timeout(30_000) });
    assert.match(await again.text(), /"ready":true/);
  });
});
