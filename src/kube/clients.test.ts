import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { ClusterClient, loadClusterClient, qualifyUserNames } from "./clients.js";

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

  test("its watches outlast the longest watch an informer asks the server for", () => {
    const client = loadClusterClient("home", writeKubeconfig("watch.yaml", "https://10.0.0.4:6443", "t4"));
    // Informers ask for up to twice their 300 s, and end a stuck watch 30 s after that themselves.
    const { requestTimeoutMs } = client.watch as unknown as { requestTimeoutMs: number };
    assert.ok(requestTimeoutMs > (2 * 300 + 30) * 1000);
  });

  test("creates each API client lazily and only once", () => {
    const client = loadClusterClient("home", writeKubeconfig("lazy.yaml", "https://10.0.0.3:6443", "t3"));
    assert.ok(client.core instanceof CoreV1Api);
    assert.equal(client.core, client.core);
    assert.equal(client.apps, client.apps);
    assert.equal(client.coordination, client.coordination);
    assert.equal(client.apiextensions, client.apiextensions);
    assert.equal(client.objects, client.objects);
    assert.equal(client.watch, client.watch);
  });
});
