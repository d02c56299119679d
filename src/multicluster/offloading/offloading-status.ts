/**
 * The NamespaceOffloading status gathered from the NamespaceMaps (Liqo thesis, figure 6.2,
 * step 4; table 4.3). Pure: the status controller writes what this returns.
 */
import { type Condition, formatKubeTime, setCondition } from "../../kube/index.js";
import type {
  CurrentMapping,
  NamespaceMap,
  NamespaceOffloading,
  NamespaceOffloadingStatus,
  OffloadingPhase,
  RemoteNamespaceCondition,
} from "../api/offloading.js";
import type { RemoteName } from "./names.js";
import { peeringOfMap } from "./replicas.js";

function remoteCondition(
  previous: RemoteNamespaceCondition[] | undefined,
  next: Omit<RemoteNamespaceCondition, "lastTransitionTime">,
  now: string,
): RemoteNamespaceCondition {
  const before = previous?.find((c) => c.type === next.type);
  return {
    ...next,
    lastTransitionTime:
      before?.status === next.status && before.lastTransitionTime ? before.lastTransitionTime : now,
  };
}

const PHASE_REASON: Record<OffloadingPhase, string> = {
  Ready: "AllReplicasReady",
  NoClusterSelected: "NoClusterSelected",
  InProgress: "ReplicasInProgress",
  SomeFailed: "SomeReplicasFailed",
  AllFailed: "AllReplicasFailed",
  Terminating: "Terminating",
};

type Bucket = "ready" | "failed" | "pending" | undefined;

/** The Ready condition of one cluster's replica, and where it counts toward the phase. */
function replicaReadiness(
  desired: string | undefined,
  current: CurrentMapping | undefined,
): { condition: Omit<RemoteNamespaceCondition, "lastTransitionTime">; bucket: Bucket } {
  const selected = desired !== undefined;
  if (!current) {
    return {
      condition: {
        type: "Ready",
        status: "Unknown",
        reason: "Creating",
        message: "the remote namespace is being created",
      },
      bucket: "pending",
    };
  }
  if (current.phase === "Accepted" && selected) {
    return {
      condition: {
        type: "Ready",
        status: "True",
        reason: "Accepted",
        message: `namespace ${current.remoteNamespace} is ready`,
      },
      bucket: "ready",
    };
  }
  if (current.phase === "CreationLoopBackOff") {
    return {
      condition: {
        type: "Ready",
        status: "False",
        reason: "CreationLoopBackOff",
        message: current.message ?? "the remote namespace could not be created",
      },
      bucket: selected ? "failed" : undefined,
    };
  }
  return {
    condition: {
      type: "Ready",
      status: "False",
      reason: "Terminating",
      message: current.message ?? `namespace ${current.remoteNamespace} is being deleted`,
    },
    bucket: selected ? "pending" : undefined,
  };
}

/** Whether the cluster is (still) selected, as the OffloadingRequired condition says. */
function offloadingRequired(
  cluster: string,
  selected: boolean,
): Omit<RemoteNamespaceCondition, "lastTransitionTime"> {
  return selected
    ? {
        type: "OffloadingRequired",
        status: "True",
        reason: "ClusterSelected",
        message: `${cluster} is selected`,
      }
    : {
        type: "OffloadingRequired",
        status: "False",
        reason: "ClusterNotSelected",
        message: `${cluster} is no longer selected: its replica is being removed`,
      };
}

interface Replicas {
  conditions: Record<string, RemoteNamespaceCondition[]>;
  ready: string[];
  failed: string[];
  pending: string[];
  required: number;
}

/** Each selected (or not yet removed) cluster's replica of the namespace, by its NamespaceMap. */
function replicasOf(
  namespace: string,
  maps: readonly NamespaceMap[],
  previous: Record<string, RemoteNamespaceCondition[]>,
  stamp: string,
): Replicas {
  const replicas: Replicas = { conditions: {}, ready: [], failed: [], pending: [], required: 0 };
  for (const map of maps) {
    const cluster = peeringOfMap(map);
    const desired = map.spec?.desiredMapping?.[namespace];
    const current = map.status?.currentMapping?.[namespace];
    if (desired === undefined && !current) continue;
    if (desired !== undefined) replicas.required++;
    const { condition, bucket } = replicaReadiness(desired, current);
    if (bucket === "failed") replicas.failed.push(`${cluster}: ${condition.message}`);
    else if (bucket) replicas[bucket].push(cluster);
    replicas.conditions[cluster] = [
      remoteCondition(previous[cluster], condition, stamp),
      remoteCondition(previous[cluster], offloadingRequired(cluster, desired !== undefined), stamp),
    ];
  }
  return replicas;
}

/** The offloading's phase and the message that explains it. */
function phaseOf(
  offloading: NamespaceOffloading,
  replicas: Replicas,
  remote: RemoteName,
): { phase: OffloadingPhase; message: string } {
  const { conditions, ready, failed, pending, required } = replicas;
  if (offloading.metadata?.deletionTimestamp) {
    const left = Object.keys(conditions);
    return {
      phase: "Terminating",
      message: left.length
        ? `removing the replicas in ${left.sort().join(", ")}`
        : "the replicas are removed",
    };
  }
  if (remote.error) return { phase: "AllFailed", message: remote.error };
  if (required === 0)
    return { phase: "NoClusterSelected", message: "no peered cluster matches the clusterSelector" };
  if (failed.length === required) return { phase: "AllFailed", message: failed.sort().join("; ") };
  if (failed.length > 0) return { phase: "SomeFailed", message: failed.sort().join("; ") };
  if (ready.length === required)
    return { phase: "Ready", message: `namespace ${remote.name} is ready in ${ready.sort().join(", ")}` };
  return {
    phase: "InProgress",
    message: `${ready.length} of ${required} replicas ready; waiting for ${pending.sort().join(", ")}`,
  };
}

export function offloadingStatus(
  offloading: NamespaceOffloading,
  maps: readonly NamespaceMap[],
  remote: RemoteName,
  now: Date,
): NamespaceOffloadingStatus {
  const replicas = replicasOf(
    offloading.metadata!.namespace!,
    maps,
    offloading.status?.remoteNamespacesConditions ?? {},
    formatKubeTime(now),
  );
  const { phase, message } = phaseOf(offloading, replicas, remote);
  const generation = offloading.metadata?.generation;
  const readyStatus = phase === "Ready" ? "True" : phase === "InProgress" ? "Unknown" : "False";
  const statusConditions: Condition[] = setCondition(
    offloading.status?.conditions as Condition[] | undefined,
    {
      type: "Ready",
      status: readyStatus,
      reason: PHASE_REASON[phase],
      message,
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    },
    now,
  );
  const { conditions } = replicas;
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    offloadingPhase: phase,
    ...(remote.name ? { remoteNamespaceName: remote.name } : {}),
    // An empty map would reach the API server as null, which the schema refuses.
    ...(Object.keys(conditions).length ? { remoteNamespacesConditions: conditions } : {}),
    conditions: statusConditions,
  };
}
