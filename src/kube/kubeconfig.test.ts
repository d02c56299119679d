import assert from "node:assert/strict";
import { test } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { kubeconfigYaml } from "./kubeconfig.js";

test("a kubeconfig with a context per entry loads as client-node reads it; shared entries are written once", () => {
  const cluster = {
    name: "home",
    server: "https://127.0.0.1:6443",
    caData: "Q0E=",
    tlsServerName: "kubernetes",
  };
  const text = kubeconfigYaml([
    {
      name: "home",
      cluster,
      user: { name: "alice", certData: "Y2VydA==", keyData: "a2V5" },
      namespace: "demo",
    },
    { name: "home-token", cluster, user: { name: "bot", token: "t0k" } },
  ]);
  const kc = new KubeConfig();
  kc.loadFromString(text);
  assert.equal(kc.getCurrentContext(), "home");
  assert.equal(kc.getClusters().length, 1);
  assert.deepEqual(
    [kc.getCurrentCluster()?.server, kc.getCurrentCluster()?.caData, kc.getCurrentCluster()?.tlsServerName],
    ["https://127.0.0.1:6443", "Q0E=", "kubernetes"],
  );
  assert.deepEqual([kc.getCurrentUser()?.certData, kc.getCurrentUser()?.keyData], ["Y2VydA==", "a2V5"]);
  assert.equal(kc.getContextObject("home")?.namespace, "demo");
  assert.equal(kc.getUser("bot")?.token, "t0k");
  assert.equal(kubeconfigYaml([]).includes("current-context"), false);
});
