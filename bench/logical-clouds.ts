/**
 * `npm run bench:logical-clouds`: logical clouds on real local clusters (as many as --clusters'
 * largest count, one simulated node each; tenantry runs on the first, which also holds the
 * registry). Through the DCM REST API, as a client certificate of the first cluster:
 *   1. instantiate a logical cloud with --users users over 1, 3 and 10 clusters: POST instantiate
 *      until the status says Instantiated, and each cluster's own time (namespace, quota, container
 *      defaults, role and binding, one certificate per user through its CSR API);
 *   2. terminate it: POST terminate until Terminated (every namespace gone);
 *   3. auto-join: a cloud selecting clusters by label; a label added to one more cluster until that
 *      cluster is Ready in the cloud's status.
 * Each measured --runs times; percentiles are nearest-rank over the runs (and over clusters × runs
 * for the per-cluster time). Goal (issue 16): linear in clusters, under 1 s per cluster; auto-join
 * under 5 s.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { Command } from "commander";
import { pino } from "pino";
import { startTenantry } from "../src/app/tenantry.js";
import { labelCluster, registerCluster, standaloneKubeconfig } from "../src/clusters/index.js";
import { type ClusterClient, loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, webhookClientCaFile } from "../src/localcluster/index.js";
import { percentile, printTable } from "./support/report.js";

const program = new Command()
  .option("--clusters <list>", "cluster counts to measure (the largest is started)", "1,3,10")
  .option("--runs <n>", "runs per count", "5")
  .option("--users <n>", "users per logical cloud", "5")
  .parse();
const flags = program.opts<{ clusters: string; runs: string; users: string }>();
const counts = flags.clusters
  .split(",")
  .map(Number)
  .filter((n) => n > 0)
  .sort((a, b) => a - b);
const runs = Number(flags.runs);
const userCount = Number(flags.users);
const largest = Math.max(...counts, 2);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const s = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(2) : "-");

interface CloudStatus {
  deployedStatus?: string;
  message?: string;
  clusters: { cluster: string; state: string; applyMs?: number }[];
}

interface Api {
  url: string;
  ca: string;
  cert: string;
  key: string;
}

function call(
  api: Api,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${api.url}${path}`,
      {
        method,
        ca: api.ca,
        cert: api.cert,
        key: api.key,
        headers: payload ? { "content-type": "application/json" } : {},
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += c.toString();
        });
        res.on("end", () => {
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {}
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

async function must(api: Api, method: string, path: string, body?: unknown): Promise<unknown> {
  const answer = await call(api, method, path, body);
  if (answer.status >= 300)
    throw new Error(`${method} ${path}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Polls the status (every 25 ms) until `done`; returns it with the milliseconds since `t0`. */
async function until(
  api: Api,
  path: string,
  done: (status: CloudStatus) => boolean,
  t0: number,
  timeoutMs = 300_000,
) {
  for (;;) {
    const status = (await must(api, "GET", `${path}/status?status=deployed&output=detail`)) as CloudStatus;
    if (done(status)) return { status, ms: Date.now() - t0 };
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`${path}: still ${status.deployedStatus}: ${status.message}`);
    await sleep(25);
  }
}

async function cloudOver(api: Api, project: string, name: string, references: unknown[]): Promise<string> {
  const path = `/v2/projects/${project}/logical-clouds/${name}`;
  const users = Array.from({ length: userCount }, (_, i) => ({
    userName: `user-${i + 1}`,
    type: "certificate",
  }));
  await must(api, "POST", `/v2/projects/${project}/logical-clouds`, {
    metadata: { name },
    spec: { namespace: name, user: users[0], users: users.slice(1) },
  });
  for (const reference of references) await must(api, "POST", `${path}/cluster-references`, reference);
  await must(api, "POST", `${path}/user-permissions`, {
    metadata: { name: "all" },
    spec: { namespace: name, apiGroups: ["*"], resources: ["*"], verbs: ["*"] },
  });
  return path;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "tenantry-bench-clouds-"));
  const harness = new ClusterHarness({ dir, log: () => {} });
  let stop: (() => Promise<void>) | undefined;
  try {
    const names = Array.from({ length: largest }, (_, i) => `lc${i}`);
    process.stderr.write(`starting ${largest} clusters (one simulated node each) …\n`);
    const t = Date.now();
    const states = await harness.up(names.map((name) => ({ name, nodes: 1 })));
    process.stderr.write(`  up in ${s(Date.now() - t)} s; starting tenantry on ${names[0]} …\n`);
    const logger = pino(
      { level: "info" },
      pino.destination({ dest: join(dir, "tenantry.log"), sync: false }),
    );
    const tenantry = await startTenantry({
      cluster: names[0]!,
      kubeconfig: states[0]!.kubeconfig,
      webhookClientCa: await readFile(webhookClientCaFile(states[0]!), "utf8"),
      logger,
      gateway: false,
      runtimesAdmin: false,
      clusterRegistry: { probeIntervalMs: 5_000 },
    });
    stop = () => tenantry.stop();
    const home: ClusterClient = loadClusterClient(names[0]!, states[0]!.kubeconfig);
    for (const state of states) {
      const kc = new KubeConfig();
      kc.loadFromFile(state.kubeconfig);
      await registerCluster(home, {
        name: state.name,
        kubeconfig: standaloneKubeconfig(kc, state.name),
        checkReachable: false,
      });
    }
    const pki = join(dir, names[0]!, "pki");
    const api: Api = {
      url: tenantry.logicalClouds!.url,
      ca: tenantry.logicalClouds!.caPem,
      cert: await readFile(join(pki, "admin.crt"), "utf8"),
      key: await readFile(join(pki, "admin.key"), "utf8"),
    };
    const project = "bench";
    await must(api, "POST", "/v2/projects", { metadata: { name: project } });
    // Let the registry probe every cluster once (a fresh registry has no status yet).
    await sleep(6_000);

    const instantiateRows: (string | number)[][] = [];
    const terminateRows: (string | number)[][] = [];
    for (const k of counts) {
      const totals: number[] = [];
      const perCluster: number[] = [];
      const terminations: number[] = [];
      for (let run = 0; run < runs; run++) {
        const name = `k${k}-r${run}`;
        const path = await cloudOver(
          api,
          project,
          name,
          names.slice(0, k).map((cluster) => ({ metadata: { name: cluster }, spec: { cluster } })),
        );
        const t0 = Date.now();
        await must(api, "POST", `${path}/instantiate`);
        const up = await until(api, path, (st) => st.deployedStatus === "Instantiated", t0);
        if (up.status.deployedStatus !== "Instantiated") throw new Error(JSON.stringify(up.status));
        totals.push(up.ms);
        for (const c of up.status.clusters) perCluster.push(c.applyMs ?? Number.NaN);
        const t1 = Date.now();
        await must(api, "POST", `${path}/terminate`);
        const down = await until(api, path, (st) => st.deployedStatus === "Terminated", t1);
        terminations.push(down.ms);
        await must(api, "DELETE", path);
        process.stderr.write(
          `  ${k} clusters, run ${run + 1}: instantiated in ${s(up.ms)} s, terminated in ${s(down.ms)} s\n`,
        );
      }
      instantiateRows.push([
        k,
        runs,
        s(percentile(totals, 50)),
        s(percentile(totals, 90)),
        s(Math.max(...totals)),
        s(percentile(totals, 50) / k),
        s(percentile(perCluster, 50)),
        s(percentile(perCluster, 90)),
      ]);
      terminateRows.push([
        k,
        runs,
        s(percentile(terminations, 50)),
        s(percentile(terminations, 90)),
        s(Math.max(...terminations)),
      ]);
    }

    // Auto-join: a cloud over the clusters labelled pool=<run>; one more cluster gets the label.
    const joins: number[] = [];
    const joinCluster = names[1]!;
    for (let run = 0; run < runs; run++) {
      const pool = `join-${run}`;
      await labelCluster(home, names[0]!, { set: { "bench.tenantry.dev/pool": pool } });
      const name = `join-r${run}`;
      const path = await cloudOver(api, project, name, [
        {
          metadata: { name: "pool" },
          spec: { clusterSelector: { matchLabels: { "bench.tenantry.dev/pool": pool } } },
        },
      ]);
      await must(api, "POST", `${path}/instantiate`);
      await until(api, path, (st) => st.deployedStatus === "Instantiated", Date.now());
      const t0 = Date.now();
      await labelCluster(home, joinCluster, { set: { "bench.tenantry.dev/pool": pool } });
      const joined = await until(
        api,
        path,
        (st) => st.clusters.some((c) => c.cluster === joinCluster && c.state === "Ready"),
        t0,
      );
      joins.push(joined.ms);
      process.stderr.write(`  auto-join run ${run + 1}: ${s(joined.ms)} s\n`);
      await labelCluster(home, joinCluster, { remove: ["bench.tenantry.dev/pool"] });
      await must(api, "POST", `${path}/terminate`);
      await until(api, path, (st) => st.deployedStatus === "Terminated", Date.now());
      await must(api, "DELETE", path);
    }

    printTable(
      `instantiate a logical cloud with ${userCount} users (POST instantiate → status Instantiated; per cluster: namespace, quota, limits, role, binding, ${userCount} CSR-signed certificates)`,
      [
        "clusters",
        "runs",
        "p50 s",
        "p90 s",
        "max s",
        "p50 s/cluster",
        "per-cluster p50 s",
        "per-cluster p90 s",
      ],
      instantiateRows,
      ["goal: linear in clusters, under 1 s per cluster"],
    );
    printTable(
      "terminate it (POST terminate → status Terminated: every object deleted, every namespace gone)",
      ["clusters", "runs", "p50 s", "p90 s", "max s"],
      terminateRows,
      [],
    );
    printTable(
      "auto-join (a label added in the registry → that cluster Ready in the cloud's status)",
      ["runs", "p50 s", "p90 s", "max s"],
      [[runs, s(percentile(joins, 50)), s(percentile(joins, 90)), s(Math.max(...joins))]],
      ["goal: under 5 s"],
    );
  } finally {
    await stop?.().catch(() => {});
    await harness.reset().catch(() => {});
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
