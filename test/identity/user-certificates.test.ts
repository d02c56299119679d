import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  CertificatesV1Api,
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  Watch,
} from "@kubernetes/client-node";
import { parse } from "yaml";
import { freePort } from "../../src/localcluster/index.js";
import { createCertificateRequest } from "../../src/pki/index.js";
import { TENANT_LABEL, USER_LABEL, userLabelValue } from "../../src/tenants/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { type CommandResult, kubectl, tenantryCli } from "../support/kubectl.js";
import { testUser } from "../support/users.js";

const tenantry = (args: string[]): Promise<CommandResult> => tenantryCli(args);

function kubeconfigPath(cluster: string): string {
  return testEnvironment().clusters.find((c) => c.name === cluster)!.kubeconfig;
}

/** Every CertificateSigningRequest of a user that appears in a cluster while it watches. */
async function watchRequests(
  kc: KubeConfig,
  username: string,
): Promise<{ seen: string[]; stop: () => void }> {
  const seen: string[] = [];
  const controller = await new Watch(kc).watch(
    "/apis/certificates.k8s.io/v1/certificatesigningrequests",
    { labelSelector: `${USER_LABEL}=${userLabelValue(username)}` },
    (type, object: { metadata?: { name?: string } }) => {
      if (type === "ADDED") seen.push(object.metadata?.name ?? "");
    },
    () => {},
  );
  return { seen, stop: () => controller.abort() };
}

async function requestsOf(kc: KubeConfig, username: string): Promise<string[]> {
  const list = await kc.makeApiClient(CertificatesV1Api).listCertificateSigningRequest({
    labelSelector: `${USER_LABEL}=${userLabelValue(username)}`,
  });
  return list.items.map((c) => c.metadata!.name!);
}

describe("user certificates signed by each cluster of a tenant", () => {
  const tenant = uniqueName("certs");
  const username = `${uniqueName("dev")}@example.org`;
  const group = "app-developers";
  const clusters = ["home", "edge-1"] as const;
  const namespaces: Record<(typeof clusters)[number], string[]> = {
    home: [`${tenant}-dev`, `${tenant}-prod`],
    "edge-1": [`${tenant}-dev`],
  };
  const foreign = uniqueName("foreign");
  const dir = mkdtempSync(join(tmpdir(), "tenantry-user-certs-"));
  const clusterFlags = clusters.flatMap((c) => ["--kubeconfig", `${c}=${kubeconfigPath(c)}`]);

  before(async () => {
    for (const cluster of clusters) {
      const kc = testKubeConfig(cluster);
      const core = kc.makeApiClient(CoreV1Api);
      const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
      for (const name of namespaces[cluster]) {
        await core.createNamespace({ body: { metadata: { name, labels: { [TENANT_LABEL]: tenant } } } });
        await rbac.createNamespacedRoleBinding({
          namespace: name,
          body: {
            metadata: { name: "developers" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "edit" },
            subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: username }],
          },
        });
      }
    }
    await testKubeConfig("home")
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: foreign } } });
  });

  after(async () => {
    for (const cluster of clusters) {
      const core = testKubeConfig(cluster).makeApiClient(CoreV1Api);
      for (const name of [...namespaces[cluster], ...(cluster === "home" ? [foreign] : [])]) {
        await core.deleteNamespace({ name }).catch(() => {});
      }
    }
  });

  const path = join(dir, "user.kubeconfig");

  it("issues one kubeconfig with a context per cluster and namespace that kubectl uses as the user", async () => {
    const started = Date.now();
    const result = await tenantry([
      "user",
      "certificate",
      username,
      "--tenant",
      tenant,
      "--cluster",
      "home",
      "--cluster",
      "edge-1",
      "--group",
      group,
      "--expiration",
      "1h",
      "-o",
      path,
      ...clusterFlags,
    ]);
    assert.equal(result.code, 0, result.stderr);
    process.stderr.write(`issued in ${Date.now() - started} ms (CLI included):\n${result.stderr}`);
    for (const cluster of clusters) assert.match(result.stderr, new RegExp(`${cluster}: signed in \\d`));
    assert.equal(statSync(path).mode & 0o777, 0o600);

    const contexts = await kubectl(path, ["config", "get-contexts", "-o", "name"]);
    assert.equal(contexts.code, 0, contexts.stderr);
    const expected = clusters.flatMap((c) => namespaces[c].map((n) => `${c}/${n}`));
    assert.deepEqual(contexts.stdout.trim().split("\n").sort(), [...expected].sort());
    const current = await kubectl(path, ["config", "current-context"]);
    assert.equal(current.stdout.trim(), `home/${namespaces.home[0]}`);

    for (const context of expected) {
      const pods = await kubectl(path, ["--context", context, "get", "pods"]);
      assert.equal(pods.code, 0, `${context}: ${pods.stderr}`);
      const created = await kubectl(path, [
        "--context",
        context,
        "create",
        "configmap",
        "hello",
        "--from-literal=a=b",
      ]);
      assert.equal(created.code, 0, `${context}: ${created.stderr}`);
    }

    const whoami = await kubectl(path, [
      "--context",
      `edge-1/${namespaces["edge-1"][0]}`,
      "auth",
      "whoami",
      "-o",
      "json",
    ]);
    assert.equal(whoami.code, 0, whoami.stderr);
    const info = JSON.parse(whoami.stdout).status.userInfo as { username: string; groups: string[] };
    assert.equal(info.username, username);
    assert.ok(info.groups.includes(group), `groups ${info.groups}`);

    const elsewhere = await kubectl(path, [
      "--context",
      `home/${namespaces.home[0]}`,
      "-n",
      foreign,
      "get",
      "pods",
    ]);
    assert.notEqual(elsewhere.code, 0);
    assert.match(elsewhere.stderr, /forbidden/i);
    // The certificate grants what RBAC grants the user: nothing cluster-wide.
    const clusterWide = await kubectl(path, [
      "--context",
      `edge-1/${namespaces["edge-1"][0]}`,
      "get",
      "namespaces",
    ]);
    assert.notEqual(clusterWide.code, 0);
    assert.match(clusterWide.stderr, /forbidden/i);

    for (const cluster of clusters) assert.deepEqual(await requestsOf(testKubeConfig(cluster), username), []);
  });

  it("lists each certificate's subject, groups and the expiration asked for", async () => {
    const listed = await tenantry(["user", "certificates", path, "-o", "json"]);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as {
      user: string;
      clusters: string[];
      commonName: string;
      groups: string[];
      notBefore: string;
      notAfter: string;
      remainingSeconds: number;
      state: string;
    }[];
    assert.deepEqual(rows.map((r) => r.clusters[0]).sort(), ["edge-1", "home"]);
    for (const row of rows) {
      assert.equal(row.commonName, username);
      assert.deepEqual(row.groups, [group]);
      assert.equal(row.state, "valid");
      assert.ok(
        row.remainingSeconds > 3500 && row.remainingSeconds <= 3600,
        `remaining ${row.remainingSeconds}s`,
      );
    }
    const text = await tenantry(["user", "certificates", path]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /NOT AFTER/);
    // Time has passed since the JSON listing: the remaining time is at most what it said then.
    const remaining = [...text.stdout.matchAll(/\t(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?\tvalid\n/g)].map(
      ([, h, m, s]) => Number(h ?? 0) * 3600 + Number(m ?? 0) * 60 + Number(s ?? 0),
    );
    assert.equal(remaining.length, 2, text.stdout);
    for (const seconds of remaining) {
      assert.ok(seconds > 0 && seconds <= Math.max(...rows.map((r) => r.remainingSeconds)), text.stdout);
    }
  });

  it("renews with the same key, or a new one, and the contexts keep working", async () => {
    const before = parse(readFileSync(path, "utf8")) as { users: { user: Record<string, string> }[] };
    const renewed = await tenantry(["user", "renew", path, "--expiration", "2h", ...clusterFlags]);
    assert.equal(renewed.code, 0, renewed.stderr);
    const after = parse(readFileSync(path, "utf8")) as typeof before;
    assert.equal(after.users[0]!.user["client-key-data"], before.users[0]!.user["client-key-data"]);
    assert.notEqual(
      after.users[0]!.user["client-certificate-data"],
      before.users[0]!.user["client-certificate-data"],
    );
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const listed = JSON.parse((await tenantry(["user", "certificates", path, "-o", "json"])).stdout) as {
      remainingSeconds: number;
    }[];
    for (const row of listed) assert.ok(row.remainingSeconds > 7000, `remaining ${row.remainingSeconds}s`);

    const rekeyed = await tenantry(["user", "renew", path, "--new-key", ...clusterFlags]);
    assert.equal(rekeyed.code, 0, rekeyed.stderr);
    const fresh = parse(readFileSync(path, "utf8")) as typeof before;
    assert.notEqual(fresh.users[0]!.user["client-key-data"], before.users[0]!.user["client-key-data"]);
    const pods = await kubectl(path, [
      "--context",
      `edge-1/${namespaces["edge-1"][0]}`,
      "get",
      "configmap",
      "hello",
    ]);
    assert.equal(pods.code, 0, pods.stderr);
  });

  it("signs a user's own request and refers to their key file", async () => {
    const own = await createCertificateRequest(username, [group]);
    const csrFile = join(dir, "own.csr");
    const keyFile = join(dir, "own.key");
    writeFileSync(csrFile, own.csrPem);
    writeFileSync(keyFile, own.keyPem, { mode: 0o600 });
    const ownPath = join(dir, "own.kubeconfig");
    const result = await tenantry([
      "user",
      "certificate",
      username,
      "--tenant",
      tenant,
      "--cluster",
      "home",
      "--group",
      group,
      "--csr",
      csrFile,
      "--key",
      keyFile,
      "-o",
      ownPath,
      ...clusterFlags,
    ]);
    assert.equal(result.code, 0, result.stderr);
    const written = readFileSync(ownPath, "utf8");
    assert.ok(!written.includes("client-key-data"), "no private key in the kubeconfig");
    assert.ok(written.includes(`client-key: ${keyFile}`));
    const pods = await kubectl(ownPath, [
      "--context",
      `home/${namespaces.home[1]}`,
      "get",
      "configmap",
      "hello",
    ]);
    assert.equal(pods.code, 0, pods.stderr);
  });

  it("refuses a request for system:masters before anything reaches a cluster", async () => {
    const intruder = uniqueName("intruder");
    const csrFile = join(dir, "masters.csr");
    writeFileSync(csrFile, (await createCertificateRequest(intruder, ["system:masters"])).csrPem);
    const watches = await Promise.all(clusters.map((c) => watchRequests(testKubeConfig(c), intruder)));
    try {
      const result = await tenantry([
        "user",
        "certificate",
        intruder,
        "--tenant",
        tenant,
        "--csr",
        csrFile,
        "--group",
        "system:masters",
        "-o",
        join(dir, "masters.kubeconfig"),
        ...clusterFlags,
      ]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /subject O \(groups\): "system:masters" is a system: group/);
      assert.ok(!existsSync(join(dir, "masters.kubeconfig")));
      await new Promise((r) => setTimeout(r, 500));
      for (const watch of watches) assert.deepEqual(watch.seen, []);
    } finally {
      for (const watch of watches) watch.stop();
    }
    for (const cluster of clusters) assert.deepEqual(await requestsOf(testKubeConfig(cluster), intruder), []);
  });

  it("names an unreachable cluster and requests nothing anywhere", async () => {
    const user = uniqueName("unreached");
    const broken = readFileSync(kubeconfigPath("edge-1"), "utf8").replace(
      /server: .*/,
      `server: https://127.0.0.1:${await freePort()}`,
    );
    const brokenPath = join(dir, "broken.kubeconfig");
    writeFileSync(brokenPath, broken, { mode: 0o600 });
    const watch = await watchRequests(testKubeConfig("home"), user);
    const out = join(dir, "unreached.kubeconfig");
    try {
      const result = await tenantry([
        "user",
        "certificate",
        user,
        "--tenant",
        tenant,
        "--cluster",
        "home",
        "--cluster",
        "edge-9",
        "--kubeconfig",
        `home=${kubeconfigPath("home")}`,
        "--kubeconfig",
        `edge-9=${brokenPath}`,
        "-o",
        out,
      ]);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /cluster "edge-9": .*ECONNREFUSED/);
      assert.doesNotMatch(result.stderr, /cluster "home":/);
      assert.ok(!existsSync(out), "no kubeconfig written");
      assert.deepEqual(watch.seen, []);
    } finally {
      watch.stop();
    }
  });

  it("names a cluster that refuses the request and deletes the requests in the others", async () => {
    const user = uniqueName("halfway");
    // An edge-1 identity that may read namespaces but not create CertificateSigningRequests.
    const reader = await testUser(uniqueName("ns-reader"), [], "edge-1");
    const rbac = testKubeConfig("edge-1").makeApiClient(RbacAuthorizationV1Api);
    const role = uniqueName("ns-reader");
    await rbac.createClusterRole({
      body: {
        metadata: { name: role },
        rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["list"] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: role },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: reader.name }],
      },
    });
    const watch = await watchRequests(testKubeConfig("home"), user);
    const out = join(dir, "halfway.kubeconfig");
    try {
      const result = await tenantry([
        "user",
        "certificate",
        user,
        "--tenant",
        tenant,
        "--cluster",
        "home",
        "--cluster",
        "edge-1",
        "--kubeconfig",
        `home=${kubeconfigPath("home")}`,
        "--kubeconfig",
        `edge-1=${reader.kubeconfigPath}`,
        "-o",
        out,
      ]);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /cluster "edge-1": HTTP 403: .*certificatesigningrequests/);
      assert.doesNotMatch(result.stderr, /cluster "home":/);
      assert.ok(!existsSync(out), "no kubeconfig written");
      assert.deepEqual(await requestsOf(testKubeConfig("home"), user), []);
      process.stderr.write(`requests created in home before edge-1 failed: ${watch.seen.length}\n`);
    } finally {
      watch.stop();
      await rbac.deleteClusterRoleBinding({ name: role }).catch(() => {});
      await rbac.deleteClusterRole({ name: role }).catch(() => {});
    }
  });
});
