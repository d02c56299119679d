/**
 * The runtimes proxy's data path against a real local HTTP and WebSocket backend, with routes
 * given in code (StaticRouteSource): forwarding, header handling, streaming both ways without
 * buffering, refusals (404, 502, 504, 503 with live progress), connections closed when a runtime
 * stops, and the Admin API behind every other path. The same proxy fed by informers is tested
 * against the clusters in proxy.test.ts.
 */
import assert from "node:assert/strict";
import { createServer as createNetServer, type Server as NetServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Registry } from "prom-client";
import { RuntimesProxy, StaticRouteSource } from "../../src/runtimes/index.js";
import { type Backend, startBackend } from "../../testing/index.js";
import { eventually } from "../support/eventually.js";
import {
  closed,
  echo,
  httpRequest,
  newToken,
  openWebSocket,
  runtimeObject,
  serviceObject,
} from "./support.js";

describe("runtimes proxy data path", () => {
  let backend: Backend;
  let admin: Backend;
  let silent: NetServer;
  let silentPort: number;
  const source = new StaticRouteSource();
  const registry = new Registry();
  let proxy: RuntimesProxy;
  const ready = newToken();
  const underBase = newToken();
  const starting = newToken();

  before(async () => {
    backend = await startBackend();
    admin = await startBackend();
    // Accepts connections and never answers: a runtime that hangs.
    silent = createNetServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    silentPort = (silent.address() as { port: number }).port;
    // The data path alone: a service serving anyone with the URL (who gets in is proxy-auth.test.ts's).
    source.putService(serviceObject("notebook", undefined, { routeAccess: "Public" }));
    source.putRuntime(runtimeObject({ name: "ready", token: ready, endpoint: backend.url }));
    // A service that serves under its base path (Jupyter's base_url): the path is kept.
    source.putRuntime(
      runtimeObject({ name: "based", token: underBase, endpoint: `${backend.url}/r/${underBase}` }),
    );
    source.putRuntime(runtimeObject({ name: "starting", token: starting }));
    proxy = new RuntimesProxy({
      source,
      admin: { url: admin.url },
      registry,
      backends: { headersTimeoutMs: 1000, connectTimeoutMs: 1000 },
    });
    await proxy.start();
  });

  after(async () => {
    await proxy.stop();
    await backend.close();
    await admin.close();
    silent.close();
  });

  test("forwards /r/<token><rest> to the endpoint with the rest, hop-by-hop headers dropped, X-Forwarded-* set", async () => {
    const r = await httpRequest(`${proxy.url}/r/${ready}/api/echo?x=1`, {
      headers: {
        connection: "keep-alive, x-drop-me",
        "x-drop-me": "1",
        "x-keep": "2",
        "x-forwarded-for": "6.6.6.6",
      },
    });
    assert.equal(r.status, 200);
    const seen = r.json<{ url: string; headers: Record<string, string> }>();
    assert.equal(seen.url, "/api/echo?x=1");
    assert.equal(seen.headers["x-keep"], "2");
    assert.equal(seen.headers["x-drop-me"], undefined);
    assert.equal(
      seen.headers["x-forwarded-for"],
      "127.0.0.1",
      "a caller's own X-Forwarded-For is not trusted",
    );
    assert.equal(seen.headers["x-forwarded-proto"], "http");
    assert.equal(seen.headers.host, new URL(proxy.url).host, "Host is the caller's");
    assert.equal(seen.headers["x-forwarded-host"], new URL(proxy.url).host);
    assert.deepEqual(r.headers["set-cookie"], ["a=1", "b=2"], "repeated response headers stay separate");

    const root = await httpRequest(`${proxy.url}/r/${ready}`);
    assert.equal(root.json<{ url: string }>().url, "/");
    const query = await httpRequest(`${proxy.url}/r/${ready}?q=1`);
    assert.equal(query.json<{ url: string }>().url, "/?q=1");
    const based = await httpRequest(`${proxy.url}/r/${underBase}/lab?q=1`);
    assert.equal(based.json<{ url: string }>().url, `/r/${underBase}/lab?q=1`);
  });

  test("a service not declared public serves nobody without credentials; the proxy's own cookies never reach a runtime", async () => {
    source.putService(serviceObject("guarded"));
    const guarded = newToken();
    source.putRuntime(
      runtimeObject({ name: "guarded", token: guarded, endpoint: backend.url, service: "guarded" }),
    );
    const refused = await httpRequest(`${proxy.url}/r/${guarded}/echo`, {
      headers: { accept: "application/json" },
    });
    assert.equal(refused.status, 401);
    await assert.rejects(openWebSocket(`${proxy.url}/r/${guarded}/ws`), { status: 401 });
    const open = await httpRequest(`${proxy.url}/r/${ready}/echo`, {
      headers: { cookie: "a=1; tenantry-runtime-session=x; tenantry-runtime-state=y" },
    });
    assert.equal(open.json<{ headers: Record<string, string> }>().headers.cookie, "a=1");
  });

  test("backend status codes pass through", async () => {
    assert.equal((await httpRequest(`${proxy.url}/r/${ready}/status/418`)).status, 418);
    const head = await httpRequest(`${proxy.url}/r/${ready}/hello`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.body, "");
  });

  test("an unknown, malformed or deleted token is 404, alike", async () => {
    for (const path of [`/r/${newToken()}/`, "/r/short/", `/r/${ready}x/`, "/r/", "/r//x"]) {
      const r = await httpRequest(`${proxy.url}${path}`);
      assert.equal(r.status, 404, path);
      assert.equal(r.json().detail, "no runtime is served at this address");
    }
    const gone = newToken();
    source.putRuntime(runtimeObject({ name: "gone", token: gone, endpoint: backend.url }));
    assert.equal((await httpRequest(`${proxy.url}/r/${gone}/hello`)).status, 200);
    source.deleteRuntime("rt-test", "gone");
    assert.equal((await httpRequest(`${proxy.url}/r/${gone}/hello`)).status, 404);
  });

  test("a runtime that is not ready answers 503: a live page for browsers, a problem with Retry-After for JSON clients", async () => {
    const page = await httpRequest(`${proxy.url}/r/${starting}/lab`, { headers: { accept: "text/html" } });
    assert.equal(page.status, 503);
    assert.match(String(page.headers["content-type"]), /text\/html/);
    assert.match(page.body, new RegExp(`/r/${starting}/\\.tenantry/progress`));
    assert.match(page.body, /Scheduled: InProgress/);
    assert.equal(page.headers["retry-after"], "2");

    const json = await httpRequest(`${proxy.url}/r/${starting}/api`, {
      headers: { accept: "application/json" },
    });
    assert.equal(json.status, 503);
    assert.equal(json.headers["content-type"], "application/problem+json");
    assert.equal(json.headers["retry-after"], "2");
    const problem = json.json<{ phase: string; progress: number }>();
    assert.equal(problem.phase, "Starting");
    assert.equal(problem.progress, 40);

    const failed = newToken();
    source.putRuntime(
      runtimeObject({
        name: "failed",
        token: failed,
        phase: "Failed",
        reason: "ImagePullFailed",
        message: "no such image",
      }),
    );
    const f = await httpRequest(`${proxy.url}/r/${failed}/`, { headers: { accept: "application/json" } });
    assert.equal(f.status, 503);
    assert.equal(f.json().reason, "ImagePullFailed");
    assert.equal(f.headers["retry-after"], undefined, "a failed runtime will not become ready by waiting");
    assert.equal(backend.seen.filter((s) => s.url === "/api").length, 0, "nothing reached a backend");
  });

  test("the progress stream follows the start and ends with ready; the runtime is then served", async () => {
    const token = newToken();
    source.putRuntime(runtimeObject({ name: "coming", token }));
    const res = await fetch(`${proxy.url}/r/${token}/.tenantry/progress`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.match(first, /"phase":"Starting"/);
    source.putRuntime(runtimeObject({ name: "coming", token, endpoint: backend.url }));
    let rest = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    assert.match(rest, /"ready":true/);
    assert.equal((await httpRequest(`${proxy.url}/r/${token}/hello`)).body, "hello\n");
  });

  test("a progress stream of a token that goes away ends with a gone event", async () => {
    const token = newToken();
    source.putRuntime(runtimeObject({ name: "vanishing", token }));
    const res = await fetch(`${proxy.url}/r/${token}/.tenantry/progress`);
    const text = res.text();
    await sleep(50);
    source.deleteRuntime("rt-test", "vanishing");
    assert.match(await text, /event: gone/);
  });

  test("large bodies stream both ways, and a side that stops reading stops the other (the proxy holds no body)", async () => {
    const size = 200 * 1024 * 1024;
    // Loopback socket buffers and stream high-water marks on two hops hold a few MiB; a proxy
    // that buffered bodies would take all 200 MiB from the fast side.
    const inFlightLimit = 64 * 1024 * 1024;

    // Download: the caller reads one chunk and stops; the backend must stop writing soon after.
    const before = backend.downloaded();
    const res = await fetch(`${proxy.url}/r/${ready}/download?bytes=${size}`);
    assert.equal(res.headers.get("content-length"), String(size));
    const reader = res.body!.getReader();
    let received = (await reader.read()).value!.length;
    const written = await settled(() => backend.downloaded() - before);
    assert.ok(
      written < inFlightLimit,
      `the backend wrote ${mib(written)} to a caller that read ${mib(received)}`,
    );
    for (let next = await reader.read(); !next.done; next = await reader.read())
      received += next.value.length;
    assert.equal(received, size);

    // Upload: the backend reads nothing until released; the caller's stream must stop being pulled.
    const chunk = new Uint8Array(256 * 1024).fill(0x62);
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= size) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const up = fetch(`${proxy.url}/r/${ready}/upload?hold=1`, {
      method: "POST",
      body,
      duplex: "half",
    } as RequestInit);
    const pulled = await settled(() => sent);
    assert.ok(
      pulled < inFlightLimit,
      `${mib(pulled)} was taken from the caller while the backend read nothing`,
    );
    backend.releaseUploads();
    const answer = (await (await up).json()) as { bytes: number };
    assert.equal(answer.bytes, size);
  });

  test("server-sent events arrive as they are sent, and a caller going away ends the backend request", async () => {
    const controller = new AbortController();
    const res = await fetch(`${proxy.url}/r/${ready}/events?count=1000&interval=20`, {
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.match(first, /^data: 0/, "the first event came before the stream ended");
    assert.equal(backend.openStreams(), 1);
    controller.abort();
    await eventually(() => assert.equal(backend.openStreams(), 0, "the backend's stream was closed"));
  });

  test("a backend that refuses is 502, one that does not answer is 504", async () => {
    const refused = newToken();
    const hanging = newToken();
    const closedServer = createNetServer();
    await new Promise<void>((resolve) => closedServer.listen(0, "127.0.0.1", resolve));
    const closedPort = (closedServer.address() as { port: number }).port;
    await new Promise<void>((resolve) => closedServer.close(() => resolve()));
    source.putRuntime(
      runtimeObject({ name: "refused", token: refused, endpoint: `http://127.0.0.1:${closedPort}` }),
    );
    source.putRuntime(
      runtimeObject({ name: "hanging", token: hanging, endpoint: `http://127.0.0.1:${silentPort}` }),
    );
    const r = await httpRequest(`${proxy.url}/r/${refused}/`);
    assert.equal(r.status, 502);
    assert.equal(r.headers["content-type"], "application/problem+json");
    assert.match(r.json().detail as string, /ECONNREFUSED|could not be reached/);
    const h = await httpRequest(`${proxy.url}/r/${hanging}/`);
    assert.equal(h.status, 504);
  });

  test("WebSocket: upgraded through, messages echoed, X-Forwarded-* set, closed together", async () => {
    const { ws, greeting } = await openWebSocket(`${proxy.url}/r/${ready}/api/kernels/1/channels?session=s`, {
      "x-keep": "1",
    });
    assert.equal(greeting.url, "/api/kernels/1/channels?session=s");
    assert.equal(greeting.headers["x-keep"], "1");
    assert.equal(greeting.headers["x-forwarded-for"], "127.0.0.1");
    assert.equal(await echo(ws, "ping"), "ping");
    const big = "x".repeat(1024 * 1024);
    assert.equal(await echo(ws, big), big);
    assert.equal(backend.openSockets(), 1);
    ws.close();
    await closed(ws);
    await eventually(() => assert.equal(backend.openSockets(), 0));
  });

  test("WebSocket refusals: 404 for an unknown token, 503 while not ready", async () => {
    await assert.rejects(openWebSocket(`${proxy.url}/r/${newToken()}/ws`), { status: 404 });
    await assert.rejects(openWebSocket(`${proxy.url}/r/${starting}/ws`), { status: 503 });
  });

  test("a runtime that stops has its WebSockets and streams closed at once, and answers 503", async () => {
    const token = newToken();
    source.putRuntime(runtimeObject({ name: "stopping", token, endpoint: backend.url }));
    const { ws } = await openWebSocket(`${proxy.url}/r/${token}/ws`);
    const stream = await fetch(`${proxy.url}/r/${token}/events?count=1000&interval=20`);
    const reader = stream.body!.getReader();
    await reader.read();
    source.putRuntime(
      runtimeObject({ name: "stopping", token, endpoint: backend.url, desiredState: "Stopped" }),
    );
    await closed(ws);
    await assert.rejects(async () => {
      for (;;) if ((await reader.read()).done) throw new Error("ended without an error");
    });
    await eventually(() => assert.equal(backend.openStreams(), 0));
    const r = await httpRequest(`${proxy.url}/r/${token}/hello`, { headers: { accept: "application/json" } });
    assert.equal(r.status, 503);
    assert.equal(r.headers["retry-after"], undefined);
  });

  test("every other path is the Admin API's, forwarded as is", async () => {
    const r = await httpRequest(`${proxy.url}/services/alice/notebook/x?watch=1`, { method: "DELETE" });
    assert.equal(r.status, 200);
    const seen = r.json<{ url: string; method: string }>();
    assert.equal(seen.url, "/services/alice/notebook/x?watch=1");
    assert.equal(seen.method, "DELETE");
    const up = await fetch(`${proxy.url}/services/upload`, { method: "POST", body: "x".repeat(100_000) });
    assert.equal(((await up.json()) as { bytes: number }).bytes, 100_000);
  });

  test("a runtime of a service the proxy does not know, or naming an unknown module, answers 503 naming it", async () => {
    const orphan = newToken();
    source.putRuntime(
      runtimeObject({ name: "orphan", token: orphan, endpoint: backend.url, service: "nosuch" }),
    );
    const r = await httpRequest(`${proxy.url}/r/${orphan}/`);
    assert.equal(r.status, 503);
    assert.match(r.json().detail as string, /service nosuch/);
    source.putService(serviceObject("odd", { name: "no-such-module" }, { routeAccess: "Public" }));
    const odd = newToken();
    source.putRuntime(runtimeObject({ name: "odd", token: odd, endpoint: backend.url, service: "odd" }));
    const m = await httpRequest(`${proxy.url}/r/${odd}/`);
    assert.equal(m.status, 503);
    assert.match(m.json().detail as string, /"no-such-module".*not known to this proxy/);
    await assert.rejects(openWebSocket(`${proxy.url}/r/${odd}/ws`), { status: 503 });
  });

  test("metrics count requests by who answered and code, open WebSockets and routes", async () => {
    const { ws } = await openWebSocket(`${proxy.url}/r/${ready}/ws`);
    const text = await registry.metrics();
    assert.match(text, /tenantry_runtimes_proxy_requests_total\{target="runtime",code="200"\} \d+/);
    assert.match(text, /tenantry_runtimes_proxy_requests_total\{target="proxy",code="404"\} \d+/);
    assert.match(text, /tenantry_runtimes_proxy_websockets 1/);
    assert.match(text, /tenantry_runtimes_proxy_routes \d+/);
    assert.match(
      text,
      /tenantry_runtimes_proxy_request_duration_seconds_bucket\{le="0.005",target="runtime"\}/,
    );
    ws.close();
    await closed(ws);
    await eventually(async () =>
      assert.match(await registry.metrics(), /tenantry_runtimes_proxy_websockets 0/),
    );
  });
});

describe("runtimes proxy with the Admin API in process", () => {
  test("paths outside /r/ go to the handler given", async () => {
    const source = new StaticRouteSource();
    const proxy = new RuntimesProxy({
      source,
      admin: {
        handle: (req, res) => {
          res.writeHead(200, { "content-type": "text/plain" });
          res.end(`admin ${req.method} ${req.url}`);
        },
      },
    });
    await proxy.start();
    try {
      const r = await httpRequest(`${proxy.url}/services/openapi.json`);
      assert.equal(r.body, "admin GET /services/openapi.json");
    } finally {
      await proxy.stop();
    }
  });
});

describe("stopping the runtimes proxy", () => {
  test("ends open WebSockets and streams instead of waiting for them", async () => {
    const backend = await startBackend();
    const source = new StaticRouteSource();
    const token = newToken();
    source.putService(serviceObject("notebook", undefined, { routeAccess: "Public" }));
    source.putRuntime(runtimeObject({ name: "rt", token, endpoint: backend.url }));
    const proxy = new RuntimesProxy({ source });
    await proxy.start();
    try {
      const { ws } = await openWebSocket(`${proxy.url}/r/${token}/ws`);
      const stream = await fetch(`${proxy.url}/r/${token}/events?count=1000&interval=20`);
      const reader = stream.body!.getReader();
      await reader.read();
      await proxy.stop();
      await closed(ws);
      await eventually(() => {
        assert.equal(backend.openSockets(), 0);
        assert.equal(backend.openStreams(), 0);
      });
    } finally {
      await backend.close();
    }
  });
});

/** The value once it has stopped growing for 300 ms (a stream that met back-pressure). */
async function settled(read: () => number): Promise<number> {
  let last = -1;
  for (let value = read(); value !== last; value = read()) {
    last = value;
    await sleep(300);
  }
  return last;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
