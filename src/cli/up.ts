import { join } from "node:path";
import type { Command } from "commander";
import { pino } from "pino";
import {
  DEMO_MEMBER,
  DEMO_OPERATOR,
  DEMO_OWNER,
  DEMO_PASSWORDS,
  DEMO_RUNTIME_INSTANCE,
  DEMO_TENANT,
  installDemo,
  installDemoRuntimeService,
  jupyterTokenOf,
} from "../app/demo.js";
import { ENDPOINTS_FILE, registerEmbeddedClusters, startEmbeddedTenantry } from "../app/embedded.js";
import type { RunningTenantry } from "../app/tenantry.js";
import { CLOUDS_OPENAPI_PATH } from "../clouds/index.js";
import { createProgress } from "../common/index.js";
import { ensureDashboardAssets } from "../dashboard/index.js";
import { ClusterHarness, defaultClusters, MachineHost } from "../localcluster/index.js";
import { OPENAPI_PATH } from "../runtimes/index.js";
import { startRuntime } from "./runtime.js";

/**
 * `tenantry up` (what `npm start` runs): the embedded default. Starts the local clusters, runs
 * tenantry on the home cluster with a demo tenant, prints what to try, and stops on Ctrl-C.
 */
export function registerUpCommand(program: Command): void {
  program
    .command("up")
    .description(
      "run tenantry on the embedded default: local clusters home, edge-1 and edge-2, and a demo tenant",
    )
    .option("--dir <path>", "folder holding the clusters")
    .option("--keep", "leave the clusters running after Ctrl-C (tenantry itself stops)")
    .action(async (opts: { dir?: string; keep?: boolean }) => {
      const harness = new ClusterHarness(opts.dir ? { dir: opts.dir } : {});
      // The dashboard's client, built when missing or older than its sources.
      await ensureDashboardAssets((line) => process.stderr.write(line));
      const [states, objectStore] = await Promise.all([
        harness.up([...defaultClusters]),
        harness.objectStore(),
      ]);
      const home = states.find((s) => s.name === "home")!;
      const homeDir = join(harness.dir, "home");
      const logFile = join(homeDir, "logs", "tenantry.log");
      process.stderr.write("starting tenantry on home…\n");
      // home's simulated machines: local processes that join it as worker nodes (NodeProvider "simulated").
      const machines = new MachineHost({ dir: join(homeDir, "machines") });
      await machines.whenReady();
      const tenantry = await startEmbeddedTenantry(
        home,
        pino({ level: "info" }, pino.destination({ dest: logFile, sync: false })),
        { nodes: { localMachines: machines }, objectStore },
      );
      // tenantry runs on the other clusters too, so that they can provide for peers.
      const remotes: { name: string; logFile: string; tenantry: typeof tenantry }[] = [];
      for (const state of states.filter((s) => s.name !== "home")) {
        const remoteLog = join(harness.dir, state.name, "logs", "tenantry.log");
        process.stderr.write(`starting tenantry on ${state.name}…\n`);
        remotes.push({
          name: state.name,
          logFile: remoteLog,
          tenantry: await startEmbeddedTenantry(
            state,
            pino({ level: "info" }, pino.destination({ dest: remoteLog, sync: false })),
          ),
        });
      }
      await registerEmbeddedClusters(tenantry, states);
      const { ownerKubeconfig } = await installDemo(tenantry.client, homeDir, tenantry.builtinIdentity);
      const runtimeLines = await startDemoRuntime(tenantry, homeDir, opts.dir !== undefined);
      process.stdout.write(
        [
          "",
          "tenantry is up on the embedded default:",
          ...states.map((s) => `  ${s.name.padEnd(8)} ${s.server}  kubeconfig: ${s.kubeconfig}`),
          `  tenantry webhooks at ${tenantry.webhookUrl}, identity and access at ${tenantry.accessUrl}`,
          ...(tenantry.gateway
            ? [
                `  tenant gateway at ${tenantry.gateway.url}, metrics at ${tenantry.gateway.metricsUrl ?? "(none)"}`,
              ]
            : []),
          ...(tenantry.runtimesAdmin
            ? [
                `  runtimes Admin API at ${tenantry.runtimesAdmin.url} (OpenAPI: ${tenantry.runtimesAdmin.url}${OPENAPI_PATH})`,
              ]
            : []),
          ...(tenantry.runtimesProxy
            ? [
                `  runtimes proxy at ${tenantry.runtimesProxy.url} (runtimes at /r/<token>/, the Admin API at every other path)`,
              ]
            : []),
          `  object store (S3, versitygw ${objectStore.version}) at ${objectStore.endpoint}: runtime backups of home go to bucket tenantry-backups-home`,
          ...(tenantry.logicalClouds
            ? [
                `  logical clouds API (DCM) at ${tenantry.logicalClouds.url}/v2/projects (OpenAPI: ${tenantry.logicalClouds.url}${CLOUDS_OPENAPI_PATH})`,
              ]
            : []),
          ...(tenantry.dashboard
            ? [
                `  dashboard at ${tenantry.dashboard.url} (log in as ${DEMO_OPERATOR} / ${DEMO_PASSWORDS[DEMO_OPERATOR]}, or ${DEMO_OWNER} / ${DEMO_PASSWORDS[DEMO_OWNER]})`,
              ]
            : []),
          `  tenantry log: ${logFile}`,
          ...remotes.map((r) => `  tenantry on ${r.name}: log ${r.logFile}`),
          `  demo tenant "${DEMO_TENANT}" owned by ${DEMO_OWNER}: ${ownerKubeconfig}`,
          "",
          "Try, as the cluster admin:",
          `  export KUBECONFIG=${home.kubeconfig}`,
          "  kubectl get tenants",
          `  npx tenantry tenant usage ${DEMO_TENANT}`,
          `and as ${DEMO_OWNER}, the tenant owner:`,
          `  kubectl --kubeconfig ${ownerKubeconfig} create namespace ${DEMO_TENANT}-team`,
          `  kubectl --kubeconfig ${ownerKubeconfig} -n ${DEMO_TENANT}-dev create deployment web --image=nginx --replicas=3`,
          `  kubectl --kubeconfig ${ownerKubeconfig} -n ${DEMO_TENANT}-dev run root --image=nginx --privileged   # refused`,
          `  kubectl --kubeconfig ${ownerKubeconfig} get namespaces                                    # forbidden`,
          `  npx tenantry node create my-node-01 --flavor m1.large --kubeconfig ${ownerKubeconfig}     # a private worker node`,
          `  kubectl --kubeconfig ${ownerKubeconfig} get workernodes -l tenantry.dev/tenant=${DEMO_TENANT} -o wide   # the tenant's`,
          `and as ${DEMO_MEMBER}, a member who logs in with a password (${DEMO_PASSWORDS[DEMO_MEMBER]}):`,
          `  echo ${DEMO_PASSWORDS[DEMO_MEMBER]} | npx tenantry login -u ${DEMO_MEMBER} --password-stdin`,
          `  kubectl --kubeconfig ${homeDir}/${DEMO_MEMBER}.token.kubeconfig run web --image=nginx`,
          `  kubectl --kubeconfig ${homeDir}/${DEMO_MEMBER}.token.kubeconfig get namespaces             # through the gateway: only demo's`,
          `  kubectl --kubeconfig ${homeDir}/${DEMO_MEMBER}.token.kubeconfig delete pod <a pod of ${DEMO_OWNER}>   # refused: not his`,
          ...runtimeLines,
          "and lend edge-1's capacity to home (a virtual node tenantry-edge-1 appears there):",
          `  npx tenantry peer --consumer home --provider edge-1${opts.dir ? ` --clusters-dir ${harness.dir}` : ""} && kubectl get nodes`,
          "",
          opts.keep ? "Press Ctrl-C to stop tenantry; the clusters keep running." : "Press Ctrl-C to stop.",
          "",
        ].join("\n"),
      );
      // Watching health also keeps the process alive: signal handlers alone do not.
      let reported = "";
      const watch = setInterval(async () => {
        const degraded = (await harness.status(states.map((s) => s.name))).filter(
          (s) => s.state !== "running",
        );
        const summary = degraded.map((s) => `${s.name} is ${s.state} (logs: ${s.dir}/logs)`).join("; ");
        if (summary && summary !== reported) process.stderr.write(`warning: ${summary}\n`);
        reported = summary;
      }, 10_000);
      // A terminal's Ctrl-C reaches npm, tsx and node at once, and tsx relays it again: handle every
      // signal (a second one must not kill the process half-way through stopping).
      await new Promise<void>((resolve) => {
        for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => resolve());
      });
      clearInterval(watch);
      process.stdout.write("\nstopping tenantry…\n");
      await tenantry.stop();
      for (const remote of remotes) await remote.tenantry.stop();
      machines.close();
      if (!opts.keep) {
        process.stdout.write("stopping clusters…\n");
        // The worker nodes' machines go with the clusters (their WorkerNodes stay, as the clusters' data does).
        await machines.stopAll();
        await harness.down(states.map((s) => s.name));
        await harness.stopObjectStore();
      }
      process.stdout.write("stopped.\n");
    });
}

/**
 * The demo's runtime: registers its RuntimeService (a real Jupyter Server, or the echo server where
 * Python 3 with venv is missing) and starts `<service>/lab` for the demo owner through the runtimes
 * proxy, following its progress. Answers the lines `tenantry up` prints about it; a start that
 * fails is reported there and leaves the rest of the demo running.
 */
async function startDemoRuntime(
  tenantry: RunningTenantry,
  homeDir: string,
  ownDir: boolean,
): Promise<string[]> {
  const proxy = tenantry.runtimesProxy;
  if (!proxy || !tenantry.builtinIdentity) return [];
  process.stderr.write("registering the demo's runtime service…\n");
  const install = createProgress("installing Jupyter Server");
  let installing = false;
  const service = await installDemoRuntimeService(tenantry.client, (done, total, detail) => {
    installing = true;
    install.update(done, total, detail);
  });
  if (installing) install.finish("Jupyter Server installed");
  if (service.fallbackReason) {
    process.stderr.write(
      `warning: ${service.fallbackReason}\nthe demo runtime is the echo server instead of a Jupyter Server\n`,
    );
  }
  const { token } = await tenantry.builtinIdentity.login({
    username: DEMO_OWNER,
    password: DEMO_PASSWORDS[DEMO_OWNER]!,
  });
  const name = `${service.name}/${DEMO_RUNTIME_INSTANCE}`;
  process.stderr.write(`starting runtime ${name} for ${DEMO_OWNER}…\n`);
  const kubeconfig = `${homeDir}/${DEMO_OWNER}.token.kubeconfig`;
  // A clusters folder of its own (--dir) is found through its endpoints file.
  const endpoints = ownDir ? ` --endpoints ${homeDir}/${ENDPOINTS_FILE}` : "";
  const cli = "npx tenantry runtime";
  const login = `echo ${DEMO_PASSWORDS[DEMO_OWNER]} | npx tenantry login -u ${DEMO_OWNER} --password-stdin${endpoints}`;
  const status = await startRuntime(
    { url: proxy.url, token, user: DEMO_OWNER },
    service.name,
    DEMO_RUNTIME_INSTANCE,
    {},
    { wait: true, quiet: false },
  ).catch((err: Error) => err);
  if (status instanceof Error || !status.url) {
    return [
      `runtime ${name} of ${DEMO_OWNER} did not start: ${status instanceof Error ? status.message : (status.message ?? status.phase)}`,
      `  ${login}`,
      `  ${cli} status ${service.name} ${DEMO_RUNTIME_INSTANCE} --kubeconfig ${kubeconfig}${endpoints}`,
    ];
  }
  const manage = [
    `  ${login}`,
    `  ${cli} status ${service.name} ${DEMO_RUNTIME_INSTANCE} --kubeconfig ${kubeconfig}${endpoints}`,
    `  ${cli} stop ${service.name} ${DEMO_RUNTIME_INSTANCE} --kubeconfig ${kubeconfig}${endpoints}    # its URL stops working, its files stay`,
    `  ${cli} start ${service.name} ${DEMO_RUNTIME_INSTANCE} --kubeconfig ${kubeconfig}${endpoints}   # resumes at a new URL`,
  ];
  if (service.kind === "echo") {
    return [
      `and ${DEMO_OWNER}'s runtime ${name} (the echo server: no Jupyter Server here), through the runtimes proxy:`,
      `  curl ${status.url}hello`,
      ...manage,
    ];
  }
  const jupyterToken = await jupyterTokenOf(tenantry.client, status.namespace, status.name);
  return [
    `and ${DEMO_OWNER}'s runtime ${name}, a Jupyter Server, through the runtimes proxy:`,
    `  open ${status.url}lab?token=${jupyterToken}`,
    `  curl ${status.url}api    # its version, as JSON`,
    `  curl -H "Authorization: token ${jupyterToken}" ${status.url}api/contents`,
    ...manage,
  ];
}
