/**
 * `npm run bench:network`: the local clusters' pod network (the process node's bridge, kube-proxy
 * in nftables mode, CoreDNS) against plain loopback on this machine — pod-to-pod and pod-to-Service
 * throughput and round-trip latency; a new Service's name resolving and answering; and what the
 * network adds to a pod's start (created → Ready, with its own network namespace and on the host's
 * network). Runs one cluster in a harness of its own.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { Command } from "commander";
import { type ClusterClient, Informer, loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../src/localcluster/index.js";
import { readRecordedNetwork } from "../src/localcluster/process-node/network/claims.js";
import {
  DNS_SERVICE_IP,
  networkPlan,
  podNamespace,
  podNetworkId,
} from "../src/localcluster/process-node/network/plan.js";
import { loadAverage, ms, percentile, printTable } from "./support/report.js";

const program = new Command()
  .option("--runs <n>", "transfers and latency series per path", "3")
  .option("--mib <n>", "MiB per transfer", "512")
  .option("--messages <n>", "64-byte round trips per latency series", "5000")
  .option("--services <n>", "Services created, one after another, for name → answer", "10")
  .option("--pods <n>", "pods started one after another, with and without their network", "10")
  .parse();
const flags = program.opts<{ runs: string; mib: string; messages: string; services: string; pods: string }>();
const PEER = join(import.meta.dirname, "network", "peer.mjs");
const PORT = 9000;
const namespace = "bench";

/** Runs the peer program (in a pod's network namespace when given one); resolves with its JSON output. */
function peer<T>(netns: string | undefined, args: string[]): Promise<T> {
  const argv = [process.execPath, PEER, ...args];
  const child = netns
    ? spawn("nsenter", [`--net=/run/netns/${netns}`, "--", ...argv])
    : spawn(argv[0]!, argv.slice(1));
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr!.on("data", (c: Buffer) => {
      err += c.toString();
    });
    child.on("close", (code) =>
      code === 0 ? resolve(JSON.parse(out) as T) : reject(new Error(err || `exit ${code}`)),
    );
  });
}

function serveOnLoopback(): ChildProcess {
  return spawn(process.execPath, [PEER, "serve", String(PORT + 1), "127.0.0.1"], { stdio: "ignore" });
}

/** Pods created → Ready, as the informer first sees Ready. */
class ReadyWatch {
  private readonly readyAt = new Map<string, number>();
  private readonly waiters = new Map<string, () => void>();

  constructor(readonly pods: Informer<V1Pod>) {
    const seen = (pod: V1Pod) => {
      const name = pod.metadata!.name!;
      if (
        this.readyAt.has(name) ||
        !pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
      )
        return;
      this.readyAt.set(name, performance.now());
      this.waiters.get(name)?.();
    };
    pods.addHandler({ onAdd: seen, onUpdate: (_old, pod) => seen(pod) });
  }

  async create(client: ClusterClient, pod: V1Pod): Promise<{ pod: V1Pod; ms: number }> {
    const name = pod.metadata!.name!;
    const ready = new Promise<void>((resolve) => this.waiters.set(name, resolve));
    const started = performance.now();
    await client.core.createNamespacedPod({ namespace, body: pod });
    await ready;
    return { pod: this.pods.get(namespace, name)!, ms: this.readyAt.get(name)! - started };
  }
}

const sleeper = (name: string, hostNetwork = false): V1Pod => ({
  metadata: { name, labels: { app: name } },
  spec: {
    ...PROCESS_NODE_PLACEMENT,
    hostNetwork,
    terminationGracePeriodSeconds: 1,
    containers: [{ name: "main", image: LOCAL_IMAGES.busybox, command: ["sleep", "3600"] }],
  },
});

const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-network-"));
const harness = new ClusterHarness({ dir, log: () => {} });
try {
  const [state] = await harness.up([{ name: "bench-net", nodes: 1 }]);
  const client = loadClusterClient("bench-net", state!.kubeconfig);
  const recorded = (await readRecordedNetwork(join(dir, "bench-net")))!;
  const plan = networkPlan(recorded.index, recorded.podCidr);
  await client.core.createNamespace({ body: { metadata: { name: namespace } } });
  const informer = Informer.forResource<V1Pod>(client, { apiVersion: "v1", kind: "Pod", namespace });
  const watch = new ReadyWatch(informer);
  informer.start();
  await informer.waitForSync();
  const netnsOf = (pod: V1Pod) => podNamespace(plan, podNetworkId(pod.metadata!.uid!));

  // The server is a pod: the peer program from a ConfigMap, run by node, on the pod's address.
  await client.core.createNamespacedConfigMap({
    namespace,
    body: { metadata: { name: "peer" }, data: { "peer.mjs": await readFile(PEER, "utf8") } },
  });
  const server = await watch.create(client, {
    metadata: { name: "server", labels: { app: "server" } },
    spec: {
      ...PROCESS_NODE_PLACEMENT,
      containers: [
        {
          name: "serve",
          image: LOCAL_IMAGES.busybox,
          // busybox is this machine's sh and its tools (node among them), run through sh.
          command: ["sh", "-c", `exec node /peer/peer.mjs serve ${PORT}`],
          readinessProbe: { tcpSocket: { port: PORT as never }, periodSeconds: 1 },
          volumeMounts: [{ name: "peer", mountPath: "/peer" }],
        },
      ],
      volumes: [{ name: "peer", configMap: { name: "peer" } }],
    },
  });
  const clientPod = await watch.create(client, sleeper("client"));
  const service = await client.core.createNamespacedService({
    namespace,
    body: { metadata: { name: "server" }, spec: { selector: { app: "server" }, ports: [{ port: PORT }] } },
  });
  const loopback = serveOnLoopback();
  await new Promise((resolve) => setTimeout(resolve, 500));

  const paths: { name: string; netns?: string; host: string; port: number }[] = [
    { name: "loopback (the floor)", host: "127.0.0.1", port: PORT + 1 },
    { name: "pod → pod", netns: netnsOf(clientPod.pod), host: server.pod.status!.podIP!, port: PORT },
    { name: "pod → Service", netns: netnsOf(clientPod.pod), host: service.spec!.clusterIP!, port: PORT },
  ];
  const runs = Number(flags.runs);
  const bytes = Number(flags.mib) * 1048576;
  const transfer: (string | number)[][] = [];
  let floor = Number.NaN;
  for (const path of paths) {
    const rates: number[] = [];
    const trips: number[] = [];
    for (let run = 0; run < runs; run++) {
      const t = await peer<{ mibPerSecond: number }>(path.netns, [
        "throughput",
        path.host,
        String(path.port),
        String(bytes),
      ]);
      rates.push(t.mibPerSecond);
      const l = await peer<{ roundTripsMicros: number[] }>(path.netns, [
        "latency",
        path.host,
        String(path.port),
        flags.messages,
      ]);
      trips.push(...l.roundTripsMicros);
    }
    const median = percentile(rates, 50);
    if (Number.isNaN(floor)) floor = median;
    transfer.push([
      path.name,
      median,
      `${((100 * median) / floor).toFixed(0)}%`,
      percentile(trips, 50),
      percentile(trips, 99),
    ]);
  }
  loopback.kill();
  printTable(
    "throughput and round trips within a cluster, against plain loopback",
    ["path", "MiB/s (median)", "of loopback", "RTT p50 µs", "RTT p99 µs"],
    transfer,
    [
      `${runs} transfers of ${flags.mib} MiB and ${runs} × ${flags.messages} round trips of 64 bytes per path; nearest-rank percentiles.`,
      `load average ${loadAverage()}.`,
    ],
  );

  const resolveTimes: number[] = [];
  for (let i = 0; i < Number(flags.services); i++) {
    const name = `named-${i}`;
    const polling = peer<{ at: number | null }>(netnsOf(clientPod.pod), [
      "resolve-and-answer",
      `${name}.${namespace}.svc.cluster.local`,
      DNS_SERVICE_IP,
      String(PORT),
      "30000",
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const created = Date.now();
    await client.core.createNamespacedService({
      namespace,
      body: { metadata: { name }, spec: { selector: { app: "server" }, ports: [{ port: PORT }] } },
    });
    const { at } = await polling;
    resolveTimes.push(at === null ? Number.NaN : at - created);
  }
  printTable(
    "Service created → its name resolves (CoreDNS) and its address answers (kube-proxy), from a pod",
    ["Services", "p50 ms", "p99 ms", "max ms"],
    [
      [
        resolveTimes.length,
        ms(percentile(resolveTimes, 50)),
        ms(percentile(resolveTimes, 99)),
        ms(Math.max(...resolveTimes)),
      ],
    ],
    [
      "The server pod is Ready before each Service is created; the pod polls every 10 ms (DNS, then a TCP connect).",
    ],
  );

  const starts: (string | number)[][] = [];
  for (const hostNetwork of [false, true]) {
    const times: number[] = [];
    for (let i = 0; i < Number(flags.pods); i++)
      times.push(
        (await watch.create(client, sleeper(`${hostNetwork ? "host" : "net"}-${i}`, hostNetwork))).ms,
      );
    starts.push([
      hostNetwork ? "on the host's network" : "own network namespace",
      times.length,
      ms(percentile(times, 50)),
      ms(percentile(times, 99)),
    ]);
  }
  printTable(
    "pod created → Ready on the process node, with and without a network of its own",
    ["pod", "pods", "p50 ms", "p99 ms"],
    starts,
    ["One pod at a time; no readiness probe (Ready once its process runs)."],
  );
  await informer.stop();
} finally {
  await harness.reset();
  await rm(dir, { recursive: true, force: true });
}
