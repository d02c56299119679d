import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { parseClusterKubeconfig, standaloneKubeconfig, withRequestDeadline } from "./credentials.js";

function kubeconfigWithFiles(dir: string, user: Record<string, unknown>): KubeConfig {
  writeFileSync(join(dir, "ca.crt"), "CA PEM");
  writeFileSync(join(dir, "client.crt"), "CERT PEM");
  writeFileSync(join(dir, "client.key"), "KEY PEM");
  const path = join(dir, "config");
  writeFileSync(
    path,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        { name: "c", cluster: { server: "https://127.0.0.1:6443", "certificate-authority": "ca.crt" } },
      ],
      users: [{ name: "u", user }],
      contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
      "current-context": "ctx",
    }),
  );
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

describe("standaloneKubeconfig", () => {
  it("reads the files a kubeconfig refers to into one self-contained context named after the cluster", () => {
    const dir = mkdtempSync(join(tmpdir(), "tenantry-creds-"));
    const kc = kubeconfigWithFiles(dir, { "client-certificate": "client.crt", "client-key": "client.key" });
    const text = standaloneKubeconfig(kc, "edge-9");
    const doc = parse(text);
    assert.equal(doc["current-context"], "edge-9");
    assert.equal(doc.clusters[0].cluster.server, "https://127.0.0.1:6443");
    assert.equal(
      Buffer.from(doc.clusters[0].cluster["certificate-authority-data"], "base64").toString(),
      "CA PEM",
    );
    assert.equal(Buffer.from(doc.users[0].user["client-certificate-data"], "base64").toString(), "CERT PEM");
    assert.equal(Buffer.from(doc.users[0].user["client-key-data"], "base64").toString(), "KEY PEM");
    assert.equal(parseClusterKubeconfig(text).getCurrentCluster()?.server, "https://127.0.0.1:6443");
  });

  it("refuses credentials that run a program on this machine, naming the user", () => {
    const dir = mkdtempSync(join(tmpdir(), "tenantry-creds-"));
    const kc = kubeconfigWithFiles(dir, {
      exec: { apiVersion: "client.authentication.k8s.io/v1", command: "aws" },
    });
    assert.throws(() => standaloneKubeconfig(kc, "eks"), /user "u" authenticates with an exec plugin/);
  });

  it("refuses a user without any credentials", () => {
    const dir = mkdtempSync(join(tmpdir(), "tenantry-creds-"));
    const kc = kubeconfigWithFiles(dir, {});
    assert.throws(
      () => standaloneKubeconfig(kc, "x"),
      /has no client certificate and key, token or password/,
    );
  });
});

describe("parseClusterKubeconfig", () => {
  it("says what is wrong with a kubeconfig", () => {
    assert.throws(() => parseClusterKubeconfig("{{{"), /does not parse/);
    assert.throws(
      () =>
        parseClusterKubeconfig(
          stringify({ apiVersion: "v1", kind: "Config", clusters: [], users: [], contexts: [] }),
        ),
      /no current cluster with a server/,
    );
  });
});

describe("withRequestDeadline", () => {
  it("gives every request of the KubeConfig's API clients a signal that fires after the deadline", async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "c", server: "https://127.0.0.1:1", skipTLSVerify: false }],
      users: [{ name: "u", token: "t" }],
      contexts: [{ name: "ctx", cluster: "c", user: "u" }],
      currentContext: "ctx",
    });
    withRequestDeadline(kc, 20);
    let signal: AbortSignal | undefined;
    const context = { setHeaderParam() {}, setAgent() {}, setSignal: (s: AbortSignal) => (signal = s) };
    await (
      kc as unknown as { applySecurityAuthentication(c: unknown): Promise<void> }
    ).applySecurityAuthentication(context);
    assert.ok(signal);
    assert.equal(signal.aborted, false);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(signal.aborted, true);
  });
});
