/**
 * Pod-create admission: tenantry's tenant-wide quota (one TenantResourceQuota over a tenant's
 * namespaces, enforced by tenantry's admission webhooks) against kube-apiserver's own
 * ResourceQuota admission (one ResourceQuota per namespace, inside the API server), on the same
 * cluster, under the same open-loop load, in one run. For each rate, both paths run back to back
 * (their order alternating), their pods are deleted and both quotas count zero again before the
 * next. Reports the highest rate at which each path's p99 stays under 50 ms, and their ratio.
 *
 * Starts one local cluster in a temporary folder, tenantry in a process of its own, and removes
 * everything after.
 *
 * Run: npm run bench:admission [-- --rates 5,10,20,40,80,160] [--seconds 10] [--keep]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CoreV1Api, type KubernetesObject } from "@kubernetes/client-node";
import { applyObject, type ClusterClient, loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, webhookClientCaFile } from "../src/localcluster/index.js";
import type { TenantResourceQuota } from "../src/tenants/index.js";
import { startTenantryProcess, type TenantryProcess } from "../testing/index.js";
import { type Cell, ms, percentile, printTable } from "./support/report.js";
import { apiserverLoad } from "./tenants/admission.js";
import type { LoadResult } from "./tenants/loadgen.js";
import { type BenchUser, clusterCa, clusterUser } from "./tenants/users.js";
import {
  customObjects,
  isTenantReady,
  ownerOf,
  quotasResource,
  tenantObject,
  tenantsResource,
  UNTHROTTLED_APISERVER_FLAGS,
  until,
} from "./tenants/workload.js";

const { values: args } = parseArgs({
  options: {
    rates: { type: "string", default: "5,10,20,40,80,160" },
    seconds: { type: "string", default: "10" },
    keep: { type: "boolean", default: false },
  },
});
const RATES = args.rates.split(",").map(Number);
const SECONDS = Number(args.seconds);
if (!RATES.every((r) => Number.isFinite(r) && r > 0) || !(SECONDS > 0)) {
  process.stderr.write("usage: bench/admission.ts [--rates 5,10,20,...] [--seconds S] [--keep]\n");
  process.exit(2);
}
/** The latency goal: the highest rate whose p99 stays under this is a path's capacity. */
const P99_GOAL_MS = 50;
const TENANT = "admission";
const SHORT_NAMES = ["a", "b", "c"];
const NATIVE_OWNER = "native-owner";
/** The same limits on both sides: the tenant's over its namespaces, the native one per namespace. */
const HARD = { pods: "100000", "requests.cpu": "1000", "requests.memory": "1000Gi" };

const progress = (line: string) =>
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

interface Path {
  name: string;
  user: BenchUser;
  namespaces: string[];
  /** Whether every quota of this path counts no pod. */
  counted(): Promise<boolean>;
}

/** Namespaces as an administrator would set them up for a team without tenantry. */
async function nativeNamespaces(client: ClusterClient): Promise<string[]> {
  const names = SHORT_NAMES.map((n) => `native-${n}`);
  for (const namespace of names) {
    const objects: KubernetesObject[] = [
      { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
      {
        apiVersion: "v1",
        kind: "ResourceQuota",
        metadata: { name: "quota", namespace },
        spec: { hard: HARD },
      } as KubernetesObject,
      // The same defaults as the tenant's LimitRange (see tenantObject).
      {
        apiVersion: "v1",
        kind: "LimitRange",
        metadata: { name: "defaults", namespace },
        spec: {
          limits: [
            {
              type: "Container",
              default: { cpu: "100m", memory: "64Mi" },
              defaultRequest: { cpu: "10m", memory: "16Mi" },
            },
          ],
        },
      } as KubernetesObject,
      {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "owner", namespace },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "admin" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: NATIVE_OWNER }],
      } as KubernetesObject,
    ];
    for (const object of objects)
      await until(`${object.kind} ${namespace}`, 120_000, () => applyObject(client, object).then(() => true));
  }
  return names;
}

async function podsLeft(client: ClusterClient, namespaces: string[]): Promise<number> {
  const lists = await Promise.all(
    namespaces.map((namespace) => client.core.listNamespacedPod({ namespace })),
  );
  return lists.reduce((sum, list) => sum + list.items.length, 0);
}

/** Deletes every pod of the path's namespaces and waits until its quotas count none. */
async function reset(client: ClusterClient, path: Path): Promise<void> {
  for (const namespace of path.namespaces)
    await client.core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
  await until(`${path.name}: pods deleted`, 300_000, async () =>
    (await podsLeft(client, path.namespaces)) === 0 ? true : undefined,
  );
  await until(`${path.name}: quota back to zero`, 300_000, async () =>
    (await path.counted()) ? true : undefined,
  );
}

function row(path: string, rate: number, r: LoadResult, p99Ratio: string): Cell[] {
  return [
    path,
    String(rate),
    (r.completed / (r.elapsedMs / 1000)).toFixed(0),
    String(r.completed),
    `${r.allowed}/${r.denied}`,
    ms(percentile(r.latencies, 50)),
    ms(percentile(r.latencies, 99)),
    String(r.errors),
    p99Ratio,
  ];
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-admission-"));
  const harness = new ClusterHarness({ dir });
  let tenantry: TenantryProcess | undefined;
  try {
    progress("starting local cluster admission");
    const [state] = await harness.up([
      { name: "admission", nodes: 1, extraApiserverFlags: UNTHROTTLED_APISERVER_FLAGS },
    ]);
    // In a process of its own: its webhooks do not share an event loop with this benchmark.
    tenantry = await startTenantryProcess({
      cluster: state!.name,
      kubeconfig: state!.kubeconfig,
      webhookClientCaFile: webhookClientCaFile(state!),
      logFile: join(dir, "tenantry.log"),
      without: ["gateway", "runtimes-admin", "runtimes-proxy", "logical-clouds"],
    });
    const client = loadClusterClient("bench-admission", state!.kubeconfig);
    const api = customObjects(client);
    const ca = await clusterCa(harness.dir, state!.name);

    progress("setting up the tenant and the plain namespaces");
    // Retried: the first calls to a freshly started webhook server can time out on a busy machine.
    await until("tenant created", 120_000, () =>
      api
        .createClusterCustomObject({
          ...tenantsResource,
          body: tenantObject(TENANT, { namespaces: SHORT_NAMES }),
        })
        .then(
          () => true,
          (err: unknown) => {
            if ((err as { code?: number }).code === 409) return true;
            throw err;
          },
        ),
    );
    const tenantNamespaces = SHORT_NAMES.map((n) => `${TENANT}-${n}`);
    const native = await nativeNamespaces(client);
    await until("tenant ready", 300_000, async () => {
      const t = await api.getClusterCustomObject({ ...tenantsResource, name: TENANT });
      return isTenantReady(t as Parameters<typeof isTenantReady>[0], SHORT_NAMES.length) ? true : undefined;
    });
    // Pods are refused until each namespace has its default ServiceAccount.
    await until("default service accounts", 300_000, async () => {
      for (const namespace of [...tenantNamespaces, ...native])
        await client.core.readNamespacedServiceAccount({ name: "default", namespace });
      return true;
    });
    const paths: Path[] = [
      {
        name: "tenantry: TenantResourceQuota over 3 namespaces",
        user: await clusterUser({
          ca,
          cluster: state!.name,
          server: state!.server,
          name: ownerOf(TENANT),
          dir,
        }),
        namespaces: tenantNamespaces,
        counted: async () => {
          const q = (await api.getClusterCustomObject({
            ...quotasResource,
            name: TENANT,
          })) as TenantResourceQuota;
          return q.status?.used?.pods === "0" && !(q.status?.reservations ?? []).length;
        },
      },
      {
        name: "kube-apiserver: ResourceQuota per namespace",
        user: await clusterUser({ ca, cluster: state!.name, server: state!.server, name: NATIVE_OWNER, dir }),
        namespaces: native,
        counted: async () => {
          for (const namespace of native) {
            const q = await client.core.readNamespacedResourceQuota({ name: "quota", namespace });
            if (q.status?.used?.pods !== "0") return false;
          }
          return true;
        },
      },
    ];
    for (const path of paths) {
      // Both users can act (RBAC caches warm), and both quotas are counted from zero.
      await until(`${path.name}: owner can list pods`, 60_000, async () => {
        const core = path.user.kubeConfig.makeApiClient(CoreV1Api);
        for (const namespace of path.namespaces) await core.listNamespacedPod({ namespace, limit: 1 });
        return true;
      });
      await reset(client, path);
    }

    // A short run per path first, not measured: TLS sessions, webhook connections and caches warm.
    for (const path of paths) {
      progress(`${path.name}: warming up, 2 pod creates/s for 5 s`);
      await apiserverLoad({
        server: state!.server,
        caPem: ca.certPem,
        owners: [{ user: path.user, namespaces: path.namespaces }],
        rate: 2,
        durationMs: 5000,
        denied: "exceeded quota",
      });
      await reset(client, path);
    }

    const rows: Cell[][] = [];
    const capacity = new Map<string, { rate: number; p99: number }>();
    const failedAt = new Set<string>();
    for (const [step, rate] of RATES.entries()) {
      const results = new Map<string, LoadResult>();
      // The order alternates, so that neither path always runs on the other's leftovers.
      const order = step % 2 === 0 ? paths : [...paths].reverse();
      for (const path of order) {
        progress(`${path.name}: ${rate} pod creates/s for ${SECONDS} s`);
        const r = await apiserverLoad({
          server: state!.server,
          caPem: ca.certPem,
          owners: [{ user: path.user, namespaces: path.namespaces }],
          rate,
          durationMs: SECONDS * 1000,
          denied: "exceeded quota",
        });
        results.set(path.name, r);
        if (r.errorSamples.length) progress(`errors: ${r.errorSamples.join(" | ")}`);
        await reset(client, path);
      }
      const [tenantryPath, nativePath] = paths as [Path, Path];
      const nativeP99 = percentile(results.get(nativePath.name)!.latencies, 99);
      for (const path of paths) {
        const r = results.get(path.name)!;
        const p99 = percentile(r.latencies, 99);
        const ratio = path === tenantryPath && nativeP99 > 0 ? (p99 / nativeP99).toFixed(2) : "";
        rows.push(row(path.name, rate, r, ratio));
        const ok = r.errors === 0 && r.completed === r.due && p99 < P99_GOAL_MS;
        if (ok && !failedAt.has(path.name)) capacity.set(path.name, { rate, p99 });
        if (!ok) failedAt.add(path.name);
      }
      // Once both are past the goal, higher rates tell nothing more.
      if (paths.every((p) => failedAt.has(p.name))) break;
    }
    printTable(
      "Pod CREATE admission through the API server: tenantry's tenant-wide quota against native ResourceQuota",
      [
        "path",
        "target/s",
        "achieved/s",
        "answered",
        "allowed/denied",
        "p50 ms",
        "p99 ms",
        "errors",
        "p99 vs native",
      ],
      rows,
      [
        `Each row: real pod creates (kubectl-equivalent) by one owner with a client certificate, open loop for ${SECONDS} s,`,
        "round-robin over 3 namespaces; latency counts from when a request was due, so queueing shows; 1 run per rate.",
        `tenantry: Tenant "${TENANT}" (3 declared namespaces) with a TenantResourceQuota on pods, requests.cpu and requests.memory`,
        "over all three, enforced by tenantry's admission (one mutating and one validating call per pod CREATE, running every",
        "check: labels, defaults, safety, quota last). kube-apiserver: 3 plain namespaces, each with a ResourceQuota on the same resources (in-process admission)",
        "and the owner bound to ClusterRole admin. Same LimitRange on both. Same cluster, API server priority and fairness off.",
        "Between runs every pod is deleted and both quotas count zero again. Errors: no answer in 60 s or not 201/403.",
        "Before the first rate, each path runs 2/s for 5 s unmeasured (connections and caches warm).",
      ],
    );
    const tenantryCapacity = capacity.get(paths[0]!.name);
    const nativeCapacity = capacity.get(paths[1]!.name);
    const capacityRow = (path: Path, c: { rate: number; p99: number } | undefined): Cell[] => [
      path.name,
      c ? String(c.rate) : "none",
      c ? ms(c.p99) : "-",
    ];
    const cost =
      tenantryCapacity && nativeCapacity ? (nativeCapacity.rate / tenantryCapacity.rate).toFixed(2) : "-";
    printTable(
      `Capacity: highest rate with p99 under ${P99_GOAL_MS} ms, no error`,
      ["path", "pod creates/s", "p99 ms there"],
      [capacityRow(paths[0]!, tenantryCapacity), capacityRow(paths[1]!, nativeCapacity)],
      [
        `Cost of tenantry's tenant-wide quota against native ResourceQuota (native rate / tenantry rate): ${cost} (goal: at most 1.5).`,
        `Rates tried: ${RATES.join(", ")} per s (--rates); a path's capacity is the last rate before its first miss.`,
      ],
    );
  } finally {
    await tenantry?.stop().catch((err) => progress(`stopping tenantry failed: ${err}`));
    if (args.keep) {
      progress(`kept: ${dir}`);
    } else {
      await harness.reset().catch((err) => progress(`reset failed: ${err}`));
      await rm(dir, { recursive: true, force: true });
    }
  }
}

await main();
