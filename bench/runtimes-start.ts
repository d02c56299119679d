/**
 * `npm run bench:runtimes-start`: how long a user waits for a runtime, measured as a client sees
 * it — POST /services/{user}/{service}/{instance} sent → first GET answering 200 — on a local
 * cluster and tenantry (Admin API and runtimes controller) on it; the runtimes run on the
 * cluster's process node (real processes: the echo server, probed for real) or, with
 * `--on simulated`, on KWOK's nodes (Ready at once). One start at a time (--runs of them), then
 * --concurrent starts at once, each by its own user, and for each when every step was done
 * (namespace, Runtime, objects applied, pod created, scheduled, process started, server
 * answering, pod Ready, runtime Ready, GET 200), to the millisecond from watches
 * (runtimes-start/phases.ts). Then one user starts `concurrentStartsPerUser` instances at once:
 * exactly that many are accepted. Goal: 100 concurrent, p99 under 10 s; readiness noticed within
 * 100 ms of the server answering.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { pino } from "pino";
import { startEmbeddedTenantry } from "../src/app/embedded.js";
import type { RunningTenantry } from "../src/app/tenantry.js";
import { loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, LOCAL_IMAGES, PROCESS_NODE_PLACEMENT } from "../src/localcluster/index.js";
import { PhaseClock } from "./runtimes-start/phases.js";
import { ms, percentile, printTable } from "./support/report.js";

const program = new Command()
  .option("--runs <n>", "single starts, one after another", "10")
  .option("--concurrent <list>", "starts at once, one user each", "1,100")
  .option("--nodes <n>", "simulated nodes", "3")
  .option(
    "--on <nodes>",
    "where runtimes run: process-node (real processes) or simulated (KWOK)",
    "process-node",
  )
  .option(
    "--per-user-limit <n>",
    "concurrentStartsPerUser, checked with that many starts of one user at once",
    "10",
  )
  .option("--timeout <seconds>", "a start not answering 200 by then counts as failed", "60")
  .option(
    "--defaults <json>",
    "the benchmark service's plugin defaults (default: the echo server on the process node, a made-up image on simulated nodes)",
  )
  .option(
    "--controller-manager-qps <n>",
    "kube-controller-manager's --kube-api-qps (burst twice that) on the cluster it starts (default: its own, 20)",
  )
  .option("--keep-logs", "keep tenantry's and the cluster's logs after a run that passed")
  .parse();
const flags = program.opts<{
  runs: string;
  concurrent: string;
  nodes: string;
  timeout: string;
  on: string;
  perUserLimit: string;
  defaults?: string;
  controllerManagerQps?: string;
  keepLogs?: boolean;
}>();
const KCM_QPS = flags.controllerManagerQps === undefined ? undefined : Number(flags.controllerManagerQps);
if (KCM_QPS !== undefined && !(Number.isInteger(KCM_QPS) && KCM_QPS >= 1)) {
  process.stderr.write("--controller-manager-qps: a whole number of at least 1\n");
  process.exit(2);
}
if (flags.on !== "process-node" && flags.on !== "simulated") {
  process.stderr.write("--on: process-node or simulated\n");
  process.exit(2);
}
const ON_PROCESS_NODE = flags.on === "process-node";
const DEFAULTS = flags.defaults
  ? JSON.parse(flags.defaults)
  : ON_PROCESS_NODE
    ? { image: LOCAL_IMAGES.echo, port: 8080 }
    : { image: "registry.example/app:1", port: 8888 };
const PER_USER_LIMIT = Number(flags.perUserLimit);
const timeoutMs = Number(flags.timeout) * 1000;
const API = "tenantry.dev/v1alpha1";
const SERVICE = "bench";
const TENANT = "bench";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Outcome {
  ms: number;
  /** POST sent → its answer: the Admin API's own part. */
  postMs: number;
  /** The POST was answered 201 or 202. */
  posted: boolean;
  ok: boolean;
  last: string;
  /** When the GET answered 200 (Date.now()). */
  at?: number;
}

async function call(url: string, method: string, token: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** One start as a client sees it: POST, then GET every 50 ms until 200. */
async function startOne(base: string, user: string, token: string, instance: string): Promise<Outcome> {
  const path = `${base}/services/${user}/${SERVICE}/${instance}`;
  const started = performance.now();
  const answer = await call(path, "POST", token, {});
  const postMs = performance.now() - started;
  const posted = answer.status === 201 || answer.status === 202;
  if (!posted)
    return { ms: postMs, postMs, posted, ok: false, last: `POST ${answer.status} ${answer.body.detail}` };
  let last = `POST ${answer.status}`;
  while (performance.now() - started < timeoutMs) {
    const got = await call(path, "GET", token);
    if (got.status === 200)
      return { ms: performance.now() - started, postMs, posted, ok: true, last: "200", at: Date.now() };
    last = `GET ${got.status} ${got.body.phase ?? ""} ${got.body.reason ?? ""}`.trim();
    await sleep(50);
  }
  return { ms: performance.now() - started, postMs, posted, ok: false, last };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-runtimes-"));
  const harness = new ClusterHarness({ dir, log: () => {} });
  let tenantry: RunningTenantry | undefined;
  let passed = false;
  try {
    process.stderr.write("starting a cluster and tenantry …\n");
    const [state] = await harness.up([
      {
        name: "home",
        nodes: Number(flags.nodes),
        ...(KCM_QPS
          ? { extraControllerManagerFlags: [`--kube-api-qps=${KCM_QPS}`, `--kube-api-burst=${2 * KCM_QPS}`] }
          : {}),
      },
    ]);
    const logger = pino(
      { level: "info" },
      pino.destination({ dest: join(dir, "tenantry.log"), sync: false }),
    );
    tenantry = await startEmbeddedTenantry(state!, logger);
    const base = tenantry.runtimesAdmin?.url;
    const identity = tenantry.builtinIdentity;
    if (!base || !identity)
      throw new Error("this tenantry serves no runtimes Admin API or built-in identity");
    const client = loadClusterClient("home", state!.kubeconfig);
    const concurrency = flags.concurrent
      .split(",")
      .map(Number)
      .filter((n) => n > 0);
    const most = Math.max(1, ...concurrency);
    await client.objects.create({
      apiVersion: API,
      kind: "RuntimeService",
      metadata: { name: SERVICE },
      spec: {
        plugin: { builtin: "generic" },
        defaults: DEFAULTS,
        ...(ON_PROCESS_NODE ? { pods: PROCESS_NODE_PLACEMENT } : {}),
        limits: {
          concurrentStartsPerUser: PER_USER_LIMIT,
          concurrentStarts: Math.max(most, PER_USER_LIMIT) * 2,
          instancesPerUser: 1000,
        },
      },
    });
    process.stderr.write(`creating ${most} users …\n`);
    const users: { name: string; token: string }[] = [];
    for (let i = 0; i < most; i++) {
      const name = `user${i}`;
      await identity.createUser({
        name,
        password: `password-${i}-bench`,
        tenant: TENANT,
        tenantAdmin: false,
      });
      users.push({
        name,
        token: (await identity.login({ username: name, password: `password-${i}-bench` })).token,
      });
    }
    // A user's first call puts them in their tenant (first-login provisioning, as logging in does);
    // that is login's cost, not a start's, so every user has called once before anything is timed.
    for (const user of users) await call(`${base}/services/${user.name}`, "GET", user.token);
    await sleep(1000); // the service reaches the Admin API's cache

    const clock = new PhaseClock(client);
    await clock.start();
    const rows: (string | number)[][] = [];
    const postRows: (string | number)[][] = [];
    const notes: string[] = [];
    const phaseTables: { label: string; rows: (string | number)[][]; lags: number[] }[] = [];
    const report = (label: string, outcomes: Outcome[]) => {
      const ok = outcomes.filter((o) => o.ok).map((o) => o.ms);
      const secs = (value: number) => (Number.isFinite(value) ? (value / 1000).toFixed(2) : "-");
      rows.push([
        label,
        String(outcomes.length),
        String(ok.length),
        secs(percentile(ok, 50)),
        secs(percentile(ok, 99)),
        secs(ok.length ? Math.max(...ok) : Number.NaN),
      ]);
      const posts = outcomes.filter((o) => o.posted).map((o) => o.postMs);
      postRows.push([label, String(posts.length), ms(percentile(posts, 50)), ms(percentile(posts, 99))]);
      const failed = outcomes.filter((o) => !o.ok);
      if (failed.length)
        notes.push(
          `${label}: ${failed.length} not answering 200 within ${flags.timeout}s, e.g. ${failed[0]!.last}`,
        );
    };
    const timed = async (user: { name: string; token: string }, instance: string) => {
      const began = Date.now();
      const outcome = await startOne(base, user.name, user.token, instance);
      const key = `${user.name}/${instance}`;
      if (outcome.at) clock.answered(key, outcome.at);
      return { outcome, start: { key, began } };
    };
    const phasesOf = (label: string, starts: { key: string; began: number }[]) => {
      const lags = clock.noticeLagsMs(starts.map((s) => s.key));
      phaseTables.push({ label, rows: clock.rows(starts), lags });
    };
    const cleanUp = async (instances: { user: { name: string; token: string }; instance: string }[]) => {
      await Promise.all(
        instances.map((i) =>
          call(`${base}/services/${i.user.name}/${SERVICE}/${i.instance}`, "DELETE", i.user.token),
        ),
      );
      for (const i of instances) {
        const deadline = Date.now() + 60_000;
        while (Date.now() < deadline) {
          const got = await call(
            `${base}/services/${i.user.name}/${SERVICE}/${i.instance}`,
            "GET",
            i.user.token,
          );
          if (got.status === 404) break;
          await sleep(100);
        }
      }
    };

    const singles: Awaited<ReturnType<typeof timed>>[] = [];
    for (let run = 0; run < Number(flags.runs); run++) {
      process.stderr.write(`single start ${run + 1}/${flags.runs}\n`);
      const user = users[0]!;
      singles.push(await timed(user, `s${run}`));
      await cleanUp([{ user, instance: `s${run}` }]);
    }
    report(
      "1 (sequential)",
      singles.map((s) => s.outcome),
    );
    phasesOf(
      "1 (sequential)",
      singles.map((s) => s.start),
    );
    for (const n of concurrency) {
      process.stderr.write(`${n} concurrent starts (load average ${loadavg()[0]!.toFixed(2)})\n`);
      const batch = users.slice(0, n).map((user) => ({ user, instance: `c${n}` }));
      const done = await Promise.all(batch.map((b) => timed(b.user, b.instance)));
      report(
        `${n} at once`,
        done.map((d) => d.outcome),
      );
      phasesOf(
        `${n} at once`,
        done.map((d) => d.start),
      );
      await cleanUp(batch);
    }
    const limitCheck = await checkPerUserLimit(users[0]!, timed, cleanUp);
    await clock.stop();
    printTable(
      `runtime start: POST → GET 200 (seconds; runtimes on ${ON_PROCESS_NODE ? "the process node, real processes" : `${flags.nodes} simulated nodes`}, one namespace per user)`,
      ["starts", "runs", "answered 200", "p50 s", "p99 s", "max s"],
      rows,
      [
        ...notes,
        "p50/p99 are nearest-rank percentiles over the starts that answered 200.",
        `load average at the end: ${loadavg()
          .map((l) => l.toFixed(2))
          .join(" ")} (the cluster, tenantry and the clients share this machine).`,
        `kube-controller-manager (which makes each Deployment's ReplicaSet and pod) sends at most ${KCM_QPS ? `${KCM_QPS} requests/s, bursts of ${2 * KCM_QPS} (--controller-manager-qps)` : "20 requests/s, bursts of 30 (its defaults; --controller-manager-qps)"}.`,
      ],
    );
    printTable(
      "the Admin API's part: POST sent → 201/202 answered (milliseconds; the Runtime object created)",
      ["starts", "answered", "p50 ms", "p99 ms"],
      postRows,
      [],
    );
    for (const table of phaseTables)
      printTable(
        `${table.label}, phase by phase: when each step was first seen, seconds after the start's POST`,
        ["step", "runtimes", "p50 s", "p99 s", "max s"],
        table.rows,
        [
          "Seen by watches in this process (to the millisecond); a namespace made by an earlier batch is not counted.",
          `readiness noticed (runtime Ready − server answering, the server dialled every 20 ms): p50 ${ms(percentile(table.lags, 50))} ms, p99 ${ms(percentile(table.lags, 99))} ms, max ${ms(table.lags.length ? Math.max(...table.lags) : Number.NaN)} ms over ${table.lags.length}`,
        ],
      );
    process.stdout.write(
      `\nstart limits: one user starting ${PER_USER_LIMIT + 1} instances at once with concurrentStartsPerUser ${PER_USER_LIMIT}: ${limitCheck.accepted} accepted, ${limitCheck.refused} refused with 429 (${limitCheck.detail})\n`,
    );
    passed = true;
  } finally {
    await tenantry?.stop().catch(() => {});
    if (passed && !flags.keepLogs) {
      await harness.reset().catch(() => {});
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    } else {
      await harness.down().catch(() => {});
      process.stderr.write(`logs: ${dir}/tenantry.log and ${dir}/<cluster>/logs\n`);
    }
  }
}

await main();

/**
 * One user starts one instance more than concurrentStartsPerUser at once: exactly the limit is
 * accepted (202), the rest refused (429).
 */
async function checkPerUserLimit(
  user: { name: string; token: string },
  timed: (user: { name: string; token: string }, instance: string) => Promise<{ outcome: Outcome }>,
  cleanUp: (instances: { user: { name: string; token: string }; instance: string }[]) => Promise<void>,
): Promise<{ accepted: number; refused: number; detail: string }> {
  const instances = Array.from({ length: PER_USER_LIMIT + 1 }, (_, i) => `l${i}`);
  const outcomes = await Promise.all(instances.map((instance) => timed(user, instance)));
  const refusals = outcomes.filter((o) => o.outcome.last.startsWith("POST 429"));
  await cleanUp(instances.map((instance) => ({ user, instance })));
  return {
    accepted: outcomes.filter((o) => o.outcome.posted).length,
    refused: refusals.length,
    detail: refusals[0]?.outcome.last ?? "none refused",
  };
}
