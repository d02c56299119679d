/**
 * `tenantry offload`, `tenantry unoffload` and `tenantry status`: a namespace's NamespaceOffloading
 * written for the user, its progress followed until the replicas settle, and one view of peerings
 * and offloaded namespaces.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { createProgress, defaultClustersDir, UserError } from "../common/index.js";
import { applyObject, type ClusterClient, isNotFound } from "../kube/index.js";
import {
  MAPPING_STRATEGIES,
  NAMESPACE_OFFLOADING_NAME,
  type NamespaceOffloading,
  type NamespaceOffloadingSpec,
  OFFLOADING_ENABLED_LABEL,
  POD_OFFLOADING_STRATEGIES,
  peeringSummaries,
} from "../multicluster/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import { parseClusterSelector } from "./cluster-selector.js";
import { columns, type OutputFormat, printResult } from "./output.js";
import { peeringTable, resolveCluster, timeoutMs } from "./peer.js";

interface OffloadFlags {
  cluster: string;
  clustersDir: string;
  podOffloadingStrategy: string;
  namespaceMappingStrategy: string;
  remoteNamespaceName?: string;
  selector: string[];
  timeout: string;
  wait: boolean;
  output: OutputFormat;
}

/** Phases after which waiting is pointless: the replicas are in place or cannot be. */
const SETTLED = new Set(["Ready", "NoClusterSelected", "SomeFailed", "AllFailed"]);

export function offloadingSpec(
  flags: Omit<OffloadFlags, "cluster" | "clustersDir" | "timeout" | "wait" | "output">,
): NamespaceOffloadingSpec {
  const pods = flags.podOffloadingStrategy;
  if (!(POD_OFFLOADING_STRATEGIES as readonly string[]).includes(pods)) {
    throw new UserError(
      `--pod-offloading-strategy must be ${POD_OFFLOADING_STRATEGIES.join(", ")}; got "${pods}"`,
    );
  }
  const mapping = flags.namespaceMappingStrategy;
  if (!(MAPPING_STRATEGIES as readonly string[]).includes(mapping)) {
    throw new UserError(
      `--namespace-mapping-strategy must be ${MAPPING_STRATEGIES.join(", ")}; got "${mapping}"`,
    );
  }
  if ((mapping === "SelectedName") !== (flags.remoteNamespaceName !== undefined)) {
    throw new UserError(
      "--remote-namespace-name is required with --namespace-mapping-strategy SelectedName, and only then",
    );
  }
  if (
    flags.remoteNamespaceName !== undefined &&
    !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(flags.remoteNamespaceName)
  ) {
    throw new UserError(
      `--remote-namespace-name "${flags.remoteNamespaceName}" must be a DNS label of at most 63 characters`,
    );
  }
  const clusterSelector = parseClusterSelector(flags.selector);
  return {
    namespaceMappingStrategy: mapping as NamespaceOffloadingSpec["namespaceMappingStrategy"],
    podOffloadingStrategy: pods as NamespaceOffloadingSpec["podOffloadingStrategy"],
    ...(flags.remoteNamespaceName ? { remoteNamespaceName: flags.remoteNamespaceName } : {}),
    ...(clusterSelector ? { clusterSelector } : {}),
  };
}

async function readOffloading(
  client: ClusterClient,
  namespace: string,
): Promise<NamespaceOffloading | undefined> {
  try {
    return (await client.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace },
    })) as unknown as NamespaceOffloading;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function replicaLines(offloading: NamespaceOffloading): string[] {
  return Object.entries(offloading.status?.remoteNamespacesConditions ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([cluster, conditions]) => {
      const ready = conditions.find((c) => c.type === "Ready");
      return `  ${cluster}: ${offloading.status?.remoteNamespaceName ?? "?"} ${ready?.status === "True" ? "ready" : `not ready (${ready?.message ?? ready?.reason ?? "unknown"})`}`;
    });
}

function registerOffload(program: Command): void {
  program
    .command("offload")
    .description(
      "offload a namespace to peered clusters chosen by their labels (creates or updates its NamespaceOffloading)",
    )
    .argument("<namespace>", "the local namespace")
    .option(
      "--cluster <cluster>",
      "the consumer cluster: a name of the embedded default or a kubeconfig path",
      "home",
    )
    .option("--pod-offloading-strategy <strategy>", "LocalAndRemote, Local or Remote", "LocalAndRemote")
    .option(
      "--namespace-mapping-strategy <strategy>",
      "DefaultName, EnforceSameName or SelectedName (fixed once created)",
      "DefaultName",
    )
    .option("--remote-namespace-name <name>", "the remote namespaces' name, with SelectedName")
    .option(
      "--selector <term>",
      "peered clusters to use, by label: e.g. 'topology.kubernetes.io/region in (eu-south,us-east),tenantry.dev/security-policy=strict'; repeat for alternatives (ORed); none = every peer",
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .option("--timeout <duration>", "how long to wait for the replicas to settle", "60s")
    .option("--no-wait", "return once the NamespaceOffloading is written")
    .option("--clusters-dir <dir>", "where the embedded default keeps its clusters", defaultClustersDir())
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (namespace: string, flags: OffloadFlags) => {
      const spec = offloadingSpec(flags);
      const timeout = timeoutMs(flags.timeout);
      const client = resolveCluster("--cluster", flags.cluster, flags.clustersDir);
      try {
        await client.core.readNamespace({ name: namespace });
      } catch (err) {
        if (isNotFound(err))
          throw new UserError(`namespace "${namespace}" does not exist in cluster ${client.name}`);
        throw err;
      }
      const existing = await readOffloading(client, namespace);
      const before = existing?.spec.namespaceMappingStrategy;
      if (existing && before && before !== spec.namespaceMappingStrategy) {
        throw new UserError(
          `namespace ${namespace} is already offloaded with --namespace-mapping-strategy ${before}, which cannot change: run tenantry unoffload ${namespace} first`,
        );
      }
      await applyObject(client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceOffloading",
        metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace },
        spec,
      });
      if (!flags.wait) {
        process.stdout.write(
          `namespaceoffloading ${namespace}/${NAMESPACE_OFFLOADING_NAME} ${existing ? "updated" : "created"}\n`,
        );
        return;
      }
      const progress = createProgress("offload");
      const started = Date.now();
      let offloading: NamespaceOffloading | undefined;
      let lastPhase = "";
      for (;;) {
        offloading = await readOffloading(client, namespace);
        const status = offloading?.status;
        const current =
          status?.observedGeneration === offloading?.metadata?.generation
            ? status?.offloadingPhase
            : undefined;
        if (current && current !== lastPhase) {
          progress.log(`${current}: ${status?.conditions?.find((c) => c.type === "Ready")?.message ?? ""}`);
          lastPhase = current;
        }
        if (current && SETTLED.has(current)) break;
        if (Date.now() - started > timeout) {
          progress.finish(`still ${lastPhase || "waiting"} after ${flags.timeout}`);
          throw new UserError(
            `namespace ${namespace} not offloaded within ${flags.timeout} (phase ${lastPhase || "unknown"})`,
            1,
          );
        }
        await sleep(250);
      }
      progress.finish(lastPhase);
      printResult(offloading?.status ?? {}, flags.output, () =>
        [`namespace ${namespace}: ${lastPhase}`, ...replicaLines(offloading!)].join("\n"),
      );
      if (lastPhase !== "Ready") process.exitCode = 1;
    });
}

function registerUnoffload(program: Command): void {
  program
    .command("unoffload")
    .description(
      "stop offloading a namespace: its replicas in the peered clusters are deleted, then its NamespaceOffloading",
    )
    .argument("<namespace>", "the local namespace")
    .option(
      "--cluster <cluster>",
      "the consumer cluster: a name of the embedded default or a kubeconfig path",
      "home",
    )
    .option("--timeout <duration>", "how long to wait for the replicas to be gone", "120s")
    .option("--clusters-dir <dir>", "where the embedded default keeps its clusters", defaultClustersDir())
    .action(async (namespace: string, flags: OffloadFlags) => {
      const timeout = timeoutMs(flags.timeout);
      const client = resolveCluster("--cluster", flags.cluster, flags.clustersDir);
      const offloading = await readOffloading(client, namespace);
      if (!offloading)
        throw new UserError(`namespace ${namespace} is not offloaded in cluster ${client.name}`);
      const progress = createProgress("unoffload");
      const started = Date.now();
      // The label would bring the offloading straight back.
      await client.core
        .patchNamespace(
          { name: namespace, body: { metadata: { labels: { [OFFLOADING_ENABLED_LABEL]: null } } } },
          { headers: { "Content-Type": "application/merge-patch+json" } } as never,
        )
        .catch((err) => {
          if (!isNotFound(err)) throw err;
        });
      await client.objects.delete(offloading).catch((err) => {
        if (!isNotFound(err)) throw err;
      });
      for (;;) {
        const current = await readOffloading(client, namespace);
        if (!current) break;
        const left = Object.keys(current.status?.remoteNamespacesConditions ?? {});
        progress.log(`Terminating: ${left.length ? `replicas left in ${left.join(", ")}` : "finishing"}`);
        if (Date.now() - started > timeout) {
          progress.finish("timed out");
          throw new UserError(
            `namespace ${namespace}: replicas still being removed after ${flags.timeout} (${left.join(", ")})`,
            1,
          );
        }
        await sleep(500);
      }
      progress.finish("unoffloaded");
      process.stdout.write(`namespace ${namespace} is no longer offloaded; its replicas are deleted\n`);
    });
}

function registerOffloadStatus(program: Command): void {
  program
    .command("status")
    .description("peerings and offloaded namespaces of a cluster")
    .option("--cluster <cluster>", "a name of the embedded default or a kubeconfig path", "home")
    .option("--clusters-dir <dir>", "where the embedded default keeps its clusters", defaultClustersDir())
    .option("-o, --output <format>", "text, json or yaml", "text")
    .action(async (flags: OffloadFlags) => {
      const client = resolveCluster("--cluster", flags.cluster, flags.clustersDir);
      const peerings = await peeringSummaries(client);
      const list = await client.objects.list(TENANTS_API_VERSION, "NamespaceOffloading");
      const offloadings = (list.items as unknown as NamespaceOffloading[]).map((o) => ({
        namespace: o.metadata!.namespace!,
        phase: o.status?.offloadingPhase ?? "Pending",
        pods: o.spec.podOffloadingStrategy ?? "LocalAndRemote",
        remoteNamespace: o.status?.remoteNamespaceName ?? "",
        clusters: Object.keys(o.status?.remoteNamespacesConditions ?? {}).sort(),
      }));
      printResult({ peerings, offloadings }, flags.output, () => {
        const rows = [
          ["NAMESPACE", "PHASE", "PODS", "REMOTE NAMESPACE", "CLUSTERS"],
          ...offloadings.map((o) => [
            o.namespace,
            o.phase,
            o.pods,
            o.remoteNamespace || "-",
            o.clusters.join(",") || "-",
          ]),
        ];
        const table = columns(rows);
        return [
          "Peerings",
          peeringTable(peerings),
          "",
          "Offloaded namespaces",
          offloadings.length ? table.join("\n") : "none",
        ].join("\n");
      });
    });
}

export function registerOffloadCommands(program: Command): void {
  registerOffload(program);
  registerUnoffload(program);
  registerOffloadStatus(program);
}
