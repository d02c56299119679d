/**
 * `npm run bench:offloading`: namespace replication measured as chapter 8 of the Liqo thesis does, on
 * real local clusters (one consumer and up to --providers providers, tenantry on each):
 *   1. replication versus number of remote clusters (1, 2, 4, 8): NamespaceOffloading created →
 *      phase Ready with every NamespaceMap showing the replica Accepted;
 *   2. many replication requests to one remote cluster (10 … 100 namespaces at once);
 *   3. filling NamespaceMaps for 10 … 100 virtual nodes (the offloading controller alone).
 * Each table has the thesis's shape beside it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { pino } from "pino";
import { startEmbeddedTenantry } from "../src/app/embedded.js";
import type { RunningTenantry } from "../src/app/tenantry.js";
import { type ClusterClient, loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, REGION_LABEL } from "../src/localcluster/index.js";
import { type NamespaceMap, type NamespaceOffloading, peerClusters } from "../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../src/tenants/index.js";
import { benchmarkReplication } from "./offloading/replication.js";
import { printTable } from "./support/report.js";

const program = new Command()
  .option("--providers <n>", "provider clusters to start (the largest cluster count measured)", "8")
  .option("--namespaces <list>", "namespace counts for the single-cluster table", "10,25,50,100")
  .option("--virtual-nodes <list>", "virtual-node counts for the map-filling table", "10,25,50,100")
  .option("--replicas <list>", "replica counts for the deployment-replication table", "10,30,100")
  .parse();
const flags = program.opts<{
  providers: string;
  namespaces: string;
  virtualNodes: string;
  replicas: string;
}>();
const providerCount = Number(flags.providers);
const counts = (list: string) =>
  list
    .split(",")
    .map(Number)
    .filter((n) => n > 0);
const namespaceCounts = counts(flags.namespaces);
const nodeCounts = counts(flags.virtualNodes);
const replicaCounts = counts(flags.replicas);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => (ms / 1000).toFixed(2);

async function until(check: () => Promise<boolean>, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await sleep(50);
  }
}

async function list<T>(client: ClusterClient, kind: string, namespace?: string): Promise<T[]> {
  return (await client.objects.list(TENANTS_API_VERSION, kind, namespace)).items as unknown as T[];
}

/** Counts print as they are (the shared table gives numbers one decimal). */
function table(title: string, header: string[], rows: (string | number)[][]): void {
  printTable(
    title,
    header,
    rows.map((row) => row.map(String)),
    [],
  );
}

async function offload(
  consumer: ClusterClient,
  namespace: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await consumer.core.createNamespace({ body: { metadata: { name: namespace } } });
  await consumer.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace },
    spec,
  } as never);
}

/** Every namespace Ready, and every map that should hold it showing it Accepted. */
async function allReplicated(
  consumer: ClusterClient,
  namespaces: Set<string>,
  perNamespace: number,
): Promise<boolean> {
  const offloadings = await list<NamespaceOffloading>(consumer, "NamespaceOffloading");
  const ready = offloadings.filter(
    (o) => namespaces.has(o.metadata!.namespace!) && o.status?.offloadingPhase === "Ready",
  ).length;
  if (ready < namespaces.size) return false;
  const maps = await list<NamespaceMap>(consumer, "NamespaceMap", "tenantry-system");
  let accepted = 0;
  for (const map of maps) {
    for (const ns of namespaces) if (map.status?.currentMapping?.[ns]?.phase === "Accepted") accepted++;
  }
  return accepted >= namespaces.size * perNamespace;
}

async function unoffloadAll(consumer: ClusterClient, namespaces: string[]): Promise<void> {
  await Promise.all(namespaces.map((name) => consumer.core.deleteNamespace({ name })));
  await until(async () => {
    const maps = await list<NamespaceMap>(consumer, "NamespaceMap", "tenantry-system");
    return maps.every((m) =>
      namespaces.every((ns) => !m.status?.currentMapping?.[ns] && !m.spec?.desiredMapping?.[ns]),
    );
  });
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-offloading-"));
  const harness = new ClusterHarness({ dir, log: () => {} });
  const running: RunningTenantry[] = [];
  const logger = pino({ level: "info" }, pino.destination({ dest: join(dir, "tenantry.log"), sync: false }));
  try {
    const providers = Array.from({ length: providerCount }, (_, i) => `p${i + 1}`);
    process.stderr.write(`starting the consumer and ${providerCount} providers, tenantry on each …\n`);
    const startedAt = Date.now();
    const states = await harness.up([
      { name: "consumer", nodes: 1, labels: { [REGION_LABEL]: "home" } },
      ...providers.map((name) => ({ name, nodes: 1, labels: { [REGION_LABEL]: name } })),
    ]);
    for (const state of states)
      running.push(await startEmbeddedTenantry(state, logger.child({ cluster: state.name })));
    const client = (name: string) => loadClusterClient(name, states.find((s) => s.name === name)!.kubeconfig);
    const consumer = client("consumer");
    for (const provider of providers) {
      await peerClusters({
        consumer,
        provider: client(provider),
        namespaceQuota: 300,
        resources: { cpu: "64", memory: "128Gi", pods: "1000" },
      });
    }
    process.stderr.write(`ready in ${seconds(Date.now() - startedAt)} s\n`);

    // 1. Replication versus number of remote clusters.
    const clusterRows: (string | number)[][] = [];
    for (const k of [1, 2, 4, 8, 16].filter((n) => n <= providerCount)) {
      const ns = `across-${k}`;
      const t0 = Date.now();
      await offload(consumer, ns, {
        clusterSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: REGION_LABEL, operator: "In", values: providers.slice(0, k) }] },
          ],
        },
      });
      await until(() => allReplicated(consumer, new Set([ns]), k));
      const ms = Date.now() - t0;
      clusterRows.push([k, seconds(ms), seconds(ms / k), "grows linearly"]);
      await unoffloadAll(consumer, [ns]);
    }
    table(
      "namespace replication versus remote clusters (one NamespaceOffloading; until Ready and every NamespaceMap Accepted)",
      ["clusters", "total s", "s / cluster", "thesis (fig. 8.2)"],
      clusterRows,
    );

    // 2. Many requests to one remote cluster.
    const requestRows: (string | number)[][] = [];
    for (const n of namespaceCounts) {
      const names = Array.from({ length: n }, (_, i) => `many-${n}-${i}`);
      const t0 = Date.now();
      await Promise.all(
        names.map((ns) =>
          offload(consumer, ns, {
            clusterSelector: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: REGION_LABEL, operator: "In", values: ["p1"] }] },
              ],
            },
          }),
        ),
      );
      try {
        await until(() => allReplicated(consumer, new Set(names), 1), 180_000);
        const ms = Date.now() - t0;
        requestRows.push([n, seconds(ms), (ms / n).toFixed(0), "grew exponentially (1 worker and 5)"]);
      } catch {
        const ready = (await list<NamespaceOffloading>(consumer, "NamespaceOffloading")).filter(
          (o) => names.includes(o.metadata!.namespace!) && o.status?.offloadingPhase === "Ready",
        ).length;
        requestRows.push([n, `> 180 (${ready} of ${n} Ready)`, "-", "grew exponentially (1 worker and 5)"]);
      }
      process.stderr.write(`  ${n} namespaces: ${requestRows.at(-1)![1]} s\n`);
      await unoffloadAll(consumer, names);
    }
    table(
      "replication requests to one remote cluster (n namespaces at once; until all Ready)",
      ["namespaces", "total s", "ms / request", "thesis (fig. 8.3)"],
      requestRows,
    );

    // 3. Filling NamespaceMaps for many virtual nodes: Peerings without credentials still get a
    // virtual node and a NamespaceMap, which is all the offloading controller reads.
    const fillRows: (string | number)[][] = [];
    let made = 0;
    for (const v of nodeCounts) {
      for (; made < v; made++) {
        const name = `fake-${made}`;
        await consumer.objects.create({
          apiVersion: TENANTS_API_VERSION,
          kind: "Peering",
          metadata: { name },
          spec: {
            remoteClusterId: `fake-${made}`,
            remoteClusterName: name,
            labels: { "bench.tenantry.dev/fake": "true" },
            kubeconfigSecretRef: { name: `missing-${made}` },
            namespaceQuota: 10,
            resources: { cpu: "1", memory: "1Gi", pods: "10" },
          },
        } as never);
      }
      await until(async () => {
        const maps = await list<NamespaceMap>(consumer, "NamespaceMap", "tenantry-system");
        const nodes = await consumer.core.listNode({ labelSelector: "bench.tenantry.dev/fake=true" });
        return (
          maps.filter((m) => m.metadata!.name!.startsWith("fake-")).length >= v && nodes.items.length >= v
        );
      });
      const ns = `fill-${v}`;
      const t0 = Date.now();
      await offload(consumer, ns, {
        clusterSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "bench.tenantry.dev/fake", operator: "In", values: ["true"] }] },
          ],
        },
      });
      await until(async () => {
        const maps = await list<NamespaceMap>(consumer, "NamespaceMap", "tenantry-system");
        return maps.filter((m) => m.spec?.desiredMapping?.[ns] !== undefined).length >= v;
      });
      const ms = Date.now() - t0;
      fillRows.push([v, seconds(ms), (ms / v).toFixed(1), "grows linearly"]);
      await consumer.core.deleteNamespace({ name: ns });
    }
    table(
      "filling NamespaceMaps (one NamespaceOffloading selecting v virtual nodes; until every map holds the request)",
      ["virtual nodes", "total s", "ms / map", "thesis (fig. 8.4)"],
      fillRows,
    );
    // 4. Deployment replication (8.2.1): N fake virtual nodes, one replica per node; with 0 and
    // with 3 pods per replica, to see the share replication adds to pod start-up.
    const replicaRows: (string | number)[][] = [];
    await benchmarkReplication({ client: consumer, virtualNodes: 2 });
    for (const n of replicaCounts) {
      const alone = await benchmarkReplication({ client: consumer, virtualNodes: n });
      const withPods = await benchmarkReplication({ client: consumer, virtualNodes: n, podsPerReplica: 3 });
      replicaRows.push([
        n,
        seconds(alone.deploymentsMs),
        seconds(alone.statusMs),
        seconds(withPods.statusMs),
        "grows linearly; small next to pod start-up",
      ]);
      process.stderr.write(`  ${n} replicas: ${seconds(alone.statusMs)} s\n`);
    }
    table(
      "deployment replication (one ReplicatedDeployment, node granularity, N virtual nodes)",
      ["replicas", "deployments s", "status s", "status s (3 pods each)", "thesis (fig. 8.6)"],
      replicaRows,
    );
    await cleanUp(true);
  } catch (err) {
    await cleanUp(false);
    throw err;
  }

  async function cleanUp(passed: boolean): Promise<void> {
    for (const t of running) await t.stop().catch(() => {});
    if (passed) {
      await harness.reset().catch(() => {});
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    } else {
      await harness.down().catch(() => {});
      process.stderr.write(`logs: ${dir}/tenantry.log and ${dir}/<cluster>/logs\n`);
    }
  }
}

await main();
