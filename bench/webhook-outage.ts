/**
 * An outage of tenantry must not block administrators or the cluster's own components. The same
 * requests are sent to kube-apiserver three times on one local cluster: before tenantry was ever
 * installed (no webhook: the baseline), with tenantry running (its webhooks registered), and
 * after tenantry was killed (SIGKILL: its webhook configurations still there, nobody answering).
 * The requests: an administrator creating namespaces, and pods in an ordinary namespace; an
 * administrator creating pods in kube-system; a node updating its own status (as `system:node:…`).
 * Reports failures and latency percentiles per phase and kind, and each p99 against the baseline's.
 * Goal: no failure while tenantry is down, p99 within 10% of the baseline.
 *
 * Starts one local cluster in a temporary folder and tenantry in a process of its own; removes
 * everything after.
 *
 * Run: npm run bench:webhook-outage [-- --requests 1000] [--concurrency 8] [--keep]
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, type RequestOptions, request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, webhookClientCaFile } from "../src/localcluster/index.js";
import { startTenantryProcess, type TenantryProcess } from "../testing/index.js";
import { type Cell, ms, percentile, printTable } from "./support/report.js";

const { values: args } = parseArgs({
  options: {
    requests: { type: "string", default: "1000" },
    concurrency: { type: "string", default: "8" },
    keep: { type: "boolean", default: false },
  },
});
const REQUESTS = Number(args.requests);
const CONCURRENCY = Number(args.concurrency);
if (!(Number.isInteger(REQUESTS) && REQUESTS >= 4) || !(Number.isInteger(CONCURRENCY) && CONCURRENCY >= 1)) {
  process.stderr.write("usage: bench/webhook-outage.ts [--requests N≥4] [--concurrency C≥1] [--keep]\n");
  process.exit(2);
}
/** The goal: while tenantry is down, each kind's p99 at most this much above the baseline's. */
const P99_GOAL_RATIO = 1.1;
const ADMIN_NAMESPACE = "ops";

const progress = (line: string) =>
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

interface Call {
  method: "POST" | "PATCH";
  path: string;
  body: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

/** One request of each kind, numbered so that every one creates something new. */
type Kind = { name: string; call: (phase: string, n: number) => Call };

function pod(name: string, namespace: string) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: { containers: [{ name: "main", image: "registry.k8s.io/pause:3.10" }] },
  };
}

function kinds(node: string): Kind[] {
  return [
    {
      name: "namespace create (admin)",
      call: (phase, n) => ({
        method: "POST",
        path: "/api/v1/namespaces",
        body: { apiVersion: "v1", kind: "Namespace", metadata: { name: `${phase}-ns-${n}` } },
      }),
    },
    {
      name: `pod create in ${ADMIN_NAMESPACE} (admin)`,
      call: (phase, n) => ({
        method: "POST",
        path: `/api/v1/namespaces/${ADMIN_NAMESPACE}/pods`,
        body: pod(`${phase}-pod-${n}`, ADMIN_NAMESPACE),
      }),
    },
    {
      name: "pod create in kube-system (admin)",
      call: (phase, n) => ({
        method: "POST",
        path: "/api/v1/namespaces/kube-system/pods",
        body: pod(`${phase}-pod-${n}`, "kube-system"),
      }),
    },
    {
      name: "node status update (the node)",
      call: (phase, n) => ({
        method: "PATCH",
        path: `/api/v1/nodes/${node}/status`,
        contentType: "application/strategic-merge-patch+json",
        headers: { "Impersonate-User": `system:node:${node}`, "Impersonate-Group": "system:nodes" },
        body: {
          status: {
            conditions: [
              {
                type: "BenchHeartbeat",
                status: "True",
                reason: phase,
                message: `update ${n}`,
                lastHeartbeatTime: new Date().toISOString(),
              },
            ],
          },
        },
      }),
    },
  ];
}

interface Outcome {
  kind: string;
  ms: number;
  error?: string;
}

function send(server: string, tls: RequestOptions, agent: Agent, call: Call): Promise<void> {
  const body = JSON.stringify(call.body);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(call.path, server),
      {
        ...tls,
        agent,
        method: call.method,
        headers: {
          ...(tls.headers as Record<string, string> | undefined),
          ...call.headers,
          "content-type": call.contentType ?? "application/json",
          "content-length": Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          if (text.length < 2000) text += c.toString();
        });
        res.on("end", () =>
          (res.statusCode ?? 0) < 300
            ? resolve()
            : reject(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 300).replace(/\s+/g, " ")}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** `REQUESTS` requests, the kinds interleaved, `CONCURRENCY` at a time. */
async function phase(name: string, server: string, tls: RequestOptions, all: Kind[]): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const outcomes: Outcome[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < REQUESTS; i = next++) {
      const kind = all[i % all.length]!;
      const started = performance.now();
      try {
        await send(server, tls, agent, kind.call(name, i));
        outcomes.push({ kind: kind.name, ms: performance.now() - started });
      } catch (err) {
        outcomes.push({ kind: kind.name, ms: performance.now() - started, error: (err as Error).message });
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  agent.destroy();
  return outcomes;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-outage-"));
  const harness = new ClusterHarness({ dir, log: progress });
  let tenantry: TenantryProcess | undefined;
  try {
    progress("starting local cluster outage");
    const [state] = await harness.up([{ name: "outage", nodes: 1 }]);
    const client = loadClusterClient(state!.name, state!.kubeconfig);
    await client.core.createNamespace({ body: { metadata: { name: ADMIN_NAMESPACE } } });
    const node = (await client.core.listNode()).items.map((n) => n.metadata!.name!).find(Boolean)!;
    const tls: RequestOptions = {};
    await client.kubeConfig.applyToHTTPSOptions(tls);
    const all = kinds(node);
    const results: Record<string, Outcome[]> = {};
    const load: Record<string, string> = {};

    const run = async (label: string, key: string) => {
      progress(`${label}: ${REQUESTS} requests, ${CONCURRENCY} at a time`);
      results[label] = await phase(key, client.server, tls, all);
      load[label] = loadAverage();
      const failed = results[label].filter((o) => o.error);
      if (failed.length) progress(`${label}: ${failed.length} failed, e.g. ${failed[0]!.error}`);
    };

    await run("no webhook (baseline)", "base");
    progress("starting tenantry");
    tenantry = await startTenantryProcess({
      cluster: state!.name,
      kubeconfig: state!.kubeconfig,
      webhookClientCaFile: webhookClientCaFile(state!),
      logFile: join(dir, "tenantry.log"),
      without: ["gateway", "runtimes-admin", "runtimes-proxy", "logical-clouds"],
    });
    await run("tenantry running", "up");
    progress("killing tenantry (SIGKILL): its webhooks stay registered");
    await tenantry.kill();
    tenantry = undefined;
    await run("tenantry down", "down");

    const baseline = results["no webhook (baseline)"]!;
    const rows: Cell[][] = [];
    for (const [label, outcomes] of Object.entries(results)) {
      for (const kind of all) {
        const mine = outcomes.filter((o) => o.kind === kind.name);
        const ok = mine.filter((o) => !o.error).map((o) => o.ms);
        const base = baseline.filter((o) => o.kind === kind.name && !o.error).map((o) => o.ms);
        const ratio = percentile(ok, 99) / percentile(base, 99);
        rows.push([
          label,
          kind.name,
          String(mine.length),
          String(mine.length - ok.length),
          ms(percentile(ok, 50)),
          ms(percentile(ok, 99)),
          Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : "-",
          load[label]!,
        ]);
      }
    }
    const down = results["tenantry down"]!;
    const downFailures = down.filter((o) => o.error).length;
    const worst = Math.max(
      ...all.map(
        (kind) =>
          percentile(
            down.filter((o) => o.kind === kind.name && !o.error).map((o) => o.ms),
            99,
          ) /
          percentile(
            baseline.filter((o) => o.kind === kind.name && !o.error).map((o) => o.ms),
            99,
          ),
      ),
    );
    printTable(
      "Administrator and system requests while tenantry is down (one run per phase)",
      ["phase", "request", "sent", "failed", "p50 ms", "p99 ms", "p99 / baseline", "load average"],
      rows,
      [
        `One local cluster (1 simulated node); ${REQUESTS} requests per phase, ${CONCURRENCY} at a time, the kinds interleaved; nearest-rank percentiles of one run.`,
        "Baseline: the same requests before tenantry was installed. 'tenantry down': after SIGKILL, its webhook configurations left in place.",
        `Goal: 0 failures and p99 ≤ ${P99_GOAL_RATIO}× baseline while tenantry is down: ${downFailures === 0 && worst <= P99_GOAL_RATIO ? "met" : "NOT met"} (${downFailures} failures, worst p99 ratio ${worst.toFixed(2)}×).`,
        `Load average (1, 5, 15 min) at the end of each phase, on ${readFileSync("/proc/cpuinfo", "utf8").match(/^processor/gm)?.length ?? "?"} CPUs.`,
      ],
    );
  } finally {
    await tenantry?.kill().catch(() => {});
    if (args.keep) {
      progress(`kept: ${dir}`);
    } else {
      await harness.reset().catch((err) => progress(`reset failed: ${err}`));
      await rm(dir, { recursive: true, force: true });
    }
  }
}

await main();
