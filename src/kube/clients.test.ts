import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { ClusterClient, loadClusterClient, qualifyUserNames } from "./clients.js";
import { FakeApiServer } from "./fake-api-server.js";

const dir = mkdtempSync(join(tmpdir(), "tenantry-clients-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function writeKubeconfig(file: string, server: string, token: string): string {
  const path = join(dir, file);
  writeFileSync(
    path,
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      `- name: kind`,
      `  cluster: { server: "${server}", certificate-authority: ca.crt }`,
      "users:",
      "- name: admin",
      `  user: { token: ${token} }`,
      "contexts:",
      "- name: kind",
      "  context: { cluster: kind, user: admin, namespace: tenants }",
      "current-context: kind",
    ].join("\n"),
  );
  return path;
}

describe("ClusterClient", () => {
  test("qualifies user names with the cluster so credentials cannot be shared by name", () => {
    const home = loadClusterClient("home", writeKubeconfig("home.yaml", "https://10.0.0.1:6443", "t1"));
    const edge = loadClusterClient("edge-1", writeKubeconfig("edge.yaml", "https://10.0.0.2:6443", "t2"));
    assert.equal(home.kubeConfig.getCurrentUser()?.name, "home/admin");
    assert.equal(edge.kubeConfig.getCurrentUser()?.name, "edge-1/admin");
    assert.equal(home.kubeConfig.getCurrentUser()?.token, "t1");
    assert.equal(edge.kubeConfig.getCurrentUser()?.token, "t2");
    assert.equal(home.server, "https://10.0.0.1:6443");
    assert.equal(edge.server, "https://10.0.0.2:6443");
    // The context keeps its namespace, and relative file paths were resolved against the kubeconfig's folder.
    assert.equal(home.kubeConfig.getContextObject("kind")?.namespace, "tenants");
    assert.equal(home.kubeConfig.getCurrentCluster()?.caFile, join(dir, "ca.crt"));
  });

  test("qualifying is idempotent and does not modify the source kubeconfig", () => {
    const source = new KubeConfig();
    source.loadFromOptions({
      clusters: [{ name: "c", server: "https://x", skipTLSVerify: false }],
      users: [{ name: "admin", token: "t" }],
      contexts: [{ name: "ctx", cluster: "c", user: "admin" }],
      currentContext: "ctx",
    });
    const once = qualifyUserNames(source, "home");
    const twice = qualifyUserNames(once, "home");
    assert.equal(twice.getCurrentUser()?.name, "home/admin");
    assert.equal(source.getCurrentUser()?.name, "admin");
  });

  test("rejects unusable names and kubeconfigs without a current cluster", () => {
    assert.throws(() => new ClusterClient("a/b", new KubeConfig()), /invalid cluster name/);
    assert.throws(() => new ClusterClient("home", new KubeConfig()), /no current context/);
  });

  test("creates API clients lazily, once, against each cluster's own server", async () => {
    const first = await FakeApiServer.start();
    const second = await FakeApiServer.start();
    try {
      first.handler = () => ({
        status: 200,
        body: { kind: "Namespace", apiVersion: "v1", metadata: { name: "one" } },
      });
      second.handler = () => ({
        status: 200,
        body: { kind: "Namespace", apiVersion: "v1", metadata: { name: "two" } },
      });
      const a = new ClusterClient("a", first.kubeConfig());
      const b = new ClusterClient("b", second.kubeConfig());
      assert.ok(a.core instanceof CoreV1Api);
      assert.equal(a.core, a.core);
      assert.equal(a.objects, a.objects);
      assert.equal(a.watch, a.watch);
      assert.ok(a.apps && a.coordination && a.apiextensions);
      const [one, two] = await Promise.all([
        a.core.readNamespace({ name: "x" }),
        b.core.readNamespace({ name: "x" }),
      ]);
      assert.equal(one.metadata?.name, "one");
      assert.equal(two.metadata?.name, "two");
      assert.equal(first.requests[0]?.headers.authorization, "Bearer test-token");
    } finally {
      await first.close();
      await second.close();
    }
  });
});
