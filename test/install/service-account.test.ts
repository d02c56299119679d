/**
 * tenantry with nothing but the chart's ServiceAccount: on a cluster of its own, the chart's CRDs,
 * ServiceAccount and RBAC are applied as `helm install` would, a token for the ServiceAccount comes
 * from the TokenRequest API, and `tenantry run` starts with a kubeconfig holding only that token.
 * Tenants, namespaces their owners create, and built-in logins must work: the chart's RBAC is
 * sufficient for what the code does.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { parseAllDocuments, stringify } from "yaml";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import {
  ClusterHarness,
  type ClusterState,
  ensureHelm,
  webhookClientCaFile,
} from "../../src/localcluster/index.js";
import { eventually } from "../support/eventually.js";
import { kubectl, runCommand } from "../support/kubectl.js";

const root = join(import.meta.dirname, "..", "..");
const chart = join(root, "deploy", "helm", "tenantry");
const NAMESPACE = "tenantry-system";
const SERVICE_ACCOUNT = "tenantry";
/** What `helm install` creates that tenantry's own credentials depend on. */
const IDENTITY_KINDS = new Set([
  "CustomResourceDefinition",
  "ServiceAccount",
  "ClusterRole",
  "ClusterRoleBinding",
  "Role",
  "RoleBinding",
]);

let dir: string;
let harness: ClusterHarness;
let cluster: ClusterState;
let admin: ClusterClient;
let tenantry: ChildProcess | undefined;
let output = "";
let running: { accessUrl: string } | undefined;

/** HTTPS POST with tenantry's CA; resolves with status and parsed body. */
function post(
  url: string,
  body: unknown,
  caPem: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: "POST", ca: caPem, headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

describe("tenantry as the chart's ServiceAccount", { timeout: 15 * 60_000 }, () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tenantry-install-"));
    harness = new ClusterHarness({ dir, log: () => {} });
    const { helm } = await ensureHelm();
    [cluster] = (await harness.up([{ name: "install", nodes: 1 }])) as [ClusterState];
    admin = loadClusterClient(cluster.name, cluster.kubeconfig);
    await admin.core.createNamespace({ body: { metadata: { name: NAMESPACE } } });

    const rendered = await runCommand(helm, [
      "template",
      "tenantry",
      chart,
      "--namespace",
      NAMESPACE,
      "--include-crds",
      // Required by the chart: what kube-apiserver presents to webhooks, and where it calls from.
      "--set-file",
      `apiServerClient.caBundle=${webhookClientCaFile(cluster)}`,
      "--set",
      "networkPolicy.controlPlane[0].ipBlock.cidr=127.0.0.1/32",
    ]);
    assert.equal(rendered.code, 0, rendered.stderr);
    const identityObjects = parseAllDocuments(rendered.stdout)
      .map((d) => d.toJS() as { kind: string } | null)
      .filter((o) => o && IDENTITY_KINDS.has(o.kind));
    // The local cluster's DNS set-up installed the ServiceImport CRD already (CoreDNS's multicluster
    // zone lists it), as a cluster's DNS add-on would; helm leaves an existing CRD alone, and this
    // server-side apply takes it over instead of failing on the other manager's fields.
    const applied = await kubectl(
      cluster.kubeconfig,
      ["apply", "--server-side", "--force-conflicts", "--field-manager=helm", "-f", "-"],
      identityObjects.map((o) => `---\n${stringify(o)}`).join(""),
    );
    assert.equal(applied.code, 0, applied.stderr);

    const token = await admin.core.createNamespacedServiceAccountToken({
      name: SERVICE_ACCOUNT,
      namespace: NAMESPACE,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const apiServer = admin.kubeConfig.getCurrentCluster()!;
    const kubeconfig = join(dir, "tenantry-sa.kubeconfig");
    await writeFile(
      kubeconfig,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          {
            name: "install",
            cluster: { server: apiServer.server, "certificate-authority-data": apiServer.caData },
          },
        ],
        users: [{ name: "tenantry", user: { token: token.status?.token } }],
        contexts: [
          { name: "install", context: { cluster: "install", user: "tenantry", namespace: NAMESPACE } },
        ],
        "current-context": "install",
      }),
      { mode: 0o600 },
    );

    tenantry = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(root, "src/cli/main.ts"),
        "run",
        "--kubeconfig",
        kubeconfig,
        "--cluster",
        "install",
        "--webhook-client-ca",
        webhookClientCaFile(cluster),
      ],
      { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
    );
    const collect = (c: Buffer) => {
      output += c.toString();
    };
    tenantry.stdout?.on("data", collect);
    tenantry.stderr?.on("data", collect);
    running = await eventually(
      () => {
        if (tenantry?.exitCode !== null) throw new Error(`tenantry exited early:\n${output.slice(-4000)}`);
        const line = output.split("\n").find((l) => l.includes('"tenantry is running"'));
        if (!line) throw new Error(`tenantry is not running yet:\n${output.slice(-2000)}`);
        return JSON.parse(line) as { accessUrl: string };
      },
      { timeoutMs: 180_000, intervalMs: 500 },
    );
  });

  after(async () => {
    if (tenantry && tenantry.exitCode === null) {
      tenantry.kill("SIGTERM");
      await once(tenantry, "exit");
    }
    await harness?.reset().catch(() => {});
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("runs with no permission error", () => {
    assert.doesNotMatch(output, /forbidden/i, output.slice(-4000));
  });

  it("reconciles a tenant and admits a namespace its owner creates", async () => {
    const custom = admin.kubeConfig.makeApiClient(CustomObjectsApi);
    await custom.createClusterCustomObject({
      group: "tenantry.dev",
      version: "v1alpha1",
      plural: "tenants",
      body: {
        apiVersion: "tenantry.dev/v1alpha1",
        kind: "Tenant",
        metadata: { name: "acme" },
        spec: { owners: [{ kind: "User", name: "alice" }], namespaces: [{ name: "dev" }] },
      },
    });
    await eventually(
      async () => {
        const ns = await admin.core.readNamespace({ name: "acme-dev" });
        assert.equal(ns.metadata?.labels?.["tenantry.dev/tenant"], "acme");
      },
      { timeoutMs: 60_000 },
    );
    await eventually(
      async () => {
        const created = await kubectl(cluster.kubeconfig, [
          "--as",
          "alice",
          "create",
          "namespace",
          "acme-extra",
        ]);
        assert.equal(created.code, 0, created.stderr);
      },
      { timeoutMs: 60_000 },
    );
    const extra = await admin.core.readNamespace({ name: "acme-extra" });
    assert.equal(extra.metadata?.labels?.["tenantry.dev/tenant"], "acme");
    await eventually(
      async () => {
        const status = (await custom.getClusterCustomObjectStatus({
          group: "tenantry.dev",
          version: "v1alpha1",
          plural: "tenants",
          name: "acme",
        })) as { status?: { namespaces?: string[]; conditions?: { type: string; status: string }[] } };
        assert.deepEqual(status.status?.namespaces, ["acme-dev", "acme-extra"]);
        assert.equal(status.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
      },
      { timeoutMs: 60_000 },
    );
  });

  it("logs in a built-in user, who gets a token for their tenant", async () => {
    const created = await runCommand(
      process.execPath,
      [
        "--import",
        "tsx",
        join(root, "src/cli/main.ts"),
        "user",
        "create",
        "lou",
        "--tenant",
        "acme",
        "--kubeconfig",
        cluster.kubeconfig,
      ],
      "lou-password-1\n",
    );
    assert.equal(created.code, 0, created.stderr);
    const secret = await admin.core.readNamespacedSecret({
      name: "tenantry-webhook-tls",
      namespace: NAMESPACE,
    });
    const caPem = Buffer.from(secret.data!["ca.crt"]!, "base64").toString();
    const login = await eventually(async () => {
      const answer = await post(
        `${running!.accessUrl}/identity/v1/login`,
        { username: "lou", password: "lou-password-1" },
        caPem,
      );
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return answer.body;
    });
    assert.equal(typeof login.token, "string");
    assert.ok((login.namespaces as string[]).includes("acme-dev"), JSON.stringify(login));
  });

  it("once tenantry stops, administrators and the system still work; a tenant user is refused", async () => {
    tenantry!.kill("SIGTERM");
    await once(tenantry!, "exit");
    const pod = (namespace: string, name: string) =>
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace },
        spec: { containers: [{ name: "main", image: "registry.k8s.io/pause:3.10" }] },
      });
    // A new namespace is usable only after kube-controller-manager put its default ServiceAccount there.
    const created = await kubectl(cluster.kubeconfig, ["create", "namespace", "ops"]);
    assert.equal(created.code, 0, created.stderr);
    for (const namespace of ["ops", "acme-dev"]) {
      await eventually(async () => {
        const applied = await kubectl(cluster.kubeconfig, ["create", "-f", "-"], pod(namespace, "admin-pod"));
        assert.equal(applied.code, 0, applied.stderr);
      });
    }
    const refused = await kubectl(
      cluster.kubeconfig,
      ["--as", "alice", "create", "-f", "-"],
      pod("acme-dev", "tenant-pod"),
    );
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /failed calling webhook "[\w.-]+\.tenantry\.dev"/);
    assert.match(refused.stderr, /connection refused/);
  });
});
