import { existsSync, readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Command, Option } from "commander";
import {
  createProgress,
  defaultClustersDir,
  parseQuantity,
  QuantityError,
  UserError,
} from "../common/index.js";
import { parseDuration } from "../identity/index.js";
import { type ClusterClient, loadClusterClient } from "../kube/index.js";
import {
  capacitySummary,
  DEFAULT_NAMESPACE,
  type PeeringSummary,
  peerClusters,
  peeringSummaries,
  unpeerClusters,
} from "../multicluster/index.js";
import { columns, type OutputFormat, printResult } from "./output.js";

interface PeerFlags {
  consumer?: string;
  provider?: string;
  clustersDir: string;
  namespace: string;
  namespaces: string;
  cpu: string;
  memory: string;
  pods: string;
  timeout: string;
  output: OutputFormat;
}

/**
 * A cluster named on the command line: a kubeconfig path (anything holding a `/` or naming a
 * file), or the name of a cluster of the embedded default (`<clusters-dir>/<name>/kubeconfig`).
 */
export function resolveCluster(flag: string, value: string | undefined, clustersDir: string): ClusterClient {
  if (!value) throw new UserError(`${flag} is required: a cluster name or a kubeconfig path`);
  const looksLikePath = value.includes("/") || (existsSync(value) && statSync(value).isFile());
  if (looksLikePath) {
    const path = resolve(value);
    if (!existsSync(path)) throw new UserError(`${flag} ${value}: no such kubeconfig file`);
    try {
      const client = loadClusterClient("kubeconfig", path);
      const context = client.kubeConfig.getCurrentContext().replace(/[^\w.-]+/g, "_") || "kubeconfig";
      return loadClusterClient(context, path);
    } catch (err) {
      throw new UserError(`${flag} ${value}: not a usable kubeconfig: ${(err as Error).message}`);
    }
  }
  const path = join(clustersDir, value, "kubeconfig");
  if (!existsSync(path)) {
    const known = existsSync(clustersDir)
      ? readdirSync(clustersDir)
          .filter((name) => existsSync(join(clustersDir, name, "kubeconfig")))
          .sort()
      : [];
    throw new UserError(
      `${flag} ${value}: no cluster named "${value}" in ${clustersDir}${known.length ? ` (known: ${known.join(", ")})` : ""}; pass a kubeconfig path instead`,
    );
  }
  return loadClusterClient(value, path);
}

/** The grant: --namespaces, --cpu, --memory, --pods, checked before anything is contacted. */
export function parseGrant(flags: Pick<PeerFlags, "namespaces" | "cpu" | "memory" | "pods">): {
  namespaceQuota: number;
  resources: Record<string, string>;
} {
  const namespaces = flags.namespaces.trim();
  const namespaceQuota = Number(namespaces);
  if (!/^\d+$/.test(namespaces) || namespaceQuota < 1 || namespaceQuota > 10000) {
    throw new UserError(`--namespaces must be a whole number from 1 to 10000, got "${flags.namespaces}"`);
  }
  const resources: Record<string, string> = {};
  for (const [flag, name, value] of [
    ["--cpu", "cpu", flags.cpu],
    ["--memory", "memory", flags.memory],
    ["--pods", "pods", flags.pods],
  ] as const) {
    let amount: bigint;
    try {
      amount = parseQuantity(value);
    } catch (err) {
      if (err instanceof QuantityError) throw new UserError(`${flag}: ${err.message}`);
      throw err;
    }
    if (amount <= 0n) throw new UserError(`${flag} must be more than 0, got "${value}"`);
    if (name === "pods" && !/^\d+$/.test(value.trim())) {
      throw new UserError(`--pods must be a whole number, got "${value}"`);
    }
    resources[name] = value.trim();
  }
  return { namespaceQuota, resources };
}

function sameCluster(a: ClusterClient, b: ClusterClient): boolean {
  return a.server === b.server;
}

function formatAge(iso: string | undefined, now = Date.now()): string {
  if (!iso) return "never";
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 120) return `${seconds}s ago`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m ago`;
  return `${Math.round(seconds / 3600)}h ago`;
}

export function peeringTable(rows: PeeringSummary[], now = Date.now()): string {
  if (rows.length === 0) return "no peerings";
  const table = [
    ["PEER", "REMOTE ID", "LABELS", "READY", "CAPACITY", "LAST HEARTBEAT"],
    ...rows.map((r) => [
      r.name,
      r.remoteClusterId,
      Object.entries(r.labels)
        .map(([k, v]) => `${k}=${v}`)
        .sort()
        .join(",") || "-",
      r.ready === "True" ? "True" : `${r.ready} (${r.reason || "unknown"})`,
      capacitySummary(r.capacity).replace(/, /g, ",") || "-",
      formatAge(r.lastHeartbeat, now),
    ]),
  ];
  const lines = columns(table);
  const notReady = rows.filter((r) => r.ready !== "True" && r.message);
  return [...lines, ...notReady.map((r) => `${r.name}: ${r.message}`)].join("\n");
}

export function timeoutMs(flag: string): number {
  try {
    return parseDuration(flag) * 1000;
  } catch {
    throw new UserError(`--timeout must be like 30s, 2m or 1h, got "${flag}"`);
  }
}

/** `tenantry peer`: checks the flags, peers the two clusters, and reports what was made. */
async function peerAction(flags: PeerFlags): Promise<void> {
  const started = Date.now();
  const grant = parseGrant(flags);
  const timeout = timeoutMs(flags.timeout);
  if (!["text", "json", "yaml"].includes(flags.output)) {
    throw new UserError(`--output must be text, json or yaml, got "${flags.output}"`);
  }
  if (flags.consumer && flags.consumer === flags.provider) {
    throw new UserError(
      `--consumer and --provider are both "${flags.consumer}": a cluster cannot peer with itself`,
    );
  }
  const consumer = resolveCluster("--consumer", flags.consumer, flags.clustersDir);
  const provider = resolveCluster("--provider", flags.provider, flags.clustersDir);
  if (sameCluster(consumer, provider)) {
    throw new UserError(
      `--consumer and --provider are the same cluster (${consumer.server}): a cluster cannot peer with itself`,
    );
  }
  const progress = createProgress("peer");
  const result = await peerClusters({
    consumer,
    provider,
    namespace: flags.namespace,
    ...grant,
    timeoutMs: timeout,
    onProgress: (side, cluster, message) => progress.log(`${side} ${cluster}: ${message}`),
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  progress.finish("peered");
  const json = {
    consumer: result.consumer,
    provider: result.provider,
    peering: result.peering,
    virtualNode: result.virtualNode,
    tenant: result.tenant,
    username: result.username,
    namespaceQuota: grant.namespaceQuota,
    resources: grant.resources,
    ...(result.certificateExpiresAt
      ? { certificateExpiresAt: result.certificateExpiresAt.toISOString() }
      : {}),
    seconds: Number(seconds),
    timingsMs: result.timings,
  };
  printResult(json, flags.output, () =>
    [
      `${result.consumer.clusterName} now peers with ${result.provider.clusterName} (${seconds}s):`,
      `  in ${result.provider.clusterName}: tenant ${result.tenant} owned by ${result.username}, up to ${grant.namespaceQuota} namespaces, quota ${capacitySummary(grant.resources)}`,
      `  in ${result.consumer.clusterName}: Peering ${result.peering} Ready, virtual node ${result.virtualNode}`,
      `see: tenantry peer status --consumer ${flags.consumer}`,
    ].join("\n"),
  );
}

export function registerPeerCommands(program: Command): void {
  const peer = program
    .command("peer")
    .description(
      "peer two clusters: the consumer gets a bounded tenant in the provider and a virtual node standing for it",
    )
    .enablePositionalOptions()
    .option(
      "--consumer <cluster>",
      "cluster that uses the capacity: a name of the embedded default or a kubeconfig path",
    )
    .option("--provider <cluster>", "cluster that lends capacity: a name or a kubeconfig path")
    .option("--namespaces <n>", "namespaces the consumer may create in the provider", "10")
    .option("--cpu <quantity>", "CPU granted (the tenant's quota, the virtual node's capacity)", "8")
    .option("--memory <quantity>", "memory granted", "16Gi")
    .option("--pods <n>", "pods granted", "100")
    .option("--timeout <duration>", "how long to wait for each side to be Ready", "60s")
    .option("--clusters-dir <dir>", "where the embedded default keeps its clusters", defaultClustersDir())
    .addOption(
      new Option("--namespace <name>", "tenantry's namespace in both clusters")
        .default(DEFAULT_NAMESPACE)
        .hideHelp(),
    )
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(peerAction);

  peer
    .command("status")
    .description("the consumer's peerings: remote id, labels, Ready, capacity, last heartbeat")
    .action(async (_opts: unknown, command: Command) => {
      const flags = command.optsWithGlobals<PeerFlags>();
      const consumer = resolveCluster("--consumer", flags.consumer ?? "home", flags.clustersDir);
      const rows = await peeringSummaries(consumer);
      printResult(rows, flags.output, () => peeringTable(rows));
    });

  program
    .command("unpeer")
    .description(
      "remove a peering on both sides: the Peering, its Secret and virtual node; the provider's tenant, its namespaces and RBAC",
    )
    .option("--consumer <cluster>", "the consumer: a name of the embedded default or a kubeconfig path")
    .option("--provider <cluster>", "the provider: a name or a kubeconfig path")
    .option("--timeout <duration>", "how long to wait for the virtual node and tenant to be gone", "60s")
    .option("--clusters-dir <dir>", "where the embedded default keeps its clusters", defaultClustersDir())
    .addOption(
      new Option("--namespace <name>", "tenantry's namespace in both clusters")
        .default(DEFAULT_NAMESPACE)
        .hideHelp(),
    )
    .action(async (flags: PeerFlags) => {
      const timeout = timeoutMs(flags.timeout);
      const consumer = resolveCluster("--consumer", flags.consumer, flags.clustersDir);
      const provider = resolveCluster("--provider", flags.provider, flags.clustersDir);
      if (flags.consumer === flags.provider || sameCluster(consumer, provider)) {
        throw new UserError(
          `--consumer and --provider are the same cluster (${consumer.server}): there is no peering`,
        );
      }
      const progress = createProgress("unpeer");
      const result = await unpeerClusters({
        consumer,
        provider,
        namespace: flags.namespace,
        timeoutMs: timeout,
        onProgress: (side, cluster, message) => progress.log(`${side} ${cluster}: ${message}`),
      });
      progress.finish("unpeered");
      process.stdout.write(`removed:\n${result.removed.map((r) => `  ${r}`).join("\n")}\n`);
    });
}
