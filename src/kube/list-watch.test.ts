import assert from "node:assert/strict";
import { createServer } from "node:net";
import { before, describe, test } from "node:test";
import { KubeConfig, type V1ConfigMap } from "@kubernetes/client-node";
import { ClusterClient } from "./clients.js";
import { statusCode } from "./errors.js";
import { KubeListWatch, WatchAbortedError } from "./list-watch.js";

/** A loopback port nothing listens on, so every connection is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let client: ClusterClient;

before(async () => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "gone", server: `https://127.0.0.1:${await closedPort()}`, skipTLSVerify: false }],
    users: [{ name: "admin", token: "unused" }],
    contexts: [{ name: "gone", cluster: "gone", user: "admin" }],
    currentContext: "gone",
  });
  client = new ClusterClient("home", kubeConfig);
});

/** Opens a watch and collects what it reports; `closed` resolves with onClose's argument. */
function startWatch(source: KubeListWatch<V1ConfigMap>) {
  const events: unknown[] = [];
  let closes = 0;
  let resolveClosed!: (error: unknown) => void;
  const closed = new Promise<unknown>((resolve) => {
    resolveClosed = resolve;
  });
  const handle = source.watch(
    "1",
    60,
    (event) => events.push(event),
    (error) => {
      closes++;
      resolveClosed(error);
    },
  );
  return { events, closed, handle, closes: () => closes };
}

describe("KubeListWatch without a reachable server", () => {
  const selector = { apiVersion: "v1", kind: "ConfigMap", namespace: "team-a", labelSelector: "a=b" };

  test("describes the resource, scope and labels it follows", () => {
    assert.equal(
      new KubeListWatch(client, selector).description,
      "v1/ConfigMap in namespace team-a with labels a=b",
    );
    assert.equal(
      new KubeListWatch(client, { apiVersion: "v1", kind: "Namespace" }).description,
      "v1/Namespace",
    );
    assert.equal(new KubeListWatch(client, selector).cluster, "home");
  });

  test("a list that cannot connect rejects with a transport error, not an API status", async () => {
    const source = new KubeListWatch<V1ConfigMap>(client, selector);
    await assert.rejects(
      source.list(new AbortController().signal),
      (error) => statusCode(error) === undefined,
    );
  });

  test("a watch that cannot connect is reported once through onClose, with no events", async () => {
    const run = startWatch(new KubeListWatch<V1ConfigMap>(client, selector));
    const error = await run.closed;
    assert.ok(error instanceof Error && !(error instanceof WatchAbortedError), `got ${String(error)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(run.closes(), 1);
    assert.equal(run.events.length, 0);
  });

  test("abort() while still connecting reports WatchAbortedError once; the later failure is swallowed", async () => {
    const run = startWatch(new KubeListWatch<V1ConfigMap>(client, selector));
    run.handle.abort();
    run.handle.abort();
    assert.ok((await run.closed) instanceof WatchAbortedError);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(run.closes(), 1);
  });
});
