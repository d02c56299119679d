import { join } from "node:path";
import type { Command } from "commander";
import { pino } from "pino";
import type { RunningTenantry } from "../app/index.js";
import {
  DEMO_MEMBER,
  DEMO_OPERATOR,
  DEMO_OWNER,
  DEMO_PASSWORDS,
  DEMO_RUNTIME_INSTANCE,
  DEMO_TENANT,
  ENDPOINTS_FILE,
  installDemo,
  installDemoRuntimeService,
  jupyterTokenOf,
  registerEmbeddedClusters,
  startEmbeddedTenantry,
} from "../app/index.js";
import { CLOUDS_OPENAPI_PATH } from "../clouds/index.js";
import { createProgress } from "../common/index.js";
import { ensureDashboardAssets } from "../dashboard/index.js";
import {
  ClusterHarness,
  type ClusterState,
  defaultClusters,
  hurryStopping,
  MachineHost,
} from "../localcluster/index.js";
import { OPENAPI_PATH } from "../runtimes/index.js";
import { startRuntime } from "./runtime.js";
import { endWhenStopped, StopRequest } from "./shutdown.js";

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
      // Installed first: a Ctrl-C while starting stops what has started once the step under way ends.
      const stop = new StopRequest({
        onHurry: (reason) => {
          hurryStopping();
          process.stderr.write(`${reason}: killing what is left instead of waiting for it…\n`);
        },
      });
      const harness = new ClusterHarness(opts.dir ? { dir: opts.dir } : {});
      const parts = new RunningParts();
      try {
        await startEmbeddedDefault(harness, parts, opts, stop);
      } catch (err) {
        if (!stop.isRequested) {
          await parts.stop(harness, opts.keep ?? false).catch(() => undefined);
          stop.done();
          throw err;
        }
      }
      await stop.requested;
      process.stdout.write("\nstopping tenantry…\n");
      // Stopping is bounded: what has not stopped by then is killed.
      const bound = setTimeout(
        () => stop.hurryNow(`still stopping after ${STOP_BOUND_MS / 1000} s`),
        STOP_BOUND_MS,
      );
      try {
        await parts.stop(harness, opts.keep ?? false, stop.hurry);
        process.stdout.write("stopped.\n");
      } finally {
        clearTimeout(bound);
        stop.done();
        endWhenStopped();
      }
      // A hurried stop gave up waiting for tenantry's own servers and informers: nothing outside
      // this process is left, so end it rather than wait for them.
      if (stop.hurry.aborted) process.exit(0);
    });
}

/** How long stopping may take before what is left is killed (well within 30 s, also on a busy machine). */
const STOP_BOUND_MS = 20_000;

/** What `tenantry up` has started so far, stopped in reverse. */
class RunningParts {
  states: ClusterState[] = [];
  objectStore = false;
  machines?: MachineHost;
  tenantries: RunningTenantry[] = [];
  health?: NodeJS.Timeout;

  /**
   * Stops tenantry on every cluster, then (unless `keep`) the simulated machines, the clusters and the
   * object store. Once `hurry` fires, tenantry's own stop is no longer waited for: the processes
   * outside this one are what must not be left.
   */
  async stop(harness: ClusterHarness, keep: boolean, hurry?: AbortSignal): Promise<void> {
    clearInterval(this.health);
    await untilAborted(Promise.allSettled(this.tenantries.map((t) => t.stop())), hurry);
    this.machines?.close();
    if (keep) return;
    if (this.states.length || this.machines || this.objectStore) process.stdout.write("stopping clusters…\n");
    // The worker nodes' machines go with the clusters (their WorkerNodes stay, as the clusters' data does).
    await this.machines?.stopAll();
    if (this.states.length) await harness.down(this.states.map((s) => s.name));
    if (this.objectStore) await harness.stopObjectStore();
  }
}

/** Resolves when `work` settles or `signal` aborts, whichever comes first. */
async function untilAborted(work: Promise<unknown>, signal?: AbortSignal): Promise<void> {
  if (!signal) {
    await work;
    return;
  }
  if (signal.aborted) return;
  await new Promise<void>((resolve) => {
    signal.addEventListener("abort", () => resolve(), { once: true });
    work.then(
      () => resolve(),
      () => resolve(),
    );
  });
}

/**
 * Starts the clusters, the object store, tenantry on each cluster and the demo, recording each part
 * in `parts` as it comes up; returns early when a stop is requested on the way.
 */
async function startEmbeddedDefault(
  harness: ClusterHarness,
  parts: RunningParts,
  opts: { dir?: string; keep?: boolean },
  stop: StopRequest,
): Promise<void> {
  // The dashboard's client, built when missing or older than its sources.
  await ensureDashboardAssets((line) => process.stderr.write(line));
  const [states, objectStore] = await Promise.all([
    harness.up([...defaultClusters]).then((started) => {
      parts.states = started;
      return started;
    }),
    harness.objectStore().then((store) => {
      parts.objectStore = true;
      return store;
    }),
  ]);
  if (stop.isRequested) return;
  const home = states.find((s) => s.name === "home")!;
  const homeDir = join(harness.dir, "home");
  const logFile = join(homeDir, "logs", "tenantry.log");
  process.stderr.write("starting tenantry on home…\n");
  // home's simulated machines: local processes that join it as worker nodes (NodeProvider "simulated").
  const machines = new MachineHost({ dir: join(homeDir, "machines") });
  parts.machines = machines;
  await machines.whenReady();
  const tenantry = await startEmbeddedTenantry(
    home,
    pino({ level: "info" }, pino.destination({ dest: logFile, sync: false })),
    { nodes: { localMachines: machines }, objectStore },
  );
  parts.tenantries.push(tenantry);
  // tenantry runs on the other clusters too, so that they can provide for peers.
  const remotes: { name: string; logFile: string }[] = [];
  for (const state of states.filter((s) => s.name !== "home")) {
    if (stop.isRequested) return;
    const remoteLog = join(harness.dir, state.name, "logs", "tenantry.log");
    process.stderr.write(`starting tenantry on ${state.name}…\n`);
    parts.tenantries.push(
      await startEmbeddedTenantry(
        state,
        pino({ level: "info" }, pino.destination({ dest: remoteLog, sync: false })),
      ),
    );
    remotes.push({ name: state.name, logFile: remoteLog });
  }
  if (stop.isRequested) return;
  await registerEmbeddedClusters(tenantry, states);
  const { ownerKubeconfig } = await installDemo(tenantry.client, homeDir, tenantry.builtinIdentity);
  if (stop.isRequested) return;
  const runtimeLines = await startDemoRuntime(tenantry, homeDir, opts.dir !== undefined);
  if (stop.isRequested) return;
  process.stdout.write(
    welcomeText({
      harness,
      states,
      tenantry,
      objectStore,
      logFile,
      remotes,
      ownerKubeconfig,
      homeDir,
      runtimeLines,
      opts,
    }),
  );
  // Watching health also keeps the process alive while it waits for Ctrl-C: signal handlers do not.
  parts.health = watchHealth(harness, states);
}

/** What `tenantry up` prints once everything is up: where each part is, and what to try. */
interface Welcome {
  harness: ClusterHarness;
  states: Awaited<ReturnType<ClusterHarness["up"]>>;
  tenantry: Awaited<ReturnType<typeof startEmbeddedTenantry>>;
  objectStore: Awaited<ReturnType<ClusterHarness["objectStore"]>>;
  logFile: string;
  remotes: { name: string; logFile: string }[];
  ownerKubeconfig: string;
  homeDir: string;
  runtimeLines: string[];
  opts: { dir?: string; keep?: boolean };
}

function welcomeText(up: Welcome): string {
  const { harness, states, tenantry, objectStore, logFile, remotes, ownerKubeconfig, homeDir } = up;
  const home = states.find((s) => s.name === "home")!;
  return [
    "",
    "tenantry is up on the embedded default:",
    ...states.map((s) => `  ${s.name.padEnd(8)} ${s.server}  kubeconfig: ${s.kubeconfig}`),
    `  tenantry webhooks at ${tenantry.webhookUrl}, identity and access at ${tenantry.accessUrl}`,
    ...(tenantry.gateway
      ? [`  tenant gateway at ${tenantry.gateway.url}, metrics at ${tenantry.gateway.metricsUrl ?? "(none)"}`]
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
    ...up.runtimeLines,
    "and lend edge-1's capacity to home (a virtual node tenantry-edge-1 appears there):",
    `  npx tenantry peer --consumer home --provider edge-1${up.opts.dir ? ` --clusters-dir ${harness.dir}` : ""} && kubectl get nodes`,
    "",
    up.opts.keep ? "Press Ctrl-C to stop tenantry; the clusters keep running." : "Press Ctrl-C to stop.",
    "",
  ].join("\n");
}

/** Warns when a cluster stops running; the timer also keeps the process alive until Ctrl-C. */
function watchHealth(harness: ClusterHarness, states: { name: string }[]): NodeJS.Timeout {
  let reported = "";
  return setInterval(async () => {
    const degraded = (await harness.status(states.map((s) => s.name))).filter((s) => s.state !== "running");
    const summary = degraded.map((s) => `${s.name} is ${s.state} (logs: ${s.dir}/logs)`).join("; ");
    if (summary && summary !== reported) process.stderr.write(`warning: ${summary}\n`);
    reported = summary;
  }, 10_000);
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
  // The proxy serves a runtime to its owner only: a browser signs in, curl brings the owner's token.
  const password = DEMO_PASSWORDS[DEMO_OWNER];
  const bearer = `-H "Authorization: Bearer $(kubectl config view --kubeconfig ${kubeconfig} --raw -o jsonpath='{.users[0].user.token}')"`;
  if (service.kind === "echo") {
    return [
      `and ${DEMO_OWNER}'s runtime ${name} (the echo server: no Jupyter Server here), through the runtimes proxy:`,
      `  open ${status.url}hello    # sign in as ${DEMO_OWNER} / ${password}`,
      `  ${login}`,
      `  curl ${bearer} ${status.url}hello`,
      ...manage.slice(1),
    ];
  }
  const jupyterToken = await jupyterTokenOf(tenantry.client, status.namespace, status.name);
  return [
    `and ${DEMO_OWNER}'s runtime ${name}, a Jupyter Server, through the runtimes proxy:`,
    `  open ${status.url}lab?token=${jupyterToken}    # sign in as ${DEMO_OWNER} / ${password}, then JupyterLab`,
    `  ${login}`,
    `  curl ${bearer} ${status.url}api    # its version, as JSON`,
    `  curl ${bearer} "${status.url}api/contents?token=${jupyterToken}"`,
    ...manage.slice(1),
  ];
}
