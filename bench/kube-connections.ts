/**
 * What client-node 2.x's dispatcher per request costs, and what tenantry's shared connections
 * (src/kube/connection-pool.ts) save: the same reads of one Namespace from kube-apiserver through
 * client-node's own KubeConfig (a new undici Agent, so a new TCP and TLS connection, per request)
 * and through a ClusterClient (one dispatcher per TLS identity), one at a time and 8 at once.
 * Reports requests per second, p50/p99 latency and the connections opened (undici's
 * diagnostics channel), for the client certificate of the cluster's admin kubeconfig.
 *
 * Starts one local cluster in a temporary folder (or uses --kubeconfig) and removes it after.
 *
 * Run: npx tsx bench/kube-connections.ts [--requests 500] [--kubeconfig FILE]
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { ClusterClient } from "../src/kube/index.js";
import { ClusterHarness } from "../src/localcluster/index.js";
import { type Cell, loadAverage, ms, percentile, printTable, progress } from "./support/report.js";

const { values: args } = parseArgs({
  options: { requests: { type: "string", default: "500" }, kubeconfig: { type: "string" } },
});
const REQUESTS = Number(args.requests);
if (!(Number.isInteger(REQUESTS) && REQUESTS >= 10)) {
  process.stderr.write("usage: bench/kube-connections.ts [--requests N≥10] [--kubeconfig FILE]\n");
  process.exit(2);
}

/** `REQUESTS` reads, `concurrency` at a time: latencies and the connections undici opened meanwhile. */
async function measure(core: CoreV1Api, concurrency: number): Promise<Cell[]> {
  let connections = 0;
  const onConnected = () => {
    connections++;
  };
  subscribe("undici:client:connected", onConnected);
  const latencies: number[] = [];
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < REQUESTS) {
        const t = performance.now();
        await core.readNamespace({ name: "default" });
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  unsubscribe("undici:client:connected", onConnected);
  return [
    String(concurrency),
    String(Math.round(REQUESTS / elapsed)),
    ms(percentile(latencies, 50)),
    ms(percentile(latencies, 99)),
    String(connections),
  ];
}

let dir: string | undefined;
let kubeconfig = args.kubeconfig;
if (!kubeconfig) {
  dir = await mkdtemp(join(tmpdir(), "tenantry-bench-kube-"));
  progress("starting a local cluster");
  const [state] = await new ClusterHarness({ dir }).up([{ name: "bench" }]);
  kubeconfig = state!.kubeconfig;
}
try {
  const plain = new KubeConfig();
  plain.loadFromFile(kubeconfig);
  const pooled = new ClusterClient("bench", plain);
  const rows: Cell[][] = [];
  for (const concurrency of [1, 8]) {
    // Warm both (discovery, the first handshake) before timing.
    await measure(plain.makeApiClient(CoreV1Api), concurrency);
    rows.push([
      "client-node's dispatcher per request",
      ...(await measure(plain.makeApiClient(CoreV1Api), concurrency)),
    ]);
    await measure(pooled.core, concurrency);
    rows.push(["shared connections (ClusterClient)", ...(await measure(pooled.core, concurrency))]);
  }
  await pooled.close();
  printTable(
    `GET /api/v1/namespaces/default, ${REQUESTS} requests, client certificate`,
    ["client", "concurrency", "requests/s", "p50", "p99", "connections opened"],
    rows,
    [
      "connections opened: while timing; each client made the same requests once before, untimed",
      `load average ${loadAverage()}`,
    ],
  );
} finally {
  if (dir) {
    await new ClusterHarness({ dir }).reset();
    await rm(dir, { recursive: true, force: true });
  }
}
