import assert from "node:assert/strict";
import type { Agent } from "node:https";
import { test } from "node:test";
import { ClusterClient } from "../../src/kube/index.js";
import { testKubeConfig } from "../support/clusters.js";

test("API calls of one cluster client reuse one keep-alive connection pool", async () => {
  const client = new ClusterClient("home", testKubeConfig("home"));
  const agents = new Set<Agent>();
  const factory = client.kubeConfig as unknown as {
    createAgent: (cluster: unknown, options: object) => Agent;
  };
  const createAgent = factory.createAgent;
  factory.createAgent = (cluster, options) => {
    const agent = createAgent(cluster, options);
    agents.add(agent);
    return agent;
  };
  for (let i = 0; i < 20; i++) await client.core.readNamespace({ name: "default" });
  assert.equal(agents.size, 1, "one agent for every request");
  const [agent] = agents;
  const idle = Object.values(agent!.freeSockets).flat().length;
  assert.ok(idle >= 1, "the connection stays open for the next request");
});
