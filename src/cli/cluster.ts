/**
 * `tenantry cluster add|list|label|remove`: the cluster registry (Cluster objects in the cluster
 * tenantry runs on) from a terminal.
 */
import { existsSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";
import type { Command } from "commander";
import {
  type Cluster,
  labelCluster,
  listClusters,
  readCluster,
  registerCluster,
  removeCluster,
  standaloneKubeconfig,
} from "../clusters/index.js";
import { pollUntil, UserError } from "../common/index.js";
import {
  ClusterClient,
  describeError,
  findCondition,
  isNotFound,
  statusCode,
  statusOf,
} from "../kube/index.js";
import { loadKubeConfig } from "./kube-context.js";
import { collect, EXIT } from "./objects.js";
import { columns, type OutputFormat, printResult } from "./output.js";

function registryClient(command: Command): ClusterClient {
  const { kubeconfig } = command.optsWithGlobals<{ kubeconfig?: string }>();
  return new ClusterClient("registry", loadKubeConfig(kubeconfig));
}

/** `key=value` pairs (kubectl's label syntax); `key-` removes. */
export function parseLabelArguments(args: readonly string[]): {
  set: Record<string, string>;
  remove: string[];
} {
  const set: Record<string, string> = {};
  const remove: string[] = [];
  for (const arg of args) {
    if (arg.endsWith("-") && !arg.includes("=")) {
      remove.push(arg.slice(0, -1));
      continue;
    }
    const eq = arg.indexOf("=");
    if (eq <= 0) throw new UserError(`label "${arg}" must be key=value (or key- to remove it)`);
    set[arg.slice(0, eq)] = arg.slice(eq + 1);
  }
  return { set, remove };
}

function readyOf(cluster: Cluster): { status: string; reason: string; message: string } {
  const ready = findCondition(cluster.status?.conditions, "Ready");
  return { status: ready?.status ?? "Unknown", reason: ready?.reason ?? "", message: ready?.message ?? "" };
}

function labelText(cluster: Cluster): string {
  return Object.entries(cluster.metadata?.labels ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .sort()
    .join(",");
}

function summary(cluster: Cluster) {
  return {
    name: cluster.metadata!.name!,
    provider: cluster.spec.provider ?? "",
    labels: cluster.metadata?.labels ?? {},
    ready: readyOf(cluster),
    ...(cluster.status?.server ? { server: cluster.status.server } : {}),
    ...(cluster.status?.version ? { version: cluster.status.version } : {}),
    ...(cluster.status?.nodes !== undefined ? { nodes: cluster.status.nodes } : {}),
    ...(cluster.status?.capacity ? { capacity: cluster.status.capacity } : {}),
    ...(cluster.status?.clusterId ? { clusterId: cluster.status.clusterId } : {}),
    ...(cluster.status?.userCa
      ? { userCa: { subject: cluster.status.userCa.subject, notAfter: cluster.status.userCa.notAfter } }
      : {}),
    ...(cluster.status?.lastHeartbeat ? { lastHeartbeat: cluster.status.lastHeartbeat } : {}),
  };
}

function table(clusters: Cluster[]): string {
  if (clusters.length === 0) return "no clusters registered";
  return columns([
    ["NAME", "PROVIDER", "READY", "VERSION", "NODES", "CAPACITY", "LABELS"],
    ...clusters.map((c) => [
      c.metadata!.name!,
      c.spec.provider ?? "",
      readyOf(c).status,
      c.status?.version ?? "",
      c.status?.nodes === undefined ? "" : String(c.status.nodes),
      c.status?.capacitySummary ?? "",
      labelText(c),
    ]),
  ]).join("\n");
}

/** Waits (up to `timeoutMs`) for the registry's first probe of a cluster. */
async function firstProbe(client: ClusterClient, name: string, timeoutMs: number): Promise<Cluster> {
  let cluster: Cluster | undefined;
  const probed = await pollUntil(
    async () => {
      cluster = await readCluster(client, name);
      return findCondition(cluster.status?.conditions, "Ready") ? cluster : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  );
  return probed ?? cluster!;
}

function registerClusterAdd(cluster: Command): void {
  cluster
    .command("add")
    .description("register a cluster: its credentials (a kubeconfig) and labels")
    .argument("<name>", "name in the registry (a DNS label)")
    .requiredOption("--cluster-kubeconfig <file>", "a kubeconfig administering the cluster to register")
    .option("--context <name>", "the context of --cluster-kubeconfig to use (default its current one)")
    .option("-l, --label <key=value>", "a label, repeatable", collect)
    .option("--provider <name>", "the cluster provider it is filed under (DCM's clusterProvider)")
    .option("--description <text>", "what the cluster is for")
    .option("--skip-check", "register even if the credentials do not reach the cluster now")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, opts, command: Command) => {
      const file = opts.clusterKubeconfig as string;
      if (!existsSync(file)) throw new UserError(`--cluster-kubeconfig ${file}: no such file`);
      const kc = new KubeConfig();
      try {
        kc.loadFromFile(file);
      } catch (err) {
        throw new UserError(`--cluster-kubeconfig ${file}: ${(err as Error).message}`);
      }
      if (opts.context) {
        if (!kc.getContextObject(opts.context)) {
          throw new UserError(`--context ${opts.context}: ${file} has no such context`);
        }
        kc.setCurrentContext(opts.context);
      }
      const { set } = parseLabelArguments((opts.label as string[] | undefined) ?? []);
      const client = registryClient(command);
      await registerCluster(client, {
        name,
        kubeconfig: standaloneKubeconfig(kc, name),
        labels: set,
        ...(opts.provider ? { provider: opts.provider as string } : {}),
        ...(opts.description ? { description: opts.description as string } : {}),
        checkReachable: !opts.skipCheck,
      });
      const probed = await firstProbe(client, name, 15_000);
      const ready = readyOf(probed);
      printResult(summary(probed), opts.output as OutputFormat, () =>
        [
          `cluster "${name}" registered`,
          ready.status === "Unknown"
            ? "  not probed yet: is tenantry running on the registry's cluster?"
            : `  Ready=${ready.status} ${ready.reason}: ${ready.message}`,
          ...(probed.status?.version
            ? [
                `  ${probed.status.version}, ${probed.status.nodes ?? 0} nodes, ${probed.status.capacitySummary ?? ""}`,
              ]
            : []),
        ].join("\n"),
      );
    });
}

export function registerClusterCommands(program: Command): void {
  const cluster = program
    .command("cluster")
    .description("the cluster registry: clusters logical clouds and peerings select by label");
  cluster.option(
    "--kubeconfig <path>",
    "the cluster tenantry (and its registry) runs on (default $KUBECONFIG, else the embedded home cluster)",
  );

  registerClusterAdd(cluster);

  cluster
    .command("list")
    .description("registered clusters with their health, version, capacity and labels")
    .option("-l, --selector <selector>", "only clusters whose labels match, e.g. tenantry.dev/provider=aws")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (opts, command: Command) => {
      let clusters: Cluster[];
      try {
        clusters = await listClusters(registryClient(command), opts.selector as string | undefined);
      } catch (err) {
        if (statusCode(err) === 400)
          throw new UserError(
            `--selector "${opts.selector}": ${statusOf(err)?.message ?? describeError(err)}`,
            EXIT.badInput,
          );
        if (isNotFound(err))
          throw new UserError(
            "no cluster registry here: is tenantry installed on this cluster?",
            EXIT.notFound,
          );
        throw err;
      }
      printResult(clusters.map(summary), opts.output as OutputFormat, () => table(clusters));
    });

  cluster
    .command("label")
    .description(
      "set (key=value) or remove (key-) labels of a registered cluster; logical clouds selecting it follow",
    )
    .argument("<name>", "registered cluster")
    .argument("<labels...>", "key=value to set, key- to remove")
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (name: string, labels: string[], opts, command: Command) => {
      const updated = await labelCluster(registryClient(command), name, parseLabelArguments(labels));
      printResult(
        summary(updated),
        opts.output as OutputFormat,
        () => `cluster "${name}" labelled: ${labelText(updated)}`,
      );
    });

  cluster
    .command("remove")
    .description("remove a registration; logical clouds configured there are cleaned up first")
    .argument("<name>", "registered cluster")
    .option("--force", "do not wait for logical clouds to clean up (what they created there stays)")
    .option("--no-wait", "return at once")
    .option("--timeout <seconds>", "how long to wait for the clean-up", (v) => Number(v), 120)
    .action(async (name: string, opts, command: Command) => {
      const client = registryClient(command);
      await removeCluster(client, name, { force: Boolean(opts.force) });
      if (!opts.wait) {
        process.stdout.write(`cluster "${name}" is being removed\n`);
        return;
      }
      const deadline = Date.now() + (opts.timeout as number) * 1000;
      for (;;) {
        let current: Cluster;
        try {
          current = await readCluster(client, name);
        } catch (err) {
          if (err instanceof UserError && err.exitCode === EXIT.notFound) break;
          throw err;
        }
        if (Date.now() > deadline) {
          throw new UserError(
            `cluster "${name}" is still held by ${(current.metadata?.finalizers ?? []).join(", ")} after ${opts.timeout}s (is it reachable? --force leaves what logical clouds created there)`,
            EXIT.failure,
          );
        }
        await sleep(250);
      }
      process.stdout.write(`cluster "${name}" removed\n`);
    });
}
