import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";
import type { V1ConfigMap } from "@kubernetes/client-node";
import { ClusterClient } from "./clients.js";
import { isGone } from "./errors.js";
import { beginWatchStream, FakeApiServer, kubeStatus, writeWatchEvent } from "./fake-api-server.js";
import { KubeListWatch, type RawWatchEvent, WatchAbortedError, type WatchHandle } from "./list-watch.js";

let server: FakeApiServer;
let client: ClusterClient;

before(async () => {
  server = await FakeApiServer.start();
  client = new ClusterClient("home", server.kubeConfig());
});
after(() => server.close());
beforeEach(() => {
  server.requests.length = 0;
});

function configMap(name: string, resourceVersion: string): V1ConfigMap {
  return { metadata: { name, namespace: "team-a", resourceVersion } };
}

interface WatchRun {
  events: RawWatchEvent[];
  /** Resolves with what onClose reported. */
  closed: Promise<unknown>;
  handle: WatchHandle;
  closes: () => number;
}

function startWatch(source: KubeListWatch<V1ConfigMap>, resourceVersion: string): WatchRun {
  const events: RawWatchEvent[] = [];
  let closes = 0;
  let handle: ReturnType<typeof source.watch> | undefined;
  const closed = new Promise<unknown>((resolve) => {
    handle = source.watch(
      resourceVersion,
      60,
      (event) => events.push(event),
      (error) => {
        closes++;
        resolve(error);
      },
    );
  });
  return { events, closed, handle: handle!, closes: () => closes };
}

/** Resolves with the response of the next watch request the server receives. */
function nextWatch(): Promise<ServerResponse> {
  return new Promise((resolve) => {
    server.handler = (_request, response) => {
      beginWatchStream(response);
      resolve(response);
      return undefined;
    };
  });
}

describe("KubeListWatch", () => {
  const selector = {
    apiVersion: "v1",
    kind: "ConfigMap",
    namespace: "team-a",
    labelSelector: "tenantry.dev/test=x",
  };

  test("lists all pages with the selector and returns raw objects plus the collection resourceVersion", async () => {
    server.handler = (request) => {
      const page = request.query.get("continue");
      return page
        ? { status: 200, body: { metadata: { resourceVersion: "20" }, items: [configMap("b", "12")] } }
        : {
            status: 200,
            body: { metadata: { resourceVersion: "20", continue: "p2" }, items: [configMap("a", "11")] },
          };
    };
    const source = new KubeListWatch<V1ConfigMap>(client, selector);
    const result = await source.list(new AbortController().signal);
    assert.equal(result.resourceVersion, "20");
    assert.deepEqual(
      result.items.map((item) => [item.metadata?.name, item.kind, item.apiVersion]),
      [
        ["a", "ConfigMap", "v1"],
        ["b", "ConfigMap", "v1"],
      ],
    );
    const requests = server.apiRequests();
    assert.equal(requests.length, 2);
    assert.equal(requests[0]?.path, "/api/v1/namespaces/team-a/configmaps");
    assert.equal(requests[0]?.query.get("labelSelector"), "tenantry.dev/test=x");
    assert.equal(requests[0]?.query.get("limit"), "500");
    assert.equal(requests[1]?.query.get("continue"), "p2");
    assert.equal(source.cluster, "home");
  });

  test("watches from a resourceVersion with bookmarks, delivers events, and reports a clean close", async () => {
    const source = new KubeListWatch<V1ConfigMap>(client, selector);
    const connected = nextWatch();
    const run = startWatch(source, "20");
    const response = await connected;
    writeWatchEvent(response, "ADDED", configMap("c", "21"));
    writeWatchEvent(response, "BOOKMARK", { kind: "ConfigMap", metadata: { resourceVersion: "22" } });
    response.end();
    assert.equal(await run.closed, undefined);
    assert.deepEqual(
      run.events.map((event) => event.type),
      ["ADDED", "BOOKMARK"],
    );
    const [request] = server.apiRequests();
    assert.equal(request?.query.get("watch"), "true");
    assert.equal(request?.query.get("resourceVersion"), "20");
    assert.equal(request?.query.get("allowWatchBookmarks"), "true");
    assert.equal(request?.query.get("timeoutSeconds"), "60");
    assert.equal(request?.query.get("labelSelector"), "tenantry.dev/test=x");
    assert.equal(run.closes(), 1);
  });

  test("abort() closes the stream once with WatchAbortedError and stops further events", async () => {
    const source = new KubeListWatch<V1ConfigMap>(client, selector);
    const connected = nextWatch();
    const run = startWatch(source, "20");
    const response = await connected;
    writeWatchEvent(response, "ADDED", configMap("c", "21"));
    while (run.events.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    run.handle.abort();
    assert.ok((await run.closed) instanceof WatchAbortedError);
    writeWatchEvent(response, "ADDED", configMap("d", "22"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(run.events.length, 1);
    assert.equal(run.closes(), 1);
  });

  test("an HTTP 410 on the watch request is reported as Gone", async () => {
    server.handler = () => ({ status: 410, body: kubeStatus(410, "Expired") });
    const source = new KubeListWatch<V1ConfigMap>(client, selector);
    const run = startWatch(source, "1");
    assert.ok(isGone(await run.closed));
  });

  test("a cluster-wide selector watches the cluster-wide collection", async () => {
    const source = new KubeListWatch<V1ConfigMap>(client, { apiVersion: "v1", kind: "ConfigMap" });
    server.handler = () => ({ status: 200, body: { metadata: { resourceVersion: "5" }, items: [] } });
    await source.list(new AbortController().signal);
    assert.equal(server.apiRequests()[0]?.path, "/api/v1/configmaps");
  });
});
