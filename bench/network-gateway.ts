/**
 * `npm run bench:network-gateway`: pod-to-pod throughput and round trips across the clusters'
 * network gateways (userspace WireGuard, remapped addresses) against pod to pod within one cluster
 * (the floor), side by side in one run. Two clusters of a harness of its own, tenantry on each,
 * the first peered with the second and one namespace offloaded there.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { Command } from "commander";
import pino from "pino";
import { startEmbeddedTenantry } from "../src/app/embedded.js";
import { type ClusterClient, loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../src/localcluster/index.js";
import { readRecordedNetwork } from "../src/localcluster/process-node/network/claims.js";
import { networkPlan, podNamespace, podNetworkId } from "../src/localcluster/process-node/network/plan.js";
import { GATEWAY_OBJECTS, peerClusters, REMAPS_CONFIGMAP, remapAddress } from "../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../src/tenants/index.js";
import { loadAverage, percentile, printTable } from "./support/report.js";

const flags = new Command()
  .option("--runs <n>", "transfers and latency series per path", "3")
  .option("--mib <n>", "MiB per transfer", "64")
  .option("--messages <n>", "64-byte round trips per latency series", "2000")
  .parse()
  .opts<{ runs: string; mib: string; messages: string }>();
const PEER = join(import.meta.dirname, "network", "peer.mjs");
const PORT = 9000;
const namespace = "bench";
const SYSTEM = "tenantry-system";

/** Runs the peer program in a pod's network namespace (killed after `timeout` ms when given). */
function peer<T>(netns: string, args: string[], timeout?: number): Promise<T> {
  const child = spawn("nsenter", [`--net=/run/netns/${netns}`, "--", process.execPath, PEER, ...args], {
    ...(timeout ? { timeout } : {}),
  });
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
    });
    child.on("close", (code) =>
      code === 0 ? resolve(JSON.parse(out) as T) : reject(new Error(err || `exit ${code}`)),
    );
  });
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 300_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const serverPod = (name: string): V1Pod => ({
  metadata: { name, labels: { app: name } },
  spec: {
    ...PROCESS_NODE_PLACEMENT,
    terminationGracePeriodSeconds: 1,
    containers: [
      {
        name: "serve",
        image: LOCAL_IMAGES.busybox,
        command: ["sh", "-c", `exec node /peer/peer.mjs serve ${PORT}`],
        readinessProbe: { tcpSocket: { port: PORT as never }, periodSeconds: 1 },
        volumeMounts: [{ name: "peer", mountPath: "/peer" }],
      },
    ],
    volumes: [{ name: "peer", configMap: { name: "peer" } }],
  },
});

const sleeper = (name: string): V1Pod => ({
  metadata: { name, labels: { app: name } },
  spec: {
    ...PROCESS_NODE_PLACEMENT,
    terminationGracePeriodSeconds: 1,
    containers: [{ name: "main", image: LOCAL_IMAGES.busybox, command: ["sleep", "3600"] }],
  },
});

async function readyPod(client: ClusterClient, name: string): Promise<V1Pod> {
  return until(`pod ${name} Ready`, async () => {
    const pod = await client.core.readNamespacedPod({ namespace, name });
    return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? pod : undefined;
  });
}

async function measure(netns: string, host: string) {
  const rates: number[] = [];
  const trips: number[] = [];
  for (let run = 0; run < Number(flags.runs); run++) {
    const bytes = String(Number(flags.mib) * 1048576);
    rates.push(
      (await peer<{ mibPerSecond: number }>(netns, ["throughput", host, String(PORT), bytes])).mibPerSecond,
    );
    const latency = await peer<{ roundTripsMicros: number[] }>(netns, [
      "latency",
      host,
      String(PORT),
      flags.messages,
    ]);
    trips.push(...latency.roundTripsMicros);
  }
  return { mib: percentile(rates, 50), p50: percentile(trips, 50), p99: percentile(trips, 99) };
}

const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-gateway-"));
const harness = new ClusterHarness({ dir, log: () => {} });
const stops: (() => Promise<unknown>)[] = [];
try {
  const states = await harness.up([
    { name: "gw-home", nodes: 1 },
    { name: "gw-edge", nodes: 1 },
  ]);
  for (const state of states) {
    const logger = pino(
      { level: "info" },
      pino.destination({ dest: join(dir, `tenantry-${state.name}.log`) }),
    );
    const running = await startEmbeddedTenantry(state, logger);
    stops.push(() => running.stop());
  }
  const [home, edge] = states.map((s) => loadClusterClient(s.name, s.kubeconfig)) as [
    ClusterClient,
    ClusterClient,
  ];
  await peerClusters({
    consumer: home,
    provider: edge,
    namespaceQuota: 10,
    resources: { cpu: "8", memory: "8Gi", pods: "50" },
  });
  await home.core.createNamespace({ body: { metadata: { name: namespace } } });
  await home.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace },
    spec: { namespaceMappingStrategy: "EnforceSameName", podOffloadingStrategy: "LocalAndRemote" },
  } as never);
  await until("the replica namespace", () => edge.core.readNamespace({ name: namespace }));
  // Reflection copies the offloaded namespace's ConfigMaps to its replica: the peer program too.
  await home.core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: "peer" }, data: { "peer.mjs": await readFile(PEER, "utf8") } },
  });
  await until("the peer program in the replica", () =>
    edge.core.readNamespacedConfigMap({ name: "peer", namespace }),
  );
  await home.core.createNamespacedPod({ namespace, body: serverPod("server-home") });
  await edge.core.createNamespacedPod({ namespace, body: serverPod("server-edge") });
  await home.core.createNamespacedPod({ namespace, body: sleeper("client") });
  const [local, remote, client] = await Promise.all([
    readyPod(home, "server-home"),
    readyPod(edge, "server-edge"),
    readyPod(home, "client"),
  ]);
  const network = (await readRecordedNetwork(join(dir, "gw-home")))!;
  const netns = podNamespace(
    networkPlan(network.index, network.podCidr),
    podNetworkId(client.metadata!.uid!),
  );
  const edgeId = (
    await edge.core.readNamespacedConfigMap({ name: "tenantry-cluster-identity", namespace: SYSTEM })
  ).data!.clusterId!;
  const range = await until(
    "home's range for gw-edge",
    async () =>
      (await home.core.readNamespacedConfigMap({ name: REMAPS_CONFIGMAP, namespace: SYSTEM })).data?.[edgeId],
  );
  const edgeCidr = (await edge.core.readNode({ name: remote.spec!.nodeName! })).spec!.podCIDR!;
  const across = remapAddress(remote.status!.podIP!, edgeCidr, range)!;
  // The gateways have shaken hands and the client is admitted once a connection gets through.
  await until("a connection across the gateways", () =>
    peer(netns, ["latency", across, String(PORT), "3"], 5000),
  );
  await until(
    "home's gateway status",
    async () =>
      (await home.core.readNamespacedConfigMap({ name: GATEWAY_OBJECTS.status, namespace: SYSTEM })).data,
  );
  const rows = [];
  for (const [name, host] of [
    ["pod → pod, one cluster (the floor)", local.status!.podIP!],
    ["pod → pod across the gateways (WireGuard, remapped)", across],
  ] as const) {
    const m = await measure(netns, host);
    rows.push([name, m.mib.toFixed(0), (m.p50 / 1000).toFixed(2), (m.p99 / 1000).toFixed(2)]);
  }
  printTable(
    "pod to pod within a cluster and across two clusters' gateways",
    ["path", "MiB/s (median)", "round trip p50 (ms)", "round trip p99 (ms)"],
    rows,
    [
      `${flags.runs} runs of ${flags.mib} MiB and ${flags.messages} 64-byte round trips per path; load average ${loadAverage()}`,
      "across: home pod → home's gateway (wireguard-go, NETMAP) → UDP over the machine → edge's gateway → edge pod",
    ],
  );
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  await harness.reset().catch(() => {});
  await rm(dir, { recursive: true, force: true });
}
