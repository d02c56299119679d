/**
 * tenantry's runtimes proxy in a process of its own (so its memory and CPU are its own), with its
 * metrics on as in tenantry and its guard on (see `benchCredentials`). Routes come from a route source given in code (the data path alone;
 * commands over IPC set them), or with `--kubeconfig FILE` from informers on that cluster's Runtime
 * objects, as in tenantry. Prints `{"url": …}` once serving.
 */
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { setFlagsFromString, writeHeapSnapshot } from "node:v8";
import { runInNewContext } from "node:vm";
import { Registry } from "prom-client";
import { loadClusterClient } from "../../src/kube/index.js";
import {
  InformerRouteSource,
  type RouteSource,
  RuntimesProxy,
  StaticRouteSource,
} from "../../src/runtimes/index.js";
import { BENCH_NAMESPACE, benchCredentials, benchRuntime, benchService } from "./routes.js";

const { values: args } = parseArgs({ options: { kubeconfig: { type: "string" } } });

let source: RouteSource;
let table: StaticRouteSource | undefined;
if (args.kubeconfig) {
  source = new InformerRouteSource(loadClusterClient("bench", args.kubeconfig));
} else {
  table = new StaticRouteSource();
  table.putService(benchService());
  source = table;
}
// Guarded as by default in tenantry (the service is not public): every request's credential checked.
const proxy = new RuntimesProxy({ source, registry: new Registry(), hubTokens: benchCredentials });
const url = await proxy.start();
process.stdout.write(`${JSON.stringify({ url })}\n`);

let routes = 0;

setFlagsFromString("--expose-gc");
/** A full garbage collection (`gc` exposed at run time: the process runs without flags of its own). */
const runGc = runInNewContext("gc") as () => void;

// What the process does besides serving: event-loop delay and garbage collection since the last `stats`.
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
loopDelay.enable();
const gc = { count: 0, pauseMs: 0, maxPauseMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gc.count++;
    gc.pauseMs += entry.duration;
    gc.maxPauseMs = Math.max(gc.maxPauseMs, entry.duration);
  }
}).observe({ entryTypes: ["gc"] });

/** Event-loop delay percentiles (ms), GC pauses and heap since the last call; the counters restart. */
function stats() {
  const ms = (ns: number) => ns / 1e6;
  const memory = process.memoryUsage();
  const result = {
    loopP50: ms(loopDelay.percentile(50)),
    loopP99: ms(loopDelay.percentile(99)),
    loopMax: ms(loopDelay.max),
    gcCount: gc.count,
    gcPauseMs: gc.pauseMs,
    gcMaxPauseMs: gc.maxPauseMs,
    heapUsedMiB: memory.heapUsed / 2 ** 20,
    rssMiB: memory.rss / 2 ** 20,
  };
  loopDelay.reset();
  Object.assign(gc, { count: 0, pauseMs: 0, maxPauseMs: 0 });
  return result;
}

interface Command {
  id: number;
  op: "routes" | "add" | "put" | "stats" | "snapshot";
  count: number;
  /** For stats: collect garbage before reading the heap. */
  gc?: boolean;
  /** For snapshot: where the heap snapshot goes. */
  file: string;
  /** For put: the route number. */
  index: number;
  backend: string;
}

process.on("message", (message: Command) => {
  try {
    if (message.op === "stats") {
      // A full collection first when asked: the heap then holds only what is retained.
      if (message.gc) runGc();
      return void process.send!({ id: message.id, ...stats() });
    }
    if (message.op === "snapshot") {
      return void process.send!({ id: message.id, file: writeHeapSnapshot(message.file) });
    }
    if (!table) throw new Error("routes come from the cluster in this process");
    if (message.op === "routes") {
      for (; routes < message.count; routes++) table.putRuntime(benchRuntime(routes, message.backend));
      for (; routes > message.count; routes--) table.deleteRuntime(BENCH_NAMESPACE, `rt-${routes - 1}`);
      process.send!({ id: message.id, routes });
    } else if (message.op === "put") {
      table.putRuntime(benchRuntime(message.index, message.backend));
      process.send!({ id: message.id });
    } else if (message.op === "add") {
      // A route added to the table and found by its token: what a request would look up.
      const samples: number[] = [];
      for (let i = 0; i < message.count; i++) {
        const runtime = benchRuntime(routes + i, message.backend);
        const started = performance.now();
        table.putRuntime(runtime);
        if (!table.byToken(runtime.status!.route!.token)) throw new Error("route not visible");
        samples.push(performance.now() - started);
      }
      for (let i = 0; i < message.count; i++) table.deleteRuntime(BENCH_NAMESPACE, `rt-${routes + i}`);
      process.send!({ id: message.id, samples });
    }
  } catch (err) {
    process.send!({ id: message.id, error: (err as Error).message });
  }
});

const shutdown = async () => {
  await proxy.stop();
  process.exit(0);
};
process.on("SIGTERM", () => void shutdown());
process.on("SIGINT", () => void shutdown());
