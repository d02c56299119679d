import assert from "node:assert/strict";
import { test } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { parse } from "yaml";
import { kubeconfigYaml, mergedKubeconfigYaml, usersOnlyKubeconfigYaml } from "./kubeconfig.js";

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

test("credentials in files are named, not embedded", () => {
  const config = new KubeConfig();
  config.loadFromString(
    kubeconfigYaml([
      {
        name: "hook",
        cluster: { name: "hook", server: "https://127.0.0.1:9443", caFile: "/etc/ca.crt" },
        user: { name: "kube-apiserver", certFile: "/etc/client.crt", keyFile: "/etc/client.key" },
      },
    ]),
  );
  assert.equal(config.getCurrentCluster()?.caFile, "/etc/ca.crt");
  assert.equal(config.getCurrentUser()?.certFile, "/etc/client.crt");
  assert.equal(config.getCurrentUser()?.keyFile, "/etc/client.key");
});

test("a users-only kubeconfig has users and nothing else (kube-apiserver's webhook clients)", () => {
  const doc = parse(usersOnlyKubeconfigYaml([{ name: "*", certFile: "/c", keyFile: "/k" }]));
  assert.deepEqual(doc, {
    apiVersion: "v1",
    kind: "Config",
    users: [{ name: "*", user: { "client-certificate": "/c", "client-key": "/k" } }],
  });
});

test("merging takes each kubeconfig's current context under the given name, credentials as they are", () => {
  const edge = kubeconfigYaml([
    { name: "other", cluster: { name: "x", server: "https://x" }, user: { name: "u", token: "no" } },
  ]);
  const home = kubeconfigYaml([
    {
      name: "ctx",
      cluster: { name: "c", server: "https://home", caData: "Q0E=" },
      user: { name: "admin", certData: "Y2VydA==", keyData: "a2V5" },
    },
  ]);
  const config = new KubeConfig();
  config.loadFromString(
    mergedKubeconfigYaml([
      { name: "home", kubeconfig: home, user: "admin" },
      { name: "edge", kubeconfig: edge, user: "admin" },
    ]),
  );
  assert.equal(config.getCurrentContext(), "home");
  assert.equal(config.getCluster("home")?.server, "https://home");
  assert.equal(config.getUser("home/admin")?.certData, "Y2VydA==");
  assert.equal(config.getUser("edge/admin")?.token, "no");
  assert.throws(
    () =>
      mergedKubeconfigYaml([{ name: "bad", kubeconfig: "apiVersion: v1\nkind: Config\n", user: "admin" }]),
    /the kubeconfig of bad has no current context/,
  );
});
