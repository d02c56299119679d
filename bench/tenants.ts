/**
 * Tenants at scale: provisioning, admission latency, quota under contention, and the same
 * workload side by side with Capsule. Starts its own local clusters in a temporary folder, runs
 * tenantry in this process (side by side: in a process of its own, like Capsule), prints one table
 * per measurement, and removes everything it started.
 *
 * Run: npm run bench:tenants [-- --tenants N] [--compare-tenants T] [--webhook-connections C] [--skip-capsule] [--keep]
 *        [--parts provisioning,contention,admission,side-by-side] [--profile FILE-PREFIX]
 * --profile samples this process's CPU (tenantry runs in it) during provisioning and during the
 * wait for quiet, writes FILE-PREFIX-provisioning.cpuprofile and -quiet.cpuprofile, and prints the
 * top functions of each.
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import type { Profiler } from "node:inspector";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import {
  AdmissionregistrationV1Api,
  AuthorizationV1Api,
  type KubernetesObject,
} from "@kubernetes/client-node";
import { pino } from "pino";
import { type RunningTenantry, startTenantry } from "../src/app/tenantry.js";
import { applyObject, type ClusterClient, loadClusterClient } from "../src/kube/index.js";
import {
  ClusterHarness,
  type ClusterSpec,
  type ClusterState,
  webhookClientCaFile,
} from "../src/localcluster/index.js";
import { TENANTS_API_VERSION } from "../src/tenants/index.js";
import { startTenantryProcess } from "../testing/index.js";
import { type Cell, loadAverage, ms, percentile, printTable, seconds } from "./support/report.js";
import { apiserverLoad, drain, podCreateChain, webhookLoad } from "./tenants/admission.js";
import {
  CAPSULE_MODULE,
  CapsuleUnavailable,
  ensureCapsule,
  pinnedCapsuleVersion,
} from "./tenants/capsule-build.js";
import {
  CAPSULE_USER_GROUP,
  capsuleTenant,
  type RunningCapsule,
  startCapsule,
} from "./tenants/capsule-run.js";
import { contention, contentionRow } from "./tenants/contention.js";
import {
  idlePercent,
  type ProfiledFunction,
  startCpuProfile,
  summarizeProfile,
} from "./tenants/cpu-profile.js";
import type { LoadResult } from "./tenants/loadgen.js";
import {
  newOwnerFirstNamespace,
  type ProvisioningResult,
  provision,
  tenantName,
} from "./tenants/provisioning.js";
import { type SideBySideResult, sideBySide } from "./tenants/side-by-side.js";
import { clusterCa, clusterUser } from "./tenants/users.js";
import {
  customObjects,
  NAMESPACES,
  ownerOf,
  type Settled,
  settle,
  tenantObject,
  tenantsResource,
  UNTHROTTLED_APISERVER_FLAGS,
} from "./tenants/workload.js";

const { values: args } = parseArgs({
  options: {
    tenants: { type: "string", default: "1000" },
    "compare-tenants": { type: "string" },
    "skip-capsule": { type: "boolean", default: false },
    "webhook-connections": { type: "string", default: "128" },
    keep: { type: "boolean", default: false },
    parts: { type: "string", default: "provisioning,contention,admission,side-by-side" },
    profile: { type: "string" },
  },
});
const PARTS = new Set(args.parts.split(","));
const TENANTS = Number(args.tenants);
const COMPARE_TENANTS = Number(args["compare-tenants"] ?? Math.min(TENANTS, 100));
const WEBHOOK_CONNECTIONS = Number(args["webhook-connections"]);
if (
  !Number.isInteger(TENANTS) ||
  TENANTS < 1 ||
  !Number.isInteger(COMPARE_TENANTS) ||
  COMPARE_TENANTS < 1 ||
  !Number.isInteger(WEBHOOK_CONNECTIONS) ||
  WEBHOOK_CONNECTIONS < 1
) {
  process.stderr.write(
    "usage: bench/tenants.ts [--tenants N] [--compare-tenants T] [--webhook-connections C] [--skip-capsule] [--keep] [--parts …] [--profile FILE-PREFIX]\n",
  );
  process.exit(2);
}

/** Pod creates through the API server: well below the webhook rates, for context. */
const E2E_RATE = 5;

const progress = (line: string) =>
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

function pidOf(state: ClusterState, component: string): number {
  const proc = state.processes.find((p) => p.component === component);
  if (!proc) throw new Error(`${state.name}: no ${component} process`);
  return proc.pid;
}

async function startCluster(harness: ClusterHarness, spec: ClusterSpec): Promise<ClusterState> {
  progress(`starting local cluster ${spec.name}`);
  const [state] = await harness.up([spec]);
  return state!;
}

async function runTenantry(state: ClusterState, dir: string): Promise<RunningTenantry> {
  const logger = pino(
    { level: "warn" },
    pino.destination({ dest: join(dir, `tenantry-${state.name}.log`), sync: false }),
  );
  const tenantry = await startTenantry({
    cluster: state.name,
    kubeconfig: state.kubeconfig,
    webhookClientCa: await readFile(webhookClientCaFile(state), "utf8"),
    logger,
  });
  const deadline = Date.now() + 60_000;
  while (!tenantry.isLeader()) {
    if (Date.now() > deadline) throw new Error("tenantry did not start its controllers within 60 s");
    await sleep(100);
  }
  return tenantry;
}

function loadRow(label: string, rate: number, r: LoadResult): Cell[] {
  return [
    label,
    String(rate),
    (r.completed / (r.elapsedMs / 1000)).toFixed(0),
    String(r.completed),
    `${r.allowed}/${r.denied}`,
    ms(percentile(r.latencies, 50)),
    ms(percentile(r.latencies, 99)),
    String(r.errors),
  ];
}

function printProfile(phase: string, profile: Profiler.Profile): void {
  const functions = summarizeProfile(profile);
  const lines = (list: ProfiledFunction[]) =>
    list.map(
      (f) =>
        `  ${f.selfPct.toFixed(1).padStart(5)}% self ${f.totalPct.toFixed(1).padStart(5)}% total  ${f.name}`,
    );
  process.stdout.write(
    [
      `\nCPU profile, ${phase} (this process: tenantry and the benchmark's watch), ${((profile.endTime - profile.startTime) / 1e6).toFixed(0)} s, idle ${idlePercent(profile).toFixed(0)}% of samples; shares below are of the busy samples`,
      " by self time:",
      ...lines([...functions].sort((a, b) => b.selfPct - a.selfPct).slice(0, 30)),
      " by total time (src/ only):",
      ...lines(functions.filter((f) => f.name.includes(" src/")).slice(0, 30)),
      "",
    ].join("\n"),
  );
}

function printProvisioning(
  p: ProvisioningResult,
  settled: Settled,
  first: { ms: number; attempts: number; lastError: string },
): void {
  printTable(
    "Provisioning: tenants × 3 declared namespaces, from create to Ready",
    [
      "tenants",
      "ready",
      "total s",
      "tenants/s",
      "namespaces/s",
      "p50 s",
      "p99 s",
      "max s",
      "all isolated s",
      "tenantry RSS MiB before",
      "tenantry RSS MiB peak",
      "kube-apiserver RSS MiB peak",
      "etcd RSS MiB peak",
      "CPU s tenantry / apiserver / etcd",
      "quiet after s",
      "new owner's first namespace s",
    ],
    [
      [
        String(p.tenants),
        String(p.ready),
        seconds(p.totalMs),
        (p.ready / (p.totalMs / 1000)).toFixed(1),
        ((p.ready * NAMESPACES.length) / (p.totalMs / 1000)).toFixed(1),
        seconds(p.p50Ms),
        seconds(p.p99Ms),
        seconds(p.maxMs),
        seconds(p.isolatedMs),
        p.rssBeforeMiB,
        p.rssPeakMiB,
        p.apiserverPeakMiB,
        p.etcdPeakMiB,
        [p.cpuSeconds.tenantry, p.cpuSeconds.apiserver, p.cpuSeconds.etcd]
          .map((c) => c.toFixed(0))
          .join(" / "),
        seconds(settled.ms),
        seconds(first.ms),
      ],
    ],
    [
      "Each Tenant: 1 owner, 3 declared namespaces, a TenantResourceQuota (pods, requests.cpu, requests.memory), a LimitRange;",
      "tenantry creates per namespace the namespace, RoleBinding tenantry-owners, NetworkPolicy tenantry-isolation, LimitRange.",
      "Creates: 32 in flight. Per tenant: from its create request until a watch on Tenants shows Ready=True for its generation",
      "with 3 namespaces; total: first create to last Ready. RSS sampled every 0.5 s: tenantry's process (controllers, webhooks",
      "and this benchmark's watch), kube-apiserver and etcd. Quiet after: from the last Ready until no Tenant or TenantResourceQuota",
      "changed for 10 s (status updates re-queue tenants); the next measurements start then.",
      "CPU: seconds of CPU from the first create to the last Ready (tenantry's includes this benchmark's watch and creates).",
      "New owner: after the controllers went quiet, one more tenant is created; its owner (a client certificate) retries a",
      `namespace create every 100 ms until admitted: ${first.attempts} attempts${first.lastError ? `; last refusal: ${first.lastError.slice(0, 160)}` : ""}.`,
      "All isolated: first create until every tenant namespace has its NetworkPolicy tenantry-isolation (watched).",
      `Load average (1, 5, 15 min) when provisioning ended: ${p.loadAverage}; at the end: ${loadAverage()}.`,
      `Changes while waiting for quiet: ${settled.writes.map(([what, n]) => `${n}× ${what}`).join("; ") || "none"}.`,
      ...(p.createErrors.length
        ? [`Create errors: ${p.createErrors.length}, e.g. ${p.createErrors[0]}`]
        : []),
    ],
  );
}

async function tenantryOnOneCluster(harness: ClusterHarness, dir: string): Promise<void> {
  const state = await startCluster(harness, {
    name: "bench",
    nodes: 3,
    extraApiserverFlags: UNTHROTTLED_APISERVER_FLAGS,
  });
  let tenantry: RunningTenantry | undefined;
  let profile: Awaited<ReturnType<typeof startCpuProfile>> | undefined;
  try {
    tenantry = await runTenantry(state, dir);
    const client = loadClusterClient("bench-client", state.kubeconfig);
    const apiserverPid = pidOf(state, "kube-apiserver");

    // 1. Provisioning
    progress(`provisioning ${TENANTS} tenants × ${NAMESPACES.length} namespaces`);
    profile = args.profile ? await startCpuProfile() : undefined;
    const p = await provision({
      client,
      count: TENANTS,
      concurrency: 32,
      apiserverPid,
      etcdPid: pidOf(state, "etcd"),
      timeoutMs: Math.max(20 * 60_000, TENANTS * 400),
    });
    // Summarized at the end: summarizing blocks this process, whose controllers must keep their Leases.
    const profiles: [string, Profiler.Profile][] = [];
    if (profile) {
      profiles.push(["provisioning", await profile.stop(`${args.profile}-provisioning.cpuprofile`)]);
      profile = await startCpuProfile();
    }
    progress("waiting for tenantry's controllers to go quiet");
    const settled = await settle(client, 10_000, 5 * 60_000);
    if (profile) profiles.push(["waiting for quiet", await profile.stop(`${args.profile}-quiet.cpuprofile`)]);
    profile = undefined;
    const ca = await clusterCa(harness.dir, state.name);
    progress("a new tenant's owner creates a first namespace");
    const newcomer = "newcomer";
    const first = await newOwnerFirstNamespace({
      client,
      owner: await clusterUser({
        ca,
        cluster: state.name,
        server: state.server,
        name: ownerOf(newcomer),
        dir,
      }),
      tenant: newcomer,
      timeoutMs: 120_000,
    });
    printProvisioning(p, settled, first);
    for (const [phase, recorded] of profiles) printProfile(phase, recorded);
    if (!PARTS.has("contention") && !PARTS.has("admission")) return;

    // 3. Quota under contention (printed after admission)
    // Measured before the admission load, whose quota writes would keep the controllers busy.
    const contentionRows: Cell[][] = [];
    const contentionNotes: string[] = [];
    for (const [creates, limit] of PARTS.has("contention")
      ? ([
          [200, 100],
          [1000, 500],
        ] as const)
      : []) {
      progress(`quota: ${creates} concurrent pod creates against a limit of ${limit}`);
      try {
        const r = await contention({ client, ca, cluster: state.name, dir, creates, limit });
        contentionRows.push(contentionRow(r));
        if (r.errorSamples.length)
          contentionNotes.push(`Errors (${creates} creates), e.g.: ${r.errorSamples[0]!.slice(0, 240)}`);
      } catch (err) {
        contentionNotes.push(`${creates} creates vs ${limit}: not measured: ${(err as Error).message}`);
      }
    }
    try {
      if (!PARTS.has("admission")) throw new Error("left out (--parts)");
      // 2. Admission latency
      const ready = Array.from({ length: p.ready || TENANTS }, (_, i) => tenantName(i));
      const targets = NAMESPACES.flatMap((ns) =>
        ready.map((t) => ({ namespace: `${t}-${ns}`, username: ownerOf(t) })),
      );
      const chain = await podCreateChain(
        client,
        {
          certPem: await readFile(state.webhookClient!.certFile, "utf8"),
          keyPem: await readFile(state.webhookClient!.keyFile, "utf8"),
        },
        targets[0]!,
      );
      const chainNames = [...chain.mutating, ...chain.validating].map((w) => w.name);
      progress(`admission: pod CREATE through ${chainNames.join(", ")}`);
      const rows: Cell[][] = [];
      for (const rate of [20, 200, 1000]) {
        progress(`admission: ${rate} requests/s for 10 s`);
        const r = await webhookLoad(chain, targets, rate, 10_000, WEBHOOK_CONNECTIONS);
        const drainedMs = await drain(chain, targets[0]!);
        rows.push([...loadRow("webhook server, direct", rate, r), seconds(drainedMs)]);
        for (const [name, samples] of Object.entries(r.perWebhook)) {
          rows.push([
            `  ${name}`,
            String(rate),
            "",
            String(samples.length),
            "",
            ms(percentile(samples, 50)),
            ms(percentile(samples, 99)),
            "",
            "",
          ]);
        }
        if (r.errorSamples.length) progress(`admission errors at ${rate}/s: ${r.errorSamples.join(" | ")}`);
      }
      const owners = await Promise.all(
        ready.slice(0, 20).map(async (t) => ({
          user: await clusterUser({ ca, cluster: state.name, server: state.server, name: ownerOf(t), dir }),
          namespaces: NAMESPACES.map((ns) => `${t}-${ns}`),
        })),
      );
      progress(`admission: pod creates through the API server, ${E2E_RATE}/s for 10 s`);
      const e2e = await apiserverLoad({
        server: state.server,
        caPem: ca.certPem,
        owners,
        rate: E2E_RATE,
        durationMs: 10_000,
      });
      rows.push([
        ...loadRow("API server, pod create as owner", E2E_RATE, e2e),
        seconds(await drain(chain, targets[0]!)),
      ]);
      if (e2e.errorSamples.length) progress(`API server errors: ${e2e.errorSamples.join(" | ")}`);
      printTable(
        "Admission latency: pod CREATE in a tenant namespace",
        [
          "path",
          "target/s",
          "achieved/s",
          "answered",
          "allowed/denied",
          "p50 ms",
          "p99 ms",
          "errors",
          "drained after s",
        ],
        rows,
        [
          "Webhook rows: AdmissionReview v1 bodies (pod CREATE by the namespace's owner) POSTed over HTTPS on loopback to tenantry's",
          "webhook server, open loop for 10 s, from a separate process; each pod goes through the entries kube-apiserver calls for",
          "it (rules, selectors and match conditions read from the cluster), mutating (patch applied) then validating; indented",
          `rows are single calls. Requests cycle over all ${targets.length} tenant namespaces. Webhooks: ${chainNames.join(", ") || "none"}.`,
          `At most ${WEBHOOK_CONNECTIONS} connections (--webhook-connections; kube-apiserver's own webhook client sets no limit);`,
          "latency counts from when a request was due, so queueing shows.",
          "Errors: no answer within 10 s (the webhook's timeoutSeconds) or not HTTP 200. Drained after: time until a probe was",
          "answered within 1 s again (the server keeps working on requests already given up on); the next step waits for it.",
          `API server row: real pod creates (kubectl-equivalent) by 20 owners with client certificates, ${E2E_RATE}/s for 10 s, open loop.`,
        ],
      );
    } catch (err) {
      process.stdout.write(`\nAdmission latency: not measured: ${(err as Error).message}\n`);
    }
    printTable(
      "Quota under contention: concurrent pod creates across 5 namespaces against one TenantResourceQuota",
      [
        "creates",
        "limit",
        "admitted",
        "pods exist",
        "overshoot",
        "denied",
        "errors",
        "admitted p50 ms",
        "admitted p99 ms",
        "denied p50 ms",
        "denied p99 ms",
        "wall s",
      ],
      contentionRows,
      [
        "All creates sent at once by the tenant owner (client certificate) through the API server, round-robin over the tenant's",
        "5 namespaces; limit = TenantResourceQuota hard pods. Overshoot = max(0, admitted − limit, pods that exist − limit).",
        "Denied = 403 with tenantry's quota message; errors = any other failure (e.g. webhook timeout). Latency per request.",
        ...contentionNotes,
      ],
    );
  } finally {
    // A profile left running (a step failed) would keep this process from exiting.
    await profile?.stop(`${args.profile}-unfinished.cpuprofile`).catch(() => {});
    await tenantry?.stop().catch((err) => progress(`stopping tenantry failed: ${err}`));
    await harness.reset(["bench"]).catch((err) => progress(`reset failed: ${err}`));
  }
}

/** Whether RBAC lets a tenant owner create namespaces (asked before any tenant exists). */
async function ownersMayCreateNamespaces(client: ClusterClient): Promise<boolean> {
  const review = await client.kubeConfig.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
    body: {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user: ownerOf("probe"),
        groups: [OWNERS_GROUP, "system:authenticated"],
        resourceAttributes: { verb: "create", resource: "namespaces" },
      },
    },
  });
  return review.status?.allowed === true;
}

/** Whether tenantry serves a webhook for namespace CREATE, through which owners' namespaces join their tenant. */
async function servesNamespaceWebhook(client: ClusterClient): Promise<boolean> {
  const api = client.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
  const selector = { labelSelector: "app.kubernetes.io/managed-by=tenantry" };
  const webhooks = [
    ...(await api.listMutatingWebhookConfiguration(selector)).items,
    ...(await api.listValidatingWebhookConfiguration(selector)).items,
  ].flatMap((c) => c.webhooks ?? []);
  return webhooks.some((w) =>
    (w.rules ?? []).some(
      (r) =>
        (r.resources ?? []).some((x) => x === "namespaces" || x === "*") &&
        (r.operations ?? []).some((o) => o === "CREATE" || o === "*"),
    ),
  );
}

function tenantryVersion(): string {
  try {
    const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "src"], { encoding: "utf8" }).trim();
    return `${commit}${dirty ? "+wt" : ""}`;
  } catch {
    return "working tree";
  }
}

const OWNERS_GROUP = "tenantry-bench-owners";

async function compareWithCapsule(harness: ClusterHarness, dir: string): Promise<void> {
  const tenants = Array.from({ length: COMPARE_TENANTS }, (_, i) => `s${String(i).padStart(4, "0")}`);
  const namespacesOf = (t: string) => NAMESPACES.map((n) => `${t}-${n}`);
  const rows: Cell[][] = [];
  const notes: string[] = [];
  const row = (name: string, version: string, by: string, quota: string, r: SideBySideResult): Cell[] => [
    name,
    version,
    by,
    quota,
    String(r.tenants),
    String(r.namespaces),
    String(r.complete),
    seconds(r.totalMs),
    (r.complete / (r.totalMs / 1000)).toFixed(1),
    seconds(r.p50Ms),
    seconds(r.p99Ms),
    r.rssPeakMiB,
  ];

  // tenantry, on a fresh cluster of its own
  let tenantryResult: SideBySideResult | undefined;
  {
    const state = await startCluster(harness, {
      name: "sbs-tenantry",
      nodes: 1,
      extraApiserverFlags: UNTHROTTLED_APISERVER_FLAGS,
    });
    let tenantry: { pid: number; stop(): Promise<void> } | undefined;
    try {
      // In a process of its own, so that its memory is its own.
      tenantry = await startTenantryProcess({
        cluster: state.name,
        kubeconfig: state.kubeconfig,
        webhookClientCaFile: webhookClientCaFile(state),
        logFile: join(dir, `tenantry-${state.name}.log`),
      });
      const client = loadClusterClient("sbs-tenantry-client", state.kubeconfig);
      const ownerPath = await servesNamespaceWebhook(client);
      const ca = await clusterCa(harness.dir, state.name);
      const granted = ownerPath && !(await ownersMayCreateNamespaces(client));
      if (granted) {
        // Owners need the right to create namespaces; where tenantry does not grant it, the benchmark does.
        await applyObject(client, {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRole",
          metadata: { name: "bench-namespace-creator" },
          rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["create"] }],
        } as KubernetesObject);
        await applyObject(client, {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name: "bench-namespace-creator" },
          roleRef: {
            apiGroup: "rbac.authorization.k8s.io",
            kind: "ClusterRole",
            name: "bench-namespace-creator",
          },
          subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: OWNERS_GROUP }],
        } as KubernetesObject);
      }
      const api = customObjects(client);
      progress(
        `side by side: tenantry, ${tenants.length} tenants, ${ownerPath ? "owner-created" : "declared"} namespaces`,
      );
      tenantryResult = await sideBySide({
        client,
        tenants,
        namespacesOf,
        ownerOf,
        timeoutMs: 10 * 60_000,
        contender: {
          ownerCreatesNamespaces: ownerPath,
          createTenant: async (name) => {
            await api.createClusterCustomObject({
              ...tenantsResource,
              body: ownerPath
                ? tenantObject(name, { namespaces: [], namespaceQuota: NAMESPACES.length })
                : tenantObject(name),
            });
          },
          owner: (t) =>
            clusterUser({
              ca,
              cluster: state.name,
              server: state.server,
              name: ownerOf(t),
              groups: [OWNERS_GROUP],
              dir,
            }),
          quota: { kind: "TenantResourceQuota", apiVersion: TENANTS_API_VERSION },
          pid: tenantry.pid,
        },
      });
      rows.push(
        row(
          "tenantry",
          tenantryVersion(),
          ownerPath ? "owner" : "declared",
          "TenantResourceQuota/tenant",
          tenantryResult,
        ),
      );
      if (!ownerPath) {
        notes.push(
          "tenantry serves no namespace webhook yet, so owners cannot create namespaces: its namespaces are declared in the",
          "Tenant and created by its controller (timed from the Tenant's create request).",
        );
      } else if (granted) {
        notes.push(
          `tenantry does not let owners create namespaces (RBAC): the benchmark binds a ClusterRole allowing it to group ${OWNERS_GROUP}.`,
        );
      }
      if (tenantryResult.errors.length)
        notes.push(`tenantry errors: ${tenantryResult.errors.length}, e.g. ${tenantryResult.errors[0]}`);
    } finally {
      await tenantry?.stop().catch((err) => progress(`stopping tenantry failed: ${err}`));
      await harness.reset(["sbs-tenantry"]).catch((err) => progress(`reset failed: ${err}`));
    }
  }

  // Capsule, built from its Go module, on another fresh cluster
  let capsuleResult: SideBySideResult | undefined;
  let capsuleVersion = await pinnedCapsuleVersion();
  if (args["skip-capsule"]) {
    notes.push("Capsule: skipped (--skip-capsule).");
  } else {
    try {
      progress(`building Capsule ${capsuleVersion} (cached after the first time)`);
      const build = await ensureCapsule();
      capsuleVersion = build.version;
      const state = await startCluster(harness, {
        name: "sbs-capsule",
        nodes: 1,
        extraApiserverFlags: UNTHROTTLED_APISERVER_FLAGS,
      });
      let capsule: RunningCapsule | undefined;
      try {
        const client = loadClusterClient("sbs-capsule-client", state.kubeconfig);
        capsule = await startCapsule({ build, client, kubeconfig: state.kubeconfig, dir, workers: 4 });
        const ca = await clusterCa(harness.dir, state.name);
        const api = customObjects(client);
        progress(
          `side by side: Capsule ${capsuleVersion}, ${tenants.length} tenants, owner-created namespaces`,
        );
        capsuleResult = await sideBySide({
          client,
          tenants,
          namespacesOf,
          ownerOf,
          timeoutMs: 10 * 60_000,
          contender: {
            ownerCreatesNamespaces: true,
            createTenant: async (name, owner) => {
              await api.createClusterCustomObject({
                group: "capsule.clastix.io",
                version: "v1beta2",
                plural: "tenants",
                body: capsuleTenant(name, owner, NAMESPACES.length),
              });
            },
            owner: (t) =>
              clusterUser({
                ca,
                cluster: state.name,
                server: state.server,
                name: ownerOf(t),
                groups: [CAPSULE_USER_GROUP],
                dir,
              }),
            quota: { kind: "ResourceQuota" },
            pid: capsule.pid,
          },
        });
        rows.push(row("Capsule", capsuleVersion, "owner", "ResourceQuota/namespace", capsuleResult));
        notes.push(
          `Capsule ${capsuleVersion}: manager built from ${CAPSULE_MODULE} (bench/capsule), run out of cluster with --workers=4,`,
          `webhooks from its chart on loopback with a certificate issued here: ${capsule.webhooks.join(", ")}.`,
        );
        if (capsuleResult.errors.length)
          notes.push(`Capsule errors: ${capsuleResult.errors.length}, e.g. ${capsuleResult.errors[0]}`);
      } finally {
        await capsule?.stop();
        await harness.reset(["sbs-capsule"]).catch((err) => progress(`reset failed: ${err}`));
      }
    } catch (err) {
      if (!(err instanceof CapsuleUnavailable)) throw err;
      rows.push([
        "Capsule",
        capsuleVersion,
        "owner",
        "ResourceQuota/namespace",
        String(tenants.length),
        String(tenants.length * NAMESPACES.length),
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
      ]);
      notes.push(
        `Capsule ${capsuleVersion} could not be built or run here. Command: ${err.command}`,
        `Error: ${err.output.replace(/\s*\n\s*/g, " ")}`,
      );
    }
  }
  const ratio =
    tenantryResult && capsuleResult && capsuleResult.complete === capsuleResult.namespaces
      ? (tenantryResult.totalMs / capsuleResult.totalMs).toFixed(2)
      : "n/a";
  printTable(
    "Side by side with Capsule: tenants created, then 3 namespaces each, until every namespace has RoleBinding, quota and NetworkPolicy",
    [
      "controller",
      "version",
      "namespaces by",
      "quota object",
      "tenants",
      "namespaces",
      "complete",
      "total s",
      "namespaces/s",
      "p50 s",
      "p99 s",
      "controller RSS MiB peak",
    ],
    rows,
    [
      "Each on a fresh local cluster (1 node) of its own. Tenants: 1 owner, quota (pods, requests.cpu, requests.memory), a",
      "LimitRange, ingress isolation to the tenant's own namespaces. Owners (client certificates signed by the cluster CA)",
      "create 3 namespaces each, 32 at a time. A namespace is complete when a watch has shown a RoleBinding and a NetworkPolicy",
      "in it and its quota: Capsule's per-namespace ResourceQuota (scope Tenant), tenantry's one cluster-scoped",
      "TenantResourceQuota per tenant. Per namespace: from its create request; total: first tenant create to last complete.",
      "RSS: peak of the controller's own process; here tenantry runs as a separate Node.js process, like Capsule's manager.",
      ...notes,
      `Ratio tenantry/Capsule (total time): ${ratio}`,
    ],
  );
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-tenants-"));
  const harness = new ClusterHarness({ dir: join(dir, "clusters"), log: () => {} });
  progress(`working in ${dir}`);
  // The clusters' processes run in their own process groups: Ctrl-C must stop them explicitly.
  process.once("SIGINT", () => {
    progress("interrupted: stopping the clusters");
    void harness
      .reset()
      .catch(() => {})
      .finally(() => process.exit(130));
  });
  try {
    await harness.components();
    // One failed part must not hide the others' numbers.
    await tenantryOnOneCluster(harness, dir).catch((err) =>
      process.stdout.write(`\ntenantry measurements stopped: ${(err as Error).stack ?? err}\n`),
    );
    if (PARTS.has("side-by-side"))
      await compareWithCapsule(harness, dir).catch((err) =>
        process.stdout.write(`\nSide by side stopped: ${(err as Error).stack ?? err}\n`),
      );
  } finally {
    await harness.reset().catch(() => {});
    if (args.keep) progress(`kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
}

await main();
