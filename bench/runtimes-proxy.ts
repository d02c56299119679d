/**
 * `npm run bench:runtimes-proxy`: tenantry's runtimes proxy side by side with
 * configurable-http-proxy 5.3.0 (JupyterHub's), in one run: the same backend, the same load
 * generator (autocannon), each proxy in a process of its own, measured one after the other with
 * the order alternating between runs. Rows: requests/s and p50/p99 latency at 1, 10 and 100
 * connections with 1, 1,000 and 10,000 routes, and each proxy's CPU time per request; WebSocket
 * set-up and echo round trips; route add latency at 10,000 routes (configurable-http-proxy: its
 * REST API; tenantry: a Runtime's status written → the route served by a proxy following a real
 * cluster through informers, and the route table alone); resident memory before and after
 * --requests proxied requests. Goal (issue 12): at least 2× its requests/s at every point, p99 no
 * worse, memory flat. A second table measures the Admin API behind the proxy, in process or forwarded.
 *
 * Run: npm run bench:runtimes-proxy [-- --duration 10 --runs 3 --routes 1,1000,10000
 *      --connections 1,10,100 --requests 1000000 --skip-cluster]
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PatchStrategy } from "@kubernetes/client-node";
import { Command } from "commander";
import { createProgress } from "../src/common/index.js";
import { type ClusterClient, loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness } from "../src/localcluster/index.js";
import { RUNTIMES_CRDS } from "../src/runtimes/index.js";
import { installCrds } from "../src/tenants/index.js";
import { addChpRoute, CHP_VERSION, type Chp, deleteChpRoute, startChp } from "./runtimes-proxy/chp.js";
import { type LoadResult, load } from "./runtimes-proxy/load.js";
import { ask, type Child, forkTs, stop } from "./runtimes-proxy/processes.js";
import {
  BENCH_CREDENTIAL,
  BENCH_NAMESPACE,
  benchRuntime,
  benchService,
  routePrefix,
} from "./runtimes-proxy/routes.js";
import { measureWebSocket } from "./runtimes-proxy/websocket.js";
import {
  boundedAll,
  type Cell,
  cpuSecondsOfPid,
  percentile,
  printTable,
  rssMiBOfPid,
} from "./support/report.js";

const flags = new Command()
  .option("--duration <seconds>", "length of each load run", "8")
  .option("--runs <n>", "runs of each load point (the median is reported)", "5")
  .option("--routes <list>", "route counts", "1,1000,10000")
  .option("--connections <list>", "concurrent connections", "1,10,100")
  .option("--requests <n>", "proxied requests between the two memory readings", "1000000")
  .option("--ws-connections <n>", "WebSocket connections opened one after another", "200")
  .option("--ws-messages <n>", "WebSocket echo round trips", "5000")
  .option("--route-adds <n>", "routes added at 10,000 routes, one after another", "200")
  .option("--skip-cluster", "no local cluster: leave out the informer route-add row and the Admin API table")
  .parse()
  .opts<{
    duration: string;
    runs: string;
    routes: string;
    connections: string;
    requests: string;
    wsConnections: string;
    wsMessages: string;
    routeAdds: string;
    skipCluster?: boolean;
  }>();

const list = (text: string) =>
  text
    .split(",")
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
const routeCounts = list(flags.routes).sort((a, b) => a - b);
const connectionCounts = list(flags.connections);
const runs = Number(flags.runs);
const duration = Number(flags.duration);
const ADD_ROUTES_AT = 10_000;
/** Route number of the WebSocket route (beyond every route count). */
const WS_ROUTE = 10_000_000;
const here = join(import.meta.dirname, "runtimes-proxy");
const log = (line: string) => process.stderr.write(`${line}\n`);
const sleep = (msDelay: number) => new Promise((resolve) => setTimeout(resolve, msDelay));

interface Proxies {
  backend: Child<{ url: string; helloUrl: string }>;
  tenantry: Child<{ url: string }>;
  chp: Chp;
}

/** `tenantry / chp` for rates (higher is better), `chp / tenantry` for costs (lower is better). */
function advantage(tenantry: number, chp: number, higherIsBetter: boolean): string {
  if (!(tenantry > 0 && chp > 0)) return "-";
  return `${(higherIsBetter ? tenantry / chp : chp / tenantry).toFixed(2)}×`;
}

const median = (values: number[]) => percentile(values, 50);
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");

interface Measured extends LoadResult {
  cpuUsPerRequest: number;
}

async function measure(url: string, pid: number, paths: string[], connections: number): Promise<Measured> {
  const before = cpuSecondsOfPid(pid) * 1000;
  const result = await load({
    url,
    paths,
    connections,
    durationSeconds: duration,
    headers: BENCH_CREDENTIAL,
  });
  const cpuMs = cpuSecondsOfPid(pid) * 1000 - before;
  return { ...result, cpuUsPerRequest: result.requests ? (cpuMs * 1000) / result.requests : Number.NaN };
}

/** Both proxies hold routes 0 … count-1 to the backend's hello listener. */
async function setRoutes(p: Proxies, have: number, count: number): Promise<void> {
  await ask(p.tenantry.child, { op: "routes", count, backend: p.backend.info.helloUrl });
  const progress = createProgress(`configurable-http-proxy: routes ${have} → ${count}`);
  const indexes = Array.from({ length: count - have }, (_, i) => have + i);
  let done = 0;
  await boundedAll(indexes, 16, async (i) => {
    await addChpRoute(p.chp, routePrefix(i), p.backend.info.helloUrl);
    progress.update(++done, indexes.length);
  });
  progress.finish(`configurable-http-proxy holds ${count} routes`);
}

async function throughput(p: Proxies, rows: Cell[][]): Promise<void> {
  let have = 0;
  for (const routes of routeCounts) {
    await setRoutes(p, have, routes);
    have = routes;
    const paths = Array.from({ length: routes }, (_, i) => `${routePrefix(i)}/hello`);
    // Warm-up: JIT, the HTTP parsers, connection pools, caches (longer for processes just started).
    for (const url of [p.tenantry.info.url, p.chp.url]) {
      await load({
        url,
        paths,
        connections: 10,
        durationSeconds: routes === routeCounts[0] ? 6 : 3,
        headers: BENCH_CREDENTIAL,
      });
    }
    for (const connections of connectionCounts) {
      const t: Measured[] = [];
      const c: Measured[] = [];
      for (let run = 0; run < runs; run++) {
        log(`${routes} routes, ${connections} connections, run ${run + 1}/${runs}`);
        const tenantryFirst = run % 2 === 0;
        if (tenantryFirst)
          t.push(await measure(p.tenantry.info.url, p.tenantry.child.pid!, paths, connections));
        c.push(await measure(p.chp.url, p.chp.child.pid!, paths, connections));
        if (!tenantryFirst)
          t.push(await measure(p.tenantry.info.url, p.tenantry.child.pid!, paths, connections));
      }
      const failures = [...t, ...c].reduce((sum, r) => sum + r.failures, 0);
      if (failures) log(`  ${failures} failed requests at ${routes} routes, ${connections} connections`);
      const row = (
        measureName: string,
        pick: (r: Measured) => number,
        higher: boolean,
        format: (n: number) => string,
      ) => {
        const tv = median(t.map(pick));
        const cv = median(c.map(pick));
        rows.push([
          measureName,
          String(routes),
          String(connections),
          format(tv),
          format(cv),
          advantage(tv, cv, higher),
        ]);
      };
      row(
        "requests/s",
        (r) => r.rps,
        true,
        (n) => n.toFixed(0),
      );
      row("p50 ms", (r) => r.p50, false, ms2);
      row("p99 ms", (r) => r.p99, false, ms2);
      row(
        "proxy CPU µs/request",
        (r) => r.cpuUsPerRequest,
        false,
        (n) => n.toFixed(0),
      );
    }
  }
}

const ms2 = (value: number) => (Number.isFinite(value) ? value.toFixed(2) : "-");

async function websockets(p: Proxies, rows: Cell[][]): Promise<void> {
  const prefix = routePrefix(WS_ROUTE);
  await ask(p.tenantry.child, { op: "put", index: WS_ROUTE, backend: p.backend.info.url });
  await addChpRoute(p.chp, prefix, p.backend.info.url);
  const connections = Number(flags.wsConnections);
  const messages = Number(flags.wsMessages);
  log(`WebSocket: ${connections} connections, ${messages} round trips through each proxy`);
  const t = await measureWebSocket(`${p.tenantry.info.url}${prefix}/ws`, connections, messages);
  const c = await measureWebSocket(`${p.chp.url}${prefix}/ws`, connections, messages);
  for (const [name, pick] of [
    ["WebSocket set-up ms", (m: typeof t) => m.connect],
    ["WebSocket echo ms", (m: typeof t) => m.echo],
  ] as const) {
    for (const q of [50, 99]) {
      const tv = percentile(pick(t), q);
      const cv = percentile(pick(c), q);
      rows.push([`${name} p${q}`, "1", "1", ms2(tv), ms2(cv), advantage(tv, cv, false)]);
    }
  }
}

async function routeAdds(p: Proxies, rows: Cell[][], informer: number[] | undefined): Promise<void> {
  const adds = Number(flags.routeAdds);
  const base = Math.max(ADD_ROUTES_AT, ...routeCounts);
  const inMemory = (
    await ask<{ samples: number[] }>(p.tenantry.child, {
      op: "add",
      count: adds,
      backend: p.backend.info.helloUrl,
    })
  ).samples;
  log(`route adds: ${adds} through configurable-http-proxy's REST API`);
  const chpAdds: number[] = [];
  for (let i = 0; i < adds; i++) {
    const prefix = routePrefix(base + 1 + i);
    const started = performance.now();
    await addChpRoute(p.chp, prefix, p.backend.info.helloUrl);
    await untilServed(`${p.chp.url}${prefix}/hello`);
    chpAdds.push(performance.now() - started);
  }
  for (let i = 0; i < adds; i++) await deleteChpRoute(p.chp, routePrefix(base + 1 + i));
  for (const q of [50, 99]) {
    const cv = percentile(chpAdds, q);
    if (informer) {
      const tv = percentile(informer, q);
      rows.push([
        `route add → served ms p${q} (informer)`,
        String(ADD_ROUTES_AT),
        "1",
        ms2(tv),
        ms2(cv),
        advantage(tv, cv, false),
      ]);
    }
    const tv = percentile(inMemory, q);
    rows.push([
      `route add ms p${q} (table alone)`,
      String(ADD_ROUTES_AT),
      "-",
      tv.toFixed(4),
      ms2(cv),
      advantage(tv, cv, false),
    ]);
  }
}

/** Polls `url` until it answers 200; resolves then. */
async function untilServed(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const res = await fetch(url, { headers: BENCH_CREDENTIAL }).catch(() => undefined);
    await res?.arrayBuffer();
    if (res?.status === 200) return;
    if (performance.now() > deadline) throw new Error(`${url} not served within ${timeoutMs} ms`);
    await sleep(1);
  }
}

async function memory(p: Proxies, rows: Cell[][]): Promise<void> {
  const requests = Number(flags.requests);
  const quarter = Math.ceil(requests / 4);
  const routes = Math.max(...routeCounts);
  const paths = Array.from({ length: routes }, (_, i) => `${routePrefix(i)}/hello`);
  for (const [name, url, pid] of [
    ["tenantry", p.tenantry.info.url, p.tenantry.child.pid!],
    ["configurable-http-proxy", p.chp.url, p.chp.child.pid!],
  ] as const) {
    log(`memory: ${requests} requests through ${name}`);
    // Read after each quarter: growth that levels off is a heap reaching its size, not a leak.
    const readings = [rssMiBOfPid(pid)];
    let failures = 0;
    const heap: number[] = [];
    if (name === "tenantry") heap.push(await heapUsedMiB(p));
    for (let i = 0; i < 4; i++) {
      failures += (await load({ url, paths, connections: 100, amount: quarter, headers: BENCH_CREDENTIAL }))
        .failures;
      readings.push(rssMiBOfPid(pid));
      if (name === "tenantry") heap.push(await heapUsedMiB(p));
    }
    memoryReadings.push({ name, readings, failures });
    if (name === "tenantry") tenantryHeap.push(...heap);
  }
  const [t, c] = memoryReadings as [MemoryReading, MemoryReading];
  const label = (n: number) => `${((n * quarter) / 1000).toLocaleString("en")}k`;
  for (let i = 0; i < 5; i++) {
    rows.push([
      i === 0 ? "RSS MiB before" : `RSS MiB after ${label(i)} requests`,
      String(routes),
      "100",
      t.readings[i]!.toFixed(0),
      c.readings[i]!.toFixed(0),
      advantage(t.readings[i]!, c.readings[i]!, false),
    ]);
  }
  for (let i = 0; i < 5; i++) {
    rows.push([
      i === 0 ? "tenantry JS heap used MiB before" : `JS heap used MiB after ${label(i)} requests`,
      String(routes),
      "100",
      tenantryHeap[i]!.toFixed(0),
      "-",
      "-",
    ]);
  }
  rows.push([
    "RSS MiB growth, last three quarters",
    String(routes),
    "100",
    (t.readings[4]! - t.readings[1]!).toFixed(0),
    (c.readings[4]! - c.readings[1]!).toFixed(0),
    "-",
  ]);
}

interface MemoryReading {
  name: string;
  /** RSS in MiB before, and after each quarter of the requests. */
  readings: number[];
  failures: number;
}
const memoryReadings: MemoryReading[] = [];
/** tenantry's JS heap in use (after a full GC), with the RSS readings: growth of RSS alone is no leak. */
const tenantryHeap: number[] = [];

async function heapUsedMiB(p: Proxies): Promise<number> {
  return (await ask<{ heapUsedMiB: number }>(p.tenantry.child, { op: "stats", gc: true })).heapUsedMiB;
}

// --- the cluster part: routes from informers, and the Admin API -------------------------------------

interface ClusterPart {
  informerAdds: number[];
  adminRows: Cell[][];
}

async function clusterPart(helloUrl: string): Promise<ClusterPart> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-proxy-"));
  const harness = new ClusterHarness({ dir, log: () => {} });
  let informerProxy: Child<{ url: string }> | undefined;
  let admin: Child<{ admin: string; inProcess: string; forwarded: string }> | undefined;
  try {
    log("starting a local cluster …");
    const [state] = await harness.up([{ name: "home", nodes: 1 }]);
    const client = loadClusterClient("home", state!.kubeconfig);
    await installCrds(client.kubeConfig, { crds: RUNTIMES_CRDS });
    await client.core.createNamespace({ body: { metadata: { name: BENCH_NAMESPACE } } });
    await createWhenServed(client, benchService());
    const progress = createProgress(`Runtime objects with routes`);
    let done = 0;
    await boundedAll(
      Array.from({ length: ADD_ROUTES_AT }, (_, i) => i),
      32,
      async (i) => {
        await putRuntime(client, i, helloUrl);
        progress.update(++done, ADD_ROUTES_AT);
      },
    );
    progress.finish(`${ADD_ROUTES_AT} Runtime objects with routes`);
    informerProxy = await forkTs(join(here, "tenantry-process.ts"), ["--kubeconfig", state!.kubeconfig]);
    await untilServed(`${informerProxy.info.url}${routePrefix(0)}/hello`);
    const adds = Number(flags.routeAdds);
    log(`route adds: ${adds} Runtime status writes → served through the informer-fed proxy`);
    const informerAdds: number[] = [];
    for (let i = 0; i < adds; i++) {
      const index = ADD_ROUTES_AT + 1 + i;
      const runtime = benchRuntime(index, helloUrl);
      const { status: _status, ...bare } = runtime;
      await client.objects.create({
        ...bare,
        metadata: { ...bare.metadata, resourceVersion: undefined },
      } as never);
      const started = performance.now();
      await client.objects.patchSubresource(
        {
          ...bare,
          metadata: { name: runtime.metadata!.name, namespace: BENCH_NAMESPACE },
          status: runtime.status,
        } as never,
        "status",
        PatchStrategy.MergePatch,
      );
      await untilServed(`${informerProxy.info.url}${routePrefix(index)}/hello`);
      informerAdds.push(performance.now() - started);
    }

    admin = await forkTs(join(here, "admin-process.ts"), ["--kubeconfig", state!.kubeconfig]);
    const adminRows: Cell[][] = [];
    const paths = ["/services/openapi.json"];
    for (const [name, url] of [
      ["Admin API directly", admin.info.admin],
      ["through the proxy, in process", admin.info.inProcess],
      ["through the proxy, forwarded", admin.info.forwarded],
    ] as const) {
      await load({ url, paths, connections: 10, durationSeconds: 2 });
      const samples: LoadResult[] = [];
      for (let run = 0; run < runs; run++)
        samples.push(await load({ url, paths, connections: 10, durationSeconds: duration }));
      adminRows.push([
        name,
        median(samples.map((s) => s.rps)).toFixed(0),
        ms2(median(samples.map((s) => s.p50))),
        ms2(median(samples.map((s) => s.p99))),
      ]);
    }
    return { informerAdds, adminRows };
  } finally {
    await stop(informerProxy?.child);
    await stop(admin?.child);
    await harness.reset().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

async function createWhenServed(client: ClusterClient, obj: object): Promise<void> {
  // The CRD was just installed: its API may take a moment to be served.
  for (let i = 0; ; i++) {
    try {
      await client.objects.create(obj as never);
      return;
    } catch (err) {
      if (i > 100) throw err;
      await sleep(100);
    }
  }
}

async function putRuntime(client: ClusterClient, i: number, backend: string): Promise<void> {
  const runtime = benchRuntime(i, backend);
  const { status, ...bare } = runtime;
  await client.objects.create({
    ...bare,
    metadata: { name: bare.metadata!.name, namespace: BENCH_NAMESPACE },
  } as never);
  await client.objects.patchSubresource(
    { ...bare, metadata: { name: bare.metadata!.name, namespace: BENCH_NAMESPACE }, status } as never,
    "status",
    PatchStrategy.MergePatch,
  );
}

async function main(): Promise<void> {
  if (!routeCounts.length || !connectionCounts.length || !(runs > 0) || !(duration > 0)) {
    log(
      "usage: bench/runtimes-proxy.ts [--duration S] [--runs N] [--routes 1,1000,10000] [--connections 1,10,100]",
    );
    process.exit(2);
  }
  const backend = await forkTs<{ url: string; helloUrl: string }>(join(here, "backend-process.ts"));
  let proxies: Proxies | undefined;
  try {
    const cluster = flags.skipCluster ? undefined : await clusterPart(backend.info.helloUrl);
    const tenantry = await forkTs<{ url: string }>(join(here, "tenantry-process.ts"));
    const chp = await startChp();
    proxies = { backend, tenantry, chp };
    const rows: Cell[][] = [];
    const loadBefore = loadAverage();
    await throughput(proxies, rows);
    await websockets(proxies, rows);
    await routeAdds(proxies, rows, cluster?.informerAdds);
    await memory(proxies, rows);
    const failed = memoryReadings.filter((m) => m.failures > 0);
    const loadAfter = loadAverage();
    printTable(
      `runtimes proxy: tenantry vs configurable-http-proxy ${CHP_VERSION} (same backend, autocannon; ${runs} runs of ${duration} s per load point, the order alternating; each figure the median of its runs)`,
      ["measure", "routes", "connections", "tenantry", `CHP ${CHP_VERSION}`, "advantage"],
      rows,
      [
        "advantage: tenantry ÷ CHP for requests/s, CHP ÷ tenantry for times, CPU and memory (above 1× tenantry does better).",
        "Load rows: requests round-robin over every route (GET /r/<token>/hello, 6-byte answer written straight from the backend's socket so the rows measure the proxies); p50/p99 are nearest-rank over every answer of the run (autocannon's hrtime per response); proxy CPU is user+system time of the proxy's process ÷ requests.",
        "Both proxies get the same requests, each with `Authorization: token <a JupyterHub API token allowed access:servers everywhere>`: configurable-http-proxy checks nothing and forwards it; tenantry's proxy guards the runtimes as by default (their service is not public) — the header read, its digest looked up in the guard's cache (the token's holder given in code, as the routes are; in tenantry an identity provider or the JupyterHub API's tokens, asked once per credential per 10 s), the access decision, the header kept from the runtime. A browser's session cookie costs one AES-256-GCM open more per request.",
        "tenantry's proxy is fed its routes by a route table in its process (StaticRouteSource) in the load, WebSocket and memory rows: the data path alone. The informer row follows a real local cluster: a Runtime's status written (route token, endpoint, Ready) → the first GET through an informer-fed proxy answering 200, with 10,000 Runtimes routed.",
        "CHP's route add: POST /api/routes/<prefix> → the first GET through it answering 200 (JupyterHub's way), with 10,000 routes; tenantry's table alone: one route put and found by its token, in µs-resolution ms.",
        `Memory: resident set of each proxy's process before and after each quarter of ${Number(flags.requests).toLocaleString("en")} requests at 100 connections over ${Math.max(...routeCounts).toLocaleString("en")} routes (autocannon, one run). tenantry's process starts larger: it runs under tsx and holds the Kubernetes client and ${Math.max(...routeCounts).toLocaleString("en")} Runtime objects; CHP is plain JavaScript.`,
        ...failed.map((m) => `${m.name}: ${m.failures} failed requests in the memory run`),
        `The machine is shared (2 cores; load average ${loadBefore} before, ${loadAfter} after): the backend and the load generator run beside the proxy measured, and other work beside all three.`,
      ],
    );
    if (cluster) {
      printTable(
        `Admin API behind the proxy (GET /services/openapi.json, 10 connections, ${runs} runs of ${duration} s, median run)`,
        ["path", "requests/s", "p50 ms", "p99 ms"],
        cluster.adminRows,
        [
          "in process: the proxy hands the request to the Admin API's router; forwarded: over loopback to its port.",
        ],
      );
    }
  } finally {
    await stop(proxies?.tenantry.child);
    proxies?.chp.child.kill();
    await stop(backend.child);
  }
}

await main();
