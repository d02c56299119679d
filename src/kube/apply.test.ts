import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { applyObject, applyStatus, FIELD_MANAGER } from "./apply.js";
import { ClusterClient } from "./clients.js";

/**
 * A client whose server cannot be reached: a request that did go out would fail with a
 * connection error, so a validation message proves that nothing was sent.
 */
function unreachableClient(): ClusterClient {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "nowhere", server: "https://127.0.0.1:1", skipTLSVerify: false }],
    users: [{ name: "admin", token: "unused" }],
    contexts: [{ name: "nowhere", cluster: "nowhere", user: "admin" }],
    currentContext: "nowhere",
  });
  return new ClusterClient("home", kubeConfig);
}

describe("server-side apply input checks", () => {
  const client = unreachableClient();

  test("every apply is made by the single tenantry field manager", () => {
    assert.equal(FIELD_MANAGER, "tenantry");
  });

  test("applyObject rejects objects without a name, apiVersion or kind before sending anything", async () => {
    await assert.rejects(
      applyObject(client, { apiVersion: "v1", kind: "ConfigMap", metadata: {} }),
      /needs metadata.name/,
    );
    await assert.rejects(
      applyObject(client, { kind: "ConfigMap", metadata: { name: "x" } }),
      /needs apiVersion and kind/,
    );
    await assert.rejects(
      applyObject(client, { apiVersion: "v1", metadata: { name: "x" } }),
      /needs apiVersion and kind/,
    );
  });

  test("applyStatus rejects the same objects before sending anything", async () => {
    await assert.rejects(
      applyStatus(client, { apiVersion: "v1", kind: "Namespace", metadata: {}, status: {} }),
      /needs metadata.name/,
    );
    await assert.rejects(
      applyStatus(client, { kind: "Namespace", metadata: { name: "x" }, status: {} }),
      /needs apiVersion and kind/,
    );
  });
});
