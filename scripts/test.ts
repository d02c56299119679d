/**
 * `npm test`: static checks, then every test file in one run of node's test runner. Integration
 * tests share three local clusters (home, edge-1, edge-2) started once here and stopped at the end;
 * they find them through the file named by TENANTRY_TEST_ENV. tenantry itself (controllers and
 * admission webhooks) runs on every cluster for the whole run, as `tenantry up` runs it.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pino } from "pino";
import { registerEmbeddedClusters, startEmbeddedTenantry } from "../src/app/embedded.js";
import { cacheRoot } from "../src/common/index.js";
import { ensureDashboardAssets } from "../src/dashboard/index.js";
import { loadClusterClient } from "../src/kube/index.js";
import { ClusterHarness, defaultClusters, MachineHost } from "../src/localcluster/index.js";
import { peerClusters } from "../src/multicluster/index.js";
import {
  type RunningOpenStack,
  type SharedOpenStackFiles,
  startOpenStack,
} from "../test/support/openstack.js";

/**
 * The shared offloading topology: home consumes edge-1 and edge-2 for the whole run. Tests that
 * peer and unpeer use other pairs (edge-1 → home, edge-1 → edge-2, edge-2 → edge-1).
 */
const SHARED_PEERINGS = [
  { consumer: "home", provider: "edge-1" },
  { consumer: "home", provider: "edge-2" },
] as const;
const SHARED_GRANT = { namespaceQuota: 200, resources: { cpu: "32", memory: "64Gi", pods: "500" } };

const root = join(import.meta.dirname, "..");

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, env, stdio: "inherit" });
    child.on("close", (code) => resolve(code ?? 1));
  });
}

async function testFiles(dir: string): Promise<string[]> {
  const entries = await readdir(join(root, dir), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith(".test.ts"))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();
}

/** Each file's last measured duration: this machine's last run over the committed figures. */
const COMMITTED_DURATIONS = join(root, "test", "durations.json");
const MEASURED_DURATIONS = join(cacheRoot(), "test-durations.json");

async function readDurations(file: string): Promise<Record<string, number>> {
  return JSON.parse(await readFile(file, "utf8").catch(() => "{}")) as Record<string, number>;
}

/**
 * Longest files first: the runner takes files in order, two at a time, so a long file started
 * last would run alone at the end. A file never measured is guessed at a typical integration
 * test's length (unit tests take a second).
 */
async function longestFirst(files: string[]): Promise<string[]> {
  const known = {
    ...(await readDurations(COMMITTED_DURATIONS)),
    ...(await readDurations(MEASURED_DURATIONS)),
  };
  const guess = (file: string) => known[file] ?? (file.startsWith("test/") ? 30 : 1);
  return [...files].sort((a, b) => guess(b) - guess(a) || a.localeCompare(b));
}

/** Keeps this run's durations for the next run's order (on this machine, outside the checkout). */
async function recordDurations(measured: string): Promise<void> {
  const now = await readDurations(measured);
  if (Object.keys(now).length === 0) return;
  const all = { ...(await readDurations(MEASURED_DURATIONS)), ...now };
  await mkdir(cacheRoot(), { recursive: true });
  await writeFile(MEASURED_DURATIONS, `${JSON.stringify(all, null, 1)}\n`);
}

async function main(): Promise<number> {
  const only = process.argv.slice(2);
  if (only.length === 0) {
    process.stderr.write("typecheck (tsc --noEmit)\n");
    if ((await run("npx", ["tsc", "--noEmit"])) !== 0) return 1;
    if ((await run("npx", ["tsc", "--noEmit", "-p", "src/dashboard/web"])) !== 0) return 1;
    process.stderr.write("lint (biome ci)\n");
    if ((await run("npx", ["biome", "ci", "--reporter=summary", "."])) !== 0) return 1;
  }
  const files = await longestFirst(
    only.length ? only : [...(await testFiles("src")), ...(await testFiles("test"))],
  );

  // The dashboard's client, built when missing or older than its sources (tenantry serves it).
  await ensureDashboardAssets((line) => process.stderr.write(line));
  const dir = await mkdtemp(join(tmpdir(), "tenantry-test-"));
  const harness = new ClusterHarness({ dir });
  // The OpenStack services (installed from Debian's packages when missing) start beside the
  // clusters, for the test files that need them; those wait for it, the others do not.
  const openstackFiles: SharedOpenStackFiles | undefined = files.some((f) => f.includes("openstack"))
    ? { infoFile: join(dir, "openstack.json"), errorFile: join(dir, "openstack.error") }
    : undefined;
  let openstack: RunningOpenStack | undefined;
  const openstackStarting = openstackFiles
    ? startOpenStack().then(
        async (running) => {
          openstack = running;
          const { computeAdmin: _c, adminCall: _a, stop: _s, ...info } = running;
          await writeFile(openstackFiles.infoFile, JSON.stringify(info));
        },
        async (err: Error) => {
          process.stderr.write(`openstack: ${err.message}\n`);
          await writeFile(openstackFiles.errorFile, err.message);
        },
      )
    : undefined;
  let code = 1;
  let tenantry: Awaited<ReturnType<typeof startEmbeddedTenantry>> | undefined;
  // home's simulated machines (NodeProvider "simulated"): processes that join it with their token.
  const machines = new MachineHost({ dir: join(dir, "home", "machines") });
  // tenantry runs on edge-1 and edge-2 too: a peer's tenant there needs its controllers.
  const remotes: {
    cluster: string;
    logFile: string;
    tenantry: Awaited<ReturnType<typeof startEmbeddedTenantry>>;
  }[] = [];
  try {
    const [states, objectStore] = await Promise.all([
      harness.up([...defaultClusters]),
      harness.objectStore(),
    ]);
    const home = states.find((s) => s.name === "home")!;
    const logFile = join(dir, "tenantry.log");
    tenantry = await startEmbeddedTenantry(
      home,
      pino(
        { level: process.env.TENANTRY_LOG_LEVEL ?? "info" },
        pino.destination({ dest: logFile, sync: false }),
      ),
      { nodes: { localMachines: machines, timings: { pollMs: 1000, runningCheckMs: 5000 } }, objectStore },
    );
    const started = await Promise.allSettled(
      states
        .filter((s) => s.name !== "home")
        .map(async (state) => {
          const remoteLog = join(dir, `tenantry-${state.name}.log`);
          const running = await startEmbeddedTenantry(
            state,
            pino({ level: "info" }, pino.destination({ dest: remoteLog, sync: false })),
          );
          remotes.push({ cluster: state.name, logFile: remoteLog, tenantry: running });
        }),
    );
    const failed = started.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    // home's cluster registry holds all three, as at npm start.
    await registerEmbeddedClusters(tenantry, states);
    const clientOf = (name: string) =>
      loadClusterClient(name, states.find((s) => s.name === name)!.kubeconfig);
    for (const pair of SHARED_PEERINGS) {
      await peerClusters({
        consumer: clientOf(pair.consumer),
        provider: clientOf(pair.provider),
        ...SHARED_GRANT,
      });
      process.stderr.write(`peered ${pair.consumer} → ${pair.provider}\n`);
    }
    const envFile = join(dir, "test-env.json");
    await writeFile(
      envFile,
      JSON.stringify({
        dir,
        tenantry: {
          cluster: "home",
          webhookUrl: tenantry.webhookUrl,
          accessUrl: tenantry.accessUrl,
          accessCaPem: tenantry.accessCaPem,
          ...(tenantry.runtimesAdmin ? { runtimesAdminUrl: tenantry.runtimesAdmin.url } : {}),
          ...(tenantry.runtimesProxy ? { runtimesProxyUrl: tenantry.runtimesProxy.url } : {}),
          ...(tenantry.dashboard ? { dashboardUrl: tenantry.dashboard.url } : {}),
          ...(tenantry.logicalClouds
            ? {
                logicalCloudsUrl: tenantry.logicalClouds.url,
                logicalCloudsCaPem: tenantry.logicalClouds.caPem,
              }
            : {}),
          ...(home.accessWebhooks
            ? {
                reviewClient: {
                  certFile: home.accessWebhooks.clientCertFile,
                  keyFile: home.accessWebhooks.clientKeyFile,
                },
              }
            : {}),
          logFile,
        },
        tenantries: [
          { cluster: "home", logFile, tenantry },
          ...remotes.map((r) => ({ cluster: r.cluster, logFile: r.logFile, tenantry: r.tenantry })),
        ].map((t) => ({
          cluster: t.cluster,
          clusterId: t.tenantry.clusterIdentity.clusterId,
          webhookUrl: t.tenantry.webhookUrl,
          accessUrl: t.tenantry.accessUrl,
          accessCaPem: t.tenantry.accessCaPem,
          logFile: t.logFile,
          ...(t.tenantry.gateway?.metricsUrl ? { metricsUrl: t.tenantry.gateway.metricsUrl } : {}),
        })),
        clusters: states.map((s) => ({
          name: s.name,
          kubeconfig: s.kubeconfig,
          server: s.server,
          ...(s.webhookClient ? { webhookClient: s.webhookClient } : {}),
        })),
        peerings: SHARED_PEERINGS,
        objectStore: {
          endpoint: objectStore.endpoint,
          region: objectStore.region,
          accessKeyId: objectStore.accessKeyId,
          secretAccessKey: objectStore.secretAccessKey,
        },
        ...(openstackFiles ? { openstack: openstackFiles } : {}),
      }),
    );
    code = await run(
      process.execPath,
      [
        "--import",
        "tsx",
        "--test",
        "--test-reporter=spec",
        "--test-reporter-destination=stdout",
        `--test-reporter=${join(root, "scripts", "test-durations.ts")}`,
        `--test-reporter-destination=${join(dir, "durations.json")}`,
        "--test-concurrency=2",
        // A file's whole run, OpenStack's services included on a busy machine.
        "--test-timeout=900000",
        ...files,
      ],
      { ...process.env, TENANTRY_TEST_ENV: envFile },
    );
    await recordDurations(join(dir, "durations.json")).catch((err) =>
      process.stderr.write(`recording test durations failed: ${err}\n`),
    );
  } finally {
    await tenantry?.stop().catch((err) => process.stderr.write(`stopping tenantry failed: ${err}\n`));
    machines.close();
    await machines.stopAll().catch((err) => process.stderr.write(`stopping machines failed: ${err}\n`));
    await openstackStarting;
    await openstack?.stop().catch((err) => process.stderr.write(`stopping OpenStack failed: ${err}\n`));
    for (const remote of remotes) {
      await remote.tenantry
        .stop()
        .catch((err) => process.stderr.write(`stopping tenantry on ${remote.cluster} failed: ${err}\n`));
    }
    await harness
      .stopObjectStore()
      .catch((err) => process.stderr.write(`stopping the object store failed: ${err}\n`));
    // On failure the stopped clusters' logs stay behind for inspection.
    await (code === 0 ? harness.reset() : harness.down()).catch((err) =>
      process.stderr.write(`cleanup failed: ${err}\n`),
    );
    if (code === 0) await rm(dir, { recursive: true, force: true });
    else process.stderr.write(`logs of this run: ${dir}/<cluster>/logs and ${dir}/tenantry*.log\n`);
  }
  return code;
}

process.exitCode = await main();
