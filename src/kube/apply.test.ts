import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import type { KubernetesObject, V1Secret } from "@kubernetes/client-node";
import { applyObject, applyStatus, FIELD_MANAGER } from "./apply.js";
import { ClusterClient } from "./clients.js";
import { isConflict } from "./errors.js";
import { FakeApiServer, kubeStatus } from "./fake-api-server.js";

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

describe("applyObject", () => {
  test("sends a server-side apply PATCH with the tenantry field manager, forcing by default", async () => {
    server.handler = (request) => ({
      status: 200,
      body: {
        ...JSON.parse(request.body),
        metadata: { name: "web-mirror", namespace: "team-a", resourceVersion: "7" },
      },
    });
    const secret: V1Secret = {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "web-mirror", namespace: "team-a", managedFields: [{ manager: "someone" }] },
      data: { a: "MQ==" },
    };
    const stored = await applyObject(client, secret);
    const [request] = server.apiRequests();
    assert.equal(request?.method, "PATCH");
    assert.equal(request?.path, "/api/v1/namespaces/team-a/secrets/web-mirror");
    assert.equal(request?.headers["content-type"], "application/apply-patch+yaml");
    assert.equal(request?.query.get("fieldManager"), FIELD_MANAGER);
    assert.equal(request?.query.get("force"), "true");
    assert.equal(request?.query.get("dryRun"), null);
    const body = JSON.parse(request?.body ?? "{}");
    assert.deepEqual(body.data, { a: "MQ==" });
    assert.equal(body.metadata.managedFields, undefined, "apply requests must not carry managedFields");
    assert.equal(stored.metadata?.resourceVersion, "7");
    assert.ok(secret.metadata?.managedFields, "the caller's object is not modified");
  });

  test("force: false and dryRun are passed through", async () => {
    server.handler = (request) => ({ status: 200, body: JSON.parse(request.body) });
    await applyObject(
      client,
      { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "n" } },
      { force: false, dryRun: true },
    );
    const [request] = server.apiRequests();
    assert.equal(request?.query.get("force"), "false");
    assert.equal(request?.query.get("dryRun"), "All");
  });

  test("API failures surface as classifiable errors", async () => {
    server.handler = () => ({
      status: 409,
      body: kubeStatus(409, "Conflict", "Apply failed with 1 conflict"),
    });
    await assert.rejects(
      applyObject(
        client,
        { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c", namespace: "n" } },
        { force: false },
      ),
      (error) => isConflict(error),
    );
  });

  test("rejects objects that cannot be applied before sending anything", async () => {
    await assert.rejects(
      applyObject(client, { apiVersion: "v1", kind: "ConfigMap", metadata: {} }),
      /metadata.name/,
    );
    await assert.rejects(
      applyObject(client, { kind: "ConfigMap", metadata: { name: "x" } }),
      /apiVersion and kind/,
    );
    assert.equal(server.apiRequests().length, 0);
  });
});

describe("applyStatus", () => {
  test("applies only the status to the /status subresource", async () => {
    server.handler = (request) => ({
      status: 200,
      body: { ...JSON.parse(request.body), metadata: { name: "w1", namespace: "n", resourceVersion: "3" } },
    });
    const widget: KubernetesObject & { spec: unknown; status: unknown } = {
      apiVersion: "example.tenantry.dev/v1",
      kind: "Widget",
      metadata: { name: "w1", namespace: "n", labels: { a: "b" } },
      spec: { size: 3 },
      status: { phase: "Ready" },
    };
    const stored = await applyStatus(client, widget);
    const [request] = server.apiRequests();
    assert.equal(request?.method, "PATCH");
    assert.equal(request?.path, "/apis/example.tenantry.dev/v1/namespaces/n/widgets/w1/status");
    assert.equal(request?.headers["content-type"], "application/apply-patch+yaml");
    assert.equal(request?.query.get("fieldManager"), FIELD_MANAGER);
    assert.equal(request?.query.get("force"), "true");
    assert.equal(request?.headers.authorization, "Bearer test-token");
    assert.deepEqual(JSON.parse(request?.body ?? "{}"), {
      apiVersion: "example.tenantry.dev/v1",
      kind: "Widget",
      metadata: { name: "w1", namespace: "n" },
      status: { phase: "Ready" },
    });
    assert.equal(stored.metadata?.resourceVersion, "3");
  });
});
