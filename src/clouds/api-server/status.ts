/**
 * The answer to DCM's status query, from a LogicalCloud's status: the actions, a summary
 * (`deployedStatus` or `readyStatus` with counts) and, per cluster, its connectivity and
 * resources; tenantry adds each cluster's state, reason and message.
 */
import type { ClusterEntry, LogicalCloud, ResourceRef } from "../api/logical-cloud.js";
import { deployedStatusOf } from "../plan.js";

export interface StatusOptions {
  /** `ready` (default) or `deployed`. */
  view: "ready" | "deployed";
  /** `summary`, `all` (default) or `detail`. */
  output: "summary" | "all" | "detail";
  /** `<provider>+<cluster>` filters. */
  clusters: string[];
  /** Resource name filters. */
  resources: string[];
  listClusters: boolean;
  listResources: boolean;
}

function gvk(ref: ResourceRef) {
  const [group, version] = ref.apiVersion.includes("/") ? ref.apiVersion.split("/") : ["", ref.apiVersion];
  return { Group: group, Version: version, Kind: ref.kind };
}

function readyOf(ref: ResourceRef): "Ready" | "NotReady" | "NotPresent" {
  if (ref.state === "Applied") return "Ready";
  if (ref.state === "Deleted") return "NotPresent";
  return "NotReady";
}

function count(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[v] = (counts[v] ?? 0) + 1;
  return counts;
}

export function statusAnswer(
  project: string,
  cloud: LogicalCloud,
  options: StatusOptions,
): Record<string, unknown> {
  const status = cloud.status ?? {};
  const wanted = (e: ClusterEntry) =>
    options.clusters.length === 0 || options.clusters.includes(`${e.clusterProvider}+${e.cluster}`);
  const entries = (status.clusters ?? []).filter(wanted);
  const resourcesOf = (e: ClusterEntry) =>
    (e.resources ?? []).filter((r) => options.resources.length === 0 || options.resources.includes(r.name));
  const all = entries.flatMap(resourcesOf);
  const deployed = deployedStatusOf(cloud) ?? "";
  const lifecycle = cloud.spec.lifecycle;
  // The controller has not taken the last action up yet: its status is still about the one before.
  const behind = lifecycle && status.instance !== lifecycle.instance;
  const ready = deployed === "Instantiated" ? "Ready" : "NotReady";
  const answer: Record<string, unknown> = {
    project,
    name: cloud.metadata!.name!,
    state: status.state ?? "Created",
    states: { actions: status.actions ?? [] },
    status: options.view === "deployed" ? deployed : ready,
    ...(options.view === "deployed"
      ? { deployedStatus: deployed, deployedCounts: count(all.map((r) => r.state)) }
      : { readyStatus: ready, readyCounts: count(all.map(readyOf)) }),
    ...(behind
      ? { message: `${lifecycle.action} asked (instance ${lifecycle.instance}): not taken up yet` }
      : status.message
        ? { message: status.message }
        : {}),
  };
  if (options.listClusters) {
    answer.clustersByApp = entries.map((e) => ({ clusterProvider: e.clusterProvider, cluster: e.cluster }));
    return answer;
  }
  if (options.listResources) {
    answer.resourcesByApp = [...new Set(all.map((r) => `${r.kind}/${r.name}`))].sort();
    return answer;
  }
  if (options.output === "summary") return answer;
  answer.clusters = entries.map((e) => ({
    clusterProvider: e.clusterProvider,
    cluster: e.cluster,
    connectivity: e.connectivity,
    // tenantry's additions: where the cluster stands and why.
    state: e.state,
    ...(e.reason ? { reason: e.reason } : {}),
    ...(e.message ? { message: e.message } : {}),
    ...(options.output === "detail" && e.applyMs !== undefined ? { applyMs: e.applyMs } : {}),
    ...(options.output === "detail" && e.certificates ? { certificates: e.certificates } : {}),
    resources: resourcesOf(e).map((r) => ({
      GVK: gvk(r),
      name: r.name,
      ...(r.namespace ? { namespace: r.namespace } : {}),
      ...(options.view === "deployed" ? { deployedStatus: r.state } : { readyStatus: readyOf(r) }),
    })),
  }));
  return answer;
}
