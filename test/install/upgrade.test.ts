/**
 * Upgrading from the chart's previous version with tenants in place. There is no published
 * release yet: the previous version is tenantry as merged with its chart (PREVIOUS_COMMIT), taken
 * from git (`git archive`) — its chart installed with `helm install`, its code run as `tenantry run`.
 * Tenants, their namespaces and quotas are made under it; then `helm upgrade` to this chart and
 * this tenantry. Nothing may be lost, and the upgraded tenantry must keep working.
 *
 * No CRD conversion is involved: every CRD serves one version, v1alpha1, and since
 * PREVIOUS_COMMIT they changed only by new kinds (MonitorRule, the backup kinds). Helm never
 * upgrades a chart's crds/, so the new kinds come from tenantry, which applies its CRDs at start.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ApiextensionsV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { ALL_CRDS } from "../../src/app/crds.js";
import { diagnose } from "../../src/app/doctor.js";
import { leaderLeases } from "../../src/app/tenantry.js";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import {
  ClusterHarness,
  type ClusterState,
  ensureHelm,
  webhookClientCaFile,
} from "../../src/localcluster/index.js";
import { eventually } from "../support/eventually.js";
import { kubectl, runCommand } from "../support/kubectl.js";

/** tenantry when its Helm chart was merged: the version this one upgrades from. */
const PREVIOUS_COMMIT = "7894f8284b4de7eb9bdedc16a1b4ee1dc9949a4d";
const root = join(import.meta.dirname, "..", "..");
const NAMESPACE = "tenantry-system";
const TENANTS = { acme: ["dev", "prod"], globex: ["web"] } as const;
const tenants = { group: "tenantry.dev", version: "v1alpha1", plural: "tenants" };
const quotas = { group: "tenantry.dev", version: "v1alpha1", plural: "tenantresourcequotas" };

let dir: string;
let previous: string;
let helm: string;
let harness: ClusterHarness;
let cluster: ClusterState;
let admin: ClusterClient;
let custom: CustomObjectsApi;
let tenantry: ChildProcess | undefined;
let output = "";

/** `tenantry run` from `checkout` (a tree with src/ and node_modules), until it says it runs. */
async function startTenantry(checkout: string): Promise<void> {
  output = "";
  tenantry = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(checkout, "src/cli/main.ts"),
      "run",
      "--kubeconfig",
      cluster.kubeconfig,
      "--cluster",
      "upgrade",
      // The previous tenantry knew no such flag: it answered any caller.
      ...(checkout === root ? ["--webhook-client-ca", webhookClientCaFile(cluster)] : []),
    ],
    { cwd: checkout, stdio: ["ignore", "pipe", "pipe"] },
  );
  const collect = (c: Buffer) => {
    output += c.toString();
  };
  tenantry.stdout?.on("data", collect);
  tenantry.stderr?.on("data", collect);
  await eventually(
    () => {
      if (tenantry?.exitCode !== null) throw new Error(`tenantry exited early:\n${output.slice(-4000)}`);
      assert.ok(
        output.includes('"tenantry is running"'),
        `tenantry is not running yet:\n${output.slice(-2000)}`,
      );
    },
    { timeoutMs: 240_000, intervalMs: 500 },
  );
}

async function stopTenantry(): Promise<void> {
  if (tenantry && tenantry.exitCode === null) {
    tenantry.kill("SIGTERM");
    await once(tenantry, "exit");
  }
  tenantry = undefined;
}

interface State {
  tenants: Record<string, { spec: unknown; namespaces: string[] }>;
  namespaces: Record<string, string | undefined>;
  quotas: Record<string, unknown>;
}

/** What must survive the upgrade: each tenant's spec and namespaces, the namespaces' tenant, the quotas' limits. */
async function snapshot(): Promise<State> {
  const state: State = { tenants: {}, namespaces: {}, quotas: {} };
  const list = (await custom.listClusterCustomObject(tenants)) as {
    items: { metadata: { name: string }; spec: unknown; status?: { namespaces?: string[] } }[];
  };
  for (const t of list.items)
    state.tenants[t.metadata.name] = { spec: t.spec, namespaces: t.status?.namespaces ?? [] };
  for (const ns of (await admin.core.listNamespace({ labelSelector: "tenantry.dev/tenant" })).items) {
    state.namespaces[ns.metadata!.name!] = ns.metadata?.labels?.["tenantry.dev/tenant"];
  }
  const q = (await custom.listClusterCustomObject(quotas)) as {
    items: { metadata: { name: string }; spec: { hard?: unknown } }[];
  };
  for (const item of q.items) state.quotas[item.metadata.name] = item.spec.hard;
  return state;
}

/** `owner` creates namespace `name` with kubectl, once tenantry's webhooks admit it. */
async function ownerCreatesNamespace(owner: string, name: string): Promise<void> {
  await eventually(
    async () => {
      const created = await kubectl(cluster.kubeconfig, ["--as", owner, "create", "namespace", name]);
      assert.equal(created.code, 0, created.stderr);
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  );
}

async function tenantReady(name: string): Promise<void> {
  const tenant = (await custom.getClusterCustomObject({ ...tenants, name })) as {
    status?: { conditions?: { type: string; status: string }[] };
  };
  assert.equal(
    tenant.status?.conditions?.find((c) => c.type === "Ready")?.status,
    "True",
    `tenant ${name} is not Ready`,
  );
}

describe("upgrading from the previous chart and tenantry with tenants in place", {
  timeout: 20 * 60_000,
}, () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "tenantry-upgrade-"));
    previous = join(dir, "previous");
    await mkdir(previous);
    const archive = await runCommand("sh", [
      "-c",
      `git archive ${PREVIOUS_COMMIT} src deploy package.json | tar -x -C ${previous}`,
    ]);
    assert.equal(archive.code, 0, archive.stderr);
    // Its dependencies were a subset of today's: the same node_modules serves it.
    await symlink(join(root, "node_modules"), join(previous, "node_modules"));
    ({ helm } = await ensureHelm());
    harness = new ClusterHarness({ dir: join(dir, "clusters"), log: () => {} });
    [cluster] = (await harness.up([{ name: "upgrade", nodes: 1 }])) as [ClusterState];
    admin = loadClusterClient(cluster.name, cluster.kubeconfig);
    custom = admin.kubeConfig.makeApiClient(CustomObjectsApi);
  });

  after(async () => {
    await stopTenantry();
    await harness?.reset().catch(() => {});
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("installs the previous chart, and the previous tenantry provisions tenants under it", async () => {
    const installed = await runCommand(helm, [
      "install",
      "tenantry",
      join(previous, "deploy/helm/tenantry"),
      "--namespace",
      NAMESPACE,
      "--create-namespace",
      "--kubeconfig",
      cluster.kubeconfig,
    ]);
    assert.equal(installed.code, 0, installed.stderr);
    await startTenantry(previous);
    for (const [name, namespaces] of Object.entries(TENANTS)) {
      await custom.createClusterCustomObject({
        ...tenants,
        body: {
          apiVersion: "tenantry.dev/v1alpha1",
          kind: "Tenant",
          metadata: { name },
          spec: {
            owners: [{ kind: "User", name: `${name}-owner` }],
            namespaces: namespaces.map((n) => ({ name: n })),
            namespaceQuota: 5,
            quota: { hard: { pods: "20", "requests.cpu": "4" } },
          },
        },
      });
    }
    // An owner's own namespace, admitted by the previous webhooks.
    await ownerCreatesNamespace("acme-owner", "acme-extra");
    await eventually(
      async () => {
        for (const name of Object.keys(TENANTS)) await tenantReady(name);
        const state = await snapshot();
        assert.deepEqual(Object.keys(state.namespaces).sort(), [
          "acme-dev",
          "acme-extra",
          "acme-prod",
          "globex-web",
        ]);
        // The snapshot taken before the upgrade must be settled: each tenant's status lists its namespaces.
        for (const [name, tenant] of Object.entries(state.tenants)) {
          const labelled = Object.keys(state.namespaces).filter((ns) => state.namespaces[ns] === name);
          assert.deepEqual(
            [...tenant.namespaces].sort(),
            labelled.sort(),
            `tenant ${name}: status lists its namespaces`,
          );
        }
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
  });

  it("upgrades with helm upgrade and the new tenantry: no tenant, namespace or quota lost, and it keeps working", async () => {
    const before = await snapshot();
    await stopTenantry();
    const upgraded = await runCommand(helm, [
      "upgrade",
      "tenantry",
      join(root, "deploy/helm/tenantry"),
      "--namespace",
      NAMESPACE,
      // New since the previous chart: what kube-apiserver presents to webhooks, and where it calls from.
      "--set-file",
      `apiServerClient.caBundle=${webhookClientCaFile(cluster)}`,
      "--set",
      "networkPolicy.controlPlane[0].ipBlock.cidr=127.0.0.1/32",
      "--kubeconfig",
      cluster.kubeconfig,
    ]);
    assert.equal(upgraded.code, 0, upgraded.stderr);
    const history = await runCommand(helm, [
      "history",
      "tenantry",
      "--namespace",
      NAMESPACE,
      "--kubeconfig",
      cluster.kubeconfig,
      "-o",
      "json",
    ]);
    const revisions = JSON.parse(history.stdout) as { revision: number; status: string }[];
    assert.deepEqual(
      revisions.map((r) => [r.revision, r.status]),
      [
        [1, "superseded"],
        [2, "deployed"],
      ],
    );

    await startTenantry(root);
    // The kinds added since are installed by tenantry itself (Helm leaves crds/ alone on upgrade).
    const crds = await admin.kubeConfig.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition();
    const names = new Set(crds.items.map((c) => c.metadata!.name));
    assert.deepEqual(
      ALL_CRDS.map((c) => c.metadata.name).filter((n) => !names.has(n)),
      [],
    );
    await eventually(
      async () => {
        for (const name of Object.keys(TENANTS)) await tenantReady(name);
        const after = await snapshot();
        // Fields added since are filled in with their defaults by the new schema; everything else is kept.
        for (const [name, tenant] of Object.entries(after.tenants)) {
          const spec = tenant.spec as Record<string, unknown>;
          assert.deepEqual(spec.runtimeAccess, { owners: "View" }, `tenant ${name}: runtimeAccess defaulted`);
          delete spec.runtimeAccess;
        }
        assert.deepEqual(after, before);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    // The upgraded webhooks admit an owner's namespace and count it against the tenant.
    await ownerCreatesNamespace("globex-owner", "globex-new");
    const ns = await admin.core.readNamespace({ name: "globex-new" });
    assert.equal(ns.metadata?.labels?.["tenantry.dev/tenant"], "globex");
    // The new tenantry leads its capabilities once it holds the previous one's Lease: at once when
    // that one released it, else once it expires (15 s).
    await eventually(
      async () => {
        const findings = await diagnose({
          client: admin,
          namespace: NAMESPACE,
          crds: ALL_CRDS,
          leaderLeases: leaderLeases(),
        });
        assert.deepEqual(
          findings.filter((f) => f.status === "error"),
          [],
        );
      },
      { timeoutMs: 90_000, intervalMs: 2000 },
    );
  });
});
