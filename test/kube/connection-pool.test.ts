import assert from "node:assert/strict";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { test } from "node:test";
import { ClusterClient } from "../../src/kube/index.js";
import { testKubeConfig } from "../support/clusters.js";

test("API calls of one cluster client to kube-apiserver reuse keep-alive connections", async () => {
  const client = new ClusterClient("home", testKubeConfig("home"));
  const server = new URL(client.server);
  let connections = 0;
  // undici reports every connection it opens here (client-node 2.x sends its requests with undici).
  const onConnected = (message: unknown) => {
    const origin = (message as { connectParams?: { hostname?: string; port?: string } }).connectParams;
    if (origin?.hostname === server.hostname && String(origin.port) === server.port) connections++;
  };
  subscribe("undici:client:connected", onConnected);
  try {
    for (let i = 0; i < 20; i++) await client.core.readNamespace({ name: "default" });
    await client.objects.getText("/version");
  } finally {
    unsubscribe("undici:client:connected", onConnected);
    await client.close();
  }
  // One, or two when a request comes before the last answer's connection was handed back.
  assert.ok(connections >= 1 && connections <= 2, `${connections} connections for 21 requests`);
});
