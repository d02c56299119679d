/**
 * `npm run bench:monitor`: tenantry's runtimes monitor (Vasilenko & Kurapati §3.4) over --pods pods (KWOK
 * makes them cheap) under MonitorRules covering Table 4's conditions — how many objects it
 * evaluates per second when a rule change makes it look at every pod again, and how long from a
 * condition becoming true (a pod pending past its cut-off, a claim pending past its cut-off, a node
 * NotReady past its cut-off, an endpoint answering 503) to the signed webhook arriving at a local
 * receiver. Starts a local cluster in a temporary folder (or uses --kubeconfig, which must not run
 * a tenantry of its own), runs the monitor in this process, and removes what it made.
 *
 * Run: npm run bench:monitor [-- --pods 10000] [--alerts 500] [--alert-rate 20] [--kubeconfig FILE] [--keep]
 */

import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { Command } from "commander";
import { pino } from "pino";
import { Registry } from "prom-client";
import { type ClusterClient, loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, LOCAL_IMAGES } from "../src/localcluster/index.js";
import {
  type AlertNotification,
  MONITOR_CRDS,
  Monitor,
  MonitorMetrics,
  type MonitorRuleSpec,
  SIGNATURE_HEADER,
  verifySignature,
} from "../src/monitor/index.js";
import { installCrds, TENANTS_API_VERSION } from "../src/tenants/index.js";
import {
  boundedAll,
  type Cell,
  ensureNamespace,
  loadAverage,
  ms,
  percentile,
  printTable,
  progress,
  seconds,
} from "./support/report.js";

const program = new Command()
  .option("--pods <n>", "pods the monitor watches (besides the alerting ones)", "10000")
  .option("--alerts <n>", "pods that go pending past their cut-off, one alert each", "500")
  .option("--alert-rate <n>", "those pods created per second", "20")
  .option("--claims <n>", "claims pending past their cut-off, created at once (a storm of alerts)", "100")
  .option("--not-ready <n>", "nodes going NotReady", "20")
  .option("--probe-pods <n>", "running pods whose endpoint answers 503", "20")
  .option("--sweeps <n>", "times a rule change makes the monitor evaluate every pod", "3")
  .option("--concurrency <n>", "creates in flight", "32")
  .option("--kubeconfig <file>", "use this cluster instead of starting a local one")
  .option("--keep", "leave the cluster and what was made on it")
  .parse();
const flags = program.opts<Record<string, string> & { kubeconfig?: string; keep?: boolean }>();
const numbers = Object.fromEntries(
  ["pods", "alerts", "alertRate", "claims", "notReady", "probePods", "sweeps", "concurrency"].map((name) => {
    const value = Number(flags[name]);
    if (
      !Number.isInteger(value) ||
      value < (["pods", "sweeps", "concurrency", "alertRate"].includes(name) ? 1 : 0)
    ) {
      process.stderr.write(
        `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must be a whole number, got ${flags[name]}\n`,
      );
      process.exit(2);
    }
    return [name, value];
  }),
) as Record<
  "pods" | "alerts" | "alertRate" | "claims" | "notReady" | "probePods" | "sweeps" | "concurrency",
  number
>;

const BENCH_LABEL = "tenantry.dev/bench";
const ALERT_LABEL = "tenantry.dev/bench-alert";
const NAMESPACE = "bench-monitor";
/** The shortest cut-off a rule takes (3 s). */
const CUT_OFF_MINUTES = 0.05;
const PODS_PER_NAMESPACE = 1000;
const HOOK_SECRET = "bench-monitor-hmac";

/** A webhook receiver that checks each body's signature and keeps when each alert first arrived. */
class Receiver {
  readonly arrivals = new Map<string, { at: number; notification: AlertNotification }>();
  badSignatures = 0;
  deliveries = 0;
  private server?: Server;
  url = "";

  static key(kind: string, namespace: string | undefined, name: string): string {
    return `${kind}/${namespace ?? ""}/${name}`;
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const at = Date.now();
        const body = Buffer.concat(chunks).toString();
        this.deliveries++;
        if (!verifySignature(HOOK_SECRET, body, String(req.headers[SIGNATURE_HEADER] ?? ""))) {
          this.badSignatures++;
          res.writeHead(401).end();
          return;
        }
        const notification = JSON.parse(body) as AlertNotification;
        const { kind, namespace, name } = notification.target;
        const key = Receiver.key(kind, namespace, name);
        if (notification.status === "firing" && !this.arrivals.has(key))
          this.arrivals.set(key, { at, notification });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/alerts`;
  }

  stop(): void {
    this.server?.closeAllConnections();
    this.server?.close();
  }
}

/** The probed endpoint: answers 503 to every pod, and keeps when each pod was first answered so. */
class FailingEndpoint {
  readonly firstFailure = new Map<string, number>();
  private server?: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const pod = (req.url ?? "/").slice(1);
      if (!this.firstFailure.has(pod)) this.firstFailure.set(pod, Date.now());
      res.writeHead(503).end();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  stop(): void {
    this.server?.closeAllConnections();
    this.server?.close();
  }
}

function pod(name: string, labels: Record<string, string>, pending: boolean) {
  return {
    metadata: { name, labels: { [BENCH_LABEL]: "monitor", ...labels } },
    spec: {
      containers: [{ name: "main", image: LOCAL_IMAGES.pause }],
      // No node has this label: the pod stays Pending.
      ...(pending ? { nodeSelector: { [`${BENCH_LABEL}-nowhere`]: "true" } } : {}),
    },
  };
}

async function createRule(client: ClusterClient, name: string, spec: MonitorRuleSpec): Promise<void> {
  await client.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "MonitorRule",
    metadata: { name, labels: { [BENCH_LABEL]: "monitor" } },
    spec,
  });
}

/** Waits until the monitor has nothing queued or in flight (for `quietMs`), or `timeoutMs` passes. */
async function idle(monitor: Monitor, quietMs: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    const busy = Object.values(monitor.stats()).some((s) => s.queueDepth > 0 || s.inFlight > 0);
    if (busy) quietSince = Date.now();
    else if (Date.now() - quietSince >= quietMs) return;
    await sleep(20);
  }
}

/** Creates `count` pods across namespaces of PODS_PER_NAMESPACE. */
async function createPods(
  client: ClusterClient,
  prefix: string,
  count: number,
  labels: Record<string, string>,
) {
  const namespaces = Math.ceil(count / PODS_PER_NAMESPACE);
  for (let i = 0; i < namespaces; i++)
    await ensureNamespace(client.core, `${NAMESPACE}-${prefix}-${i}`, { [BENCH_LABEL]: "monitor" });
  let done = 0;
  await boundedAll(
    Array.from({ length: count }, (_, i) => i),
    numbers.concurrency,
    async (i) => {
      await client.core.createNamespacedPod({
        namespace: `${NAMESPACE}-${prefix}-${Math.floor(i / PODS_PER_NAMESPACE)}`,
        body: pod(`${prefix}-${i}`, labels, false),
      });
      if (++done % 1000 === 0) progress(`${done} of ${count} pods created`);
    },
  );
}

/** Waits until `count` of the benchmark's pods are Running; the seconds that took. */
async function allRunning(client: ClusterClient, count: number, timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (let last = -1; ; ) {
    const running = (
      await client.core.listPodForAllNamespaces({
        labelSelector: `${BENCH_LABEL}=monitor`,
        fieldSelector: "status.phase=Running",
      })
    ).items.length;
    if (running !== last) progress(`${running} of ${count} pods Running`);
    last = running;
    if (running >= count) return (performance.now() - started) / 1000;
    if (performance.now() - started > timeoutMs)
      throw new Error(`only ${running} of ${count} pods Running after ${timeoutMs / 1000} s`);
    await sleep(2000);
  }
}

/** Sweeps: a change of a pod rule makes the monitor evaluate every pod again; how fast it gets through them. */
async function sweeps(client: ClusterClient, monitor: Monitor, podRules: number) {
  const first = await client.core.listPodForAllNamespaces({ limit: 1 });
  const pods = first.items.length + (first.metadata?.remainingItemCount ?? 0);
  const results: { objects: number; ms: number }[] = [];
  for (let i = 0; i < numbers.sweeps; i++) {
    await idle(monitor, 1000, 120_000);
    const before = monitor.stats().Pod.reconcilesTotal;
    const started = performance.now();
    if (i === 0)
      await createRule(client, "bench-sweep", {
        object: "Pod",
        condition: "long-running",
        cutOffMinutes: 600,
      });
    else
      await client.objects.jsonPatch(
        { apiVersion: TENANTS_API_VERSION, kind: "MonitorRule", metadata: { name: "bench-sweep" } },
        [{ op: "replace", path: "/spec/cutOffMinutes", value: 600 + i }],
      );
    // Done once every pod was evaluated after the change and nothing is left queued.
    const deadline = Date.now() + 600_000;
    for (;;) {
      const stats = monitor.stats().Pod;
      if (stats.reconcilesTotal - before >= pods && stats.queueDepth === 0 && stats.inFlight === 0) break;
      if (Date.now() > deadline) throw new Error(`sweep ${i + 1} did not end within 10 minutes`);
      await sleep(5);
    }
    results.push({ objects: monitor.stats().Pod.reconcilesTotal - before, ms: performance.now() - started });
  }
  return { results, pods, podRules: podRules + 1 };
}

const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-monitor-"));
const harness = flags.kubeconfig
  ? undefined
  : new ClusterHarness({ dir: join(dir, "clusters"), log: () => {} });
const receiver = new Receiver();
const endpoint = new FailingEndpoint();
const loadBefore = loadAverage();
let monitor: Monitor | undefined;
let client: ClusterClient | undefined;
const notReadyNodes = Array.from({ length: numbers.notReady }, (_, i) => `bench-not-ready-${i}`);
try {
  let kubeconfig = flags.kubeconfig;
  const kwokNodes = Math.max(1, Math.ceil((numbers.pods + numbers.probePods) / 2500));
  if (harness) {
    progress(`starting a local cluster with ${kwokNodes} KWOK nodes`);
    const [state] = await harness.up([
      {
        name: "bench",
        nodes: kwokNodes,
        nodeCapacity: { cpu: "1000", memory: "4000Gi", pods: String(2600) },
      },
    ]);
    kubeconfig = state!.kubeconfig;
  }
  client = loadClusterClient("bench", kubeconfig!);
  await installCrds(client.kubeConfig, { crds: MONITOR_CRDS });
  await ensureNamespace(client.core, NAMESPACE, { [BENCH_LABEL]: "monitor" });
  await client.core.createNamespacedSecret({
    namespace: NAMESPACE,
    body: { metadata: { name: "hook" }, stringData: { "hmac-secret": HOOK_SECRET } },
  });
  await receiver.start();
  await endpoint.start();

  const registry = new Registry();
  const logger = pino({ level: "warn" }, pino.destination({ dest: join(dir, "monitor.log"), sync: false }));
  monitor = new Monitor({
    client,
    metrics: new MonitorMetrics(registry),
    logger,
    ruleSelector: `${BENCH_LABEL}=monitor`,
  });
  await monitor.start();

  // Rules every pod is evaluated under; none of them fires here.
  const quiet: [string, MonitorRuleSpec][] = [
    ["bench-long-running", { object: "Pod", condition: "long-running", cutOffMinutes: 600 }],
    ["bench-long-terminating", { object: "Pod", condition: "long-terminating", cutOffMinutes: 60 }],
    ["bench-last-restart", { object: "Pod", condition: "last-restart", cutOffMinutes: 60 }],
  ];
  for (const [name, spec] of quiet) await createRule(client, name, spec);

  progress(`creating ${numbers.pods} pods`);
  const createStarted = performance.now();
  await createPods(client, "pod", numbers.pods, {});
  const createSeconds = (performance.now() - createStarted) / 1000;
  // The alerts below are timed from when their pods were made; pods still waiting for the scheduler
  // and KWOK would hold the probed ones back behind thousands of others.
  const runningSeconds = await allRunning(client, numbers.pods, 600_000);
  progress("waiting for the monitor to go quiet");
  await idle(monitor, 2000, 600_000);

  progress(`${numbers.sweeps} sweeps over every pod`);
  const sweep = await sweeps(client, monitor, quiet.length);

  // Alerts: rules with a signed webhook, then conditions made true on known objects at known times.
  const webhook = {
    url: receiver.url,
    secretRef: { namespace: NAMESPACE, name: "hook", key: "hmac-secret" },
  };
  const selected = (value: string) => ({ matchLabels: { [ALERT_LABEL]: value } });
  await createRule(client, "bench-pod-pending", {
    object: "Pod",
    condition: "long-pending",
    cutOffMinutes: CUT_OFF_MINUTES,
    selector: selected("pending"),
    webhook,
  });
  await createRule(client, "bench-claim-pending", {
    object: "PersistentVolumeClaim",
    condition: "long-pending",
    cutOffMinutes: CUT_OFF_MINUTES,
    selector: selected("pending"),
    webhook,
  });
  await createRule(client, "bench-node-not-ready", {
    object: "Node",
    condition: "not-ready",
    cutOffMinutes: CUT_OFF_MINUTES,
    selector: selected("not-ready"),
    webhook,
  });
  await createRule(client, "bench-endpoint", {
    object: "Pod",
    condition: "endpoint-probe",
    selector: selected("probe"),
    probe: {
      endpointUrl: `http://127.0.0.1:${endpoint.port}/{{metadata.name}}`,
      timeoutSeconds: 2,
      retries: 0,
      statusCode: 200,
      initialDelaySeconds: 0,
      periodSeconds: 5,
    },
    webhook,
  });
  await idle(monitor, 1000, 120_000);

  /** Alert key → when its condition became true (ms since the epoch), by condition. */
  const expected = new Map<string, { condition: string }>();
  const cutOffMs = CUT_OFF_MINUTES * 60_000;

  progress("alerts: nodes NotReady, claims and pods pending, endpoints failing");
  const nodes = (async () => {
    for (const name of notReadyNodes) {
      await client!.core.createNode({
        body: {
          metadata: { name, labels: { [BENCH_LABEL]: "monitor", [ALERT_LABEL]: "not-ready" } },
          spec: { taints: [{ key: BENCH_LABEL, value: "monitor", effect: "NoSchedule" }] },
        },
      });
    }
    // Each at a whole second, so the lastTransitionTime written is the moment it became NotReady.
    for (const name of notReadyNodes) {
      await sleep(1000 - (Date.now() % 1000));
      const at = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
      expected.set(Receiver.key("Node", undefined, name), { condition: "not-ready" });
      await client!.core.patchNodeStatus(
        {
          name,
          body: {
            status: {
              conditions: [
                {
                  type: "Ready",
                  status: "False",
                  reason: "BenchNotReady",
                  message: "made NotReady by the benchmark",
                  lastTransitionTime: at,
                  lastHeartbeatTime: at,
                },
              ],
            },
          },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
    }
  })();
  const claims = (async () => {
    await boundedAll(
      Array.from({ length: numbers.claims }, (_, i) => `claim-${i}`),
      numbers.concurrency,
      async (name) => {
        expected.set(Receiver.key("PersistentVolumeClaim", NAMESPACE, name), { condition: "long-pending" });
        await client!.core.createNamespacedPersistentVolumeClaim({
          namespace: NAMESPACE,
          body: {
            metadata: { name, labels: { [BENCH_LABEL]: "monitor", [ALERT_LABEL]: "pending" } },
            spec: {
              accessModes: ["ReadWriteOnce"],
              // No such class: the claim stays Pending.
              storageClassName: "bench-monitor-none",
              resources: { requests: { storage: "1Gi" } },
            },
          },
        });
      },
    );
  })();
  const pending = (async () => {
    const intervalMs = 1000 / numbers.alertRate;
    const started = performance.now();
    await boundedAll(
      Array.from({ length: numbers.alerts }, (_, i) => i),
      numbers.concurrency,
      async (i) => {
        const wait = started + i * intervalMs - performance.now();
        if (wait > 0) await sleep(wait);
        const name = `pending-${i}`;
        expected.set(Receiver.key("Pod", NAMESPACE, name), { condition: "long-pending" });
        await client!.core.createNamespacedPod({
          namespace: NAMESPACE,
          body: pod(name, { [ALERT_LABEL]: "pending" }, true),
        });
      },
    );
  })();
  const probed = (async () => {
    await boundedAll(
      Array.from({ length: numbers.probePods }, (_, i) => `probed-${i}`),
      4,
      async (name) => {
        expected.set(Receiver.key("Pod", NAMESPACE, name), { condition: "endpoint-probe" });
        await client!.core.createNamespacedPod({
          namespace: NAMESPACE,
          body: pod(name, { [ALERT_LABEL]: "probe" }, false),
        });
      },
    );
  })();
  await Promise.all([nodes, claims, pending, probed]);

  // Every alert due: wait for them (a minute past the last deadline at most).
  const waitUntil = Date.now() + cutOffMs + 60_000;
  while (Date.now() < waitUntil && [...expected.keys()].some((key) => !receiver.arrivals.has(key)))
    await sleep(200);
  const loadAfter = loadAverage();

  const byCondition = new Map<string, { latencies: number[]; expected: number }>();
  for (const [key, { condition }] of expected) {
    const what = `${key.split("/")[0]} ${condition}`;
    const entry = byCondition.get(what) ?? { latencies: [], expected: 0 };
    entry.expected++;
    byCondition.set(what, entry);
    const arrival = receiver.arrivals.get(key);
    if (!arrival) continue;
    const n = arrival.notification;
    // Timed conditions: true from `since` (the object's own timestamp) plus the cut-off. The probe:
    // from the endpoint's first 503 to that pod (the monitor's own `since` is whole seconds).
    const trueAt =
      condition === "endpoint-probe"
        ? endpoint.firstFailure.get(n.target.name)
        : Date.parse(n.since) + cutOffMs;
    if (trueAt !== undefined) entry.latencies.push(arrival.at - trueAt);
  }
  const notifications =
    (await registry.getSingleMetric("tenantry_monitor_notifications_total")?.get())?.values ?? [];
  const outcome = (name: string) =>
    notifications.filter((v) => v.labels.outcome === name).reduce((sum, v) => sum + v.value, 0);

  const sweepRates = sweep.results.map((r) => r.objects / (r.ms / 1000));
  printTable(
    `monitor evaluations: every pod again after a rule change (${numbers.pods} pods and the cluster's own)`,
    [
      "pods",
      "pod rules",
      "sweeps",
      "pods in cluster",
      "sweep s p50",
      "objects/s p50",
      "objects/s min",
      "rule evaluations/s p50",
    ],
    [
      [
        String(numbers.pods),
        String(sweep.podRules),
        String(sweep.results.length),
        String(
          percentile(
            sweep.results.map((r) => r.objects),
            50,
          ),
        ),
        seconds(
          percentile(
            sweep.results.map((r) => r.ms),
            50,
          ),
        ),
        percentile(sweepRates, 50).toFixed(0),
        Math.min(...sweepRates).toFixed(0),
        (percentile(sweepRates, 50) * sweep.podRules).toFixed(0),
      ],
    ],
    [
      "A sweep: from the rule's create (or patch) request until the monitor's pod queue is empty and nothing is in flight;",
      "objects/s: evaluations in that time (each pod against every pod rule; none fires) per second. Nearest-rank percentiles over the sweeps.",
      `Pods created at ${numbers.concurrency} in flight: ${(numbers.pods / createSeconds).toFixed(0)} pods/s through the API server; all Running (scheduler and KWOK) ${runningSeconds.toFixed(0)} s after the last create, before anything is timed.`,
    ],
  );
  const rows: Cell[][] = [];
  const all: number[] = [];
  for (const [condition, entry] of byCondition) {
    all.push(...entry.latencies);
    rows.push([
      condition,
      String(entry.expected),
      String(entry.latencies.length),
      ms(percentile(entry.latencies, 50)),
      ms(percentile(entry.latencies, 99)),
      ms(Math.max(...entry.latencies)),
    ]);
  }
  rows.push([
    "all",
    String(expected.size),
    String(all.length),
    ms(percentile(all, 50)),
    ms(percentile(all, 99)),
    ms(Math.max(...all)),
  ]);
  printTable(
    `condition true → signed webhook received, with ${numbers.pods} pods watched`,
    ["object and condition", "alerts", "received", "p50 ms", "p99 ms", "max ms"],
    rows,
    [
      `Cut-off ${CUT_OFF_MINUTES} min (3 s) for the timed conditions; true from the object's timestamp (creationTimestamp, or the node's`,
      "Ready lastTransitionTime, written at a whole second) plus the cut-off — whole seconds, as the API server keeps them;",
      "the monitor looks again 200 ms after a deadline, so that much is by design. endpoint-probe: from the endpoint's first 503",
      "to that pod (period 5 s, no retries). Pending pods created at",
      `${numbers.alertRate}/s; ${numbers.claims} claims (${numbers.concurrency} creates in flight) and ${numbers.probePods} probed pods at once; ${numbers.notReady} nodes made NotReady one a second.`,
      `Received: first firing notification per object, its HMAC-SHA256 signature checked (${receiver.badSignatures} bad); deliveries ${receiver.deliveries},`,
      `monitor outcomes: delivered ${outcome("delivered")}, failed ${outcome("failed")}, dropped ${outcome("dropped")}. Nearest-rank percentiles.`,
      `Monitor in this process (4 workers per kind); machine: ${cpus().length} cores, shared; load average ${loadBefore} before, ${loadAfter} after.`,
    ],
  );
} finally {
  await monitor?.stop();
  receiver.stop();
  endpoint.stop();
  if (!flags.keep) {
    if (harness) await harness.reset();
    else if (client) {
      for (const name of notReadyNodes) await client.core.deleteNode({ name }).catch(() => {});
      const namespaces = async () =>
        (await client!.core.listNamespace({ labelSelector: `${BENCH_LABEL}=monitor` })).items;
      for (const ns of await namespaces())
        await client.core.deleteNamespace({ name: ns.metadata!.name! }).catch(() => {});
      // Gone before the next run makes them again.
      const deadline = Date.now() + 10 * 60_000;
      while ((await namespaces()).length > 0 && Date.now() < deadline) await sleep(1000);
      const rules = (await client.objects.list(TENANTS_API_VERSION, "MonitorRule")).items.filter(
        (rule) => rule.metadata?.labels?.[BENCH_LABEL] === "monitor",
      );
      for (const rule of rules) await client.objects.delete(rule).catch(() => {});
    }
    await rm(dir, { recursive: true, force: true });
  } else progress(`kept: ${dir}`);
}
