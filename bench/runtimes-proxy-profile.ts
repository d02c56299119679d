/**
 * `npm run bench:runtimes-proxy-profile`: where tenantry's runtimes proxy spends its time and memory
 * under the benchmark's load (bench/runtimes-proxy.ts's backend, routes, credential and load
 * generator). Per connection count: requests/s, p99, the proxy's event-loop delay and GC pauses;
 * then --requests requests at 100 connections with the proxy's heap written after the first
 * quarter and at the end (compare them in Chrome DevTools' Memory tab, "Comparison"), and its CPU
 * profile (--cpu-prof) written when it exits.
 *
 * Run: npm run bench:runtimes-proxy-profile [-- --routes 10000 --duration 5 --requests 400000 --out DIR]
 */
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { Command } from "commander";
import { load } from "./runtimes-proxy/load.js";
import { ask, type Child, forkTs, stop } from "./runtimes-proxy/processes.js";
import { BENCH_CREDENTIAL, routePrefix } from "./runtimes-proxy/routes.js";
import { printTable, rssMiBOfPid } from "./support/report.js";

const flags = new Command()
  .option("--routes <n>", "routes", "10000")
  .option("--connections <list>", "concurrent connections", "1,10,100")
  .option("--duration <seconds>", "length of each load run", "5")
  .option("--requests <n>", "requests of the memory run", "400000")
  .option("--out <dir>", "where the heap snapshots and the CPU profile go", "runtimes-proxy-profile")
  .parse()
  .opts<{ routes: string; connections: string; duration: string; requests: string; out: string }>();

interface Stats {
  loopP50: number;
  loopP99: number;
  loopMax: number;
  gcCount: number;
  gcPauseMs: number;
  gcMaxPauseMs: number;
  heapUsedMiB: number;
  rssMiB: number;
}

const here = join(import.meta.dirname, "runtimes-proxy");
const out = resolve(flags.out);
const f1 = (n: number) => n.toFixed(1);

async function main(): Promise<void> {
  await mkdir(out, { recursive: true });
  const backend = await forkTs<{ url: string; helloUrl: string }>(join(here, "backend-process.ts"));
  let proxy: Child<{ url: string }> | undefined;
  try {
    proxy = await forkTs<{ url: string }>(
      join(here, "tenantry-process.ts"),
      [],
      ["--cpu-prof", "--cpu-prof-dir", out],
    );
    const routes = Number(flags.routes);
    await ask(proxy.child, { op: "routes", count: routes, backend: backend.info.helloUrl });
    const paths = Array.from({ length: routes }, (_, i) => `${routePrefix(i)}/hello`);
    const url = proxy.info.url;
    const run = (connections: number, more: { durationSeconds?: number; amount?: number }) =>
      load({ url, paths, connections, headers: BENCH_CREDENTIAL, ...more });
    await run(10, { durationSeconds: 5 });
    const rows: string[][] = [];
    const row = (what: string, rps: number, p99: number, s: Stats) =>
      rows.push([
        what,
        rps.toFixed(0),
        p99.toFixed(2),
        f1(s.loopP50),
        f1(s.loopP99),
        f1(s.loopMax),
        String(s.gcCount),
        f1(s.gcPauseMs),
        f1(s.gcMaxPauseMs),
        f1(s.heapUsedMiB),
        f1(s.rssMiB),
      ]);
    for (const connections of flags.connections.split(",").map(Number)) {
      await ask(proxy.child, { op: "stats" });
      const r = await run(connections, { durationSeconds: Number(flags.duration) });
      row(`${connections} connections`, r.rps, r.p99, await ask<Stats>(proxy.child, { op: "stats" }));
    }
    const requests = Number(flags.requests);
    const quarter = Math.ceil(requests / 4);
    // --requests 0: no memory run (a CPU profile of the load points alone).
    for (let i = 1; i <= 4 && requests > 0; i++) {
      const r = await run(100, { amount: quarter });
      row(`quarter ${i} of ${requests}`, r.rps, r.p99, await ask<Stats>(proxy.child, { op: "stats" }));
      if (i === 1 || i === 4) {
        const file = join(out, `quarter-${i}.heapsnapshot`);
        await ask(proxy.child, { op: "snapshot", file });
        process.stderr.write(`heap snapshot: ${file} (RSS now ${f1(rssMiBOfPid(proxy.child.pid!))} MiB)\n`);
      }
    }
    printTable(
      `tenantry's runtimes proxy under load, ${routes} routes (event loop and GC measured in the proxy's process)`,
      [
        "run",
        "requests/s",
        "p99 ms",
        "loop p50 ms",
        "loop p99 ms",
        "loop max ms",
        "GCs",
        "GC ms",
        "GC max ms",
        "heap MiB",
        "RSS MiB",
      ],
      rows,
      [`Heap snapshots and the CPU profile (written when the proxy exits) are in ${out}.`],
    );
  } finally {
    await stop(proxy?.child);
    await stop(backend.child);
  }
}

await main();
