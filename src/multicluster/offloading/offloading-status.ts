/**
 * The NamespaceOffloading status gathered from the NamespaceMaps (document 004, figure 6.2,
 * step 4; table 4.3). Pure: the status controller writes what this returns.
 */
import { type Condition, formatKubeTime, setCondition } from "../../kube/index.js";
import type {
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

export function offloadingStatus(
  offloading: NamespaceOffloading,
  maps: readonly NamespaceMap[],
  remote: RemoteName,
  now: Date,
): NamespaceOffloadingStatus {
  const namespace = offloading.metadata!.namespace!;
  const stamp = formatKubeTime(now);
  const previous = offloading.status?.remoteNamespacesConditions ?? {};
  const conditions: Record<string, RemoteNamespaceCondition[]> = {};
  const ready: string[] = [];
  const failed: string[] = [];
  const pending: string[] = [];
  let required = 0;
  for (const map of maps) {
    const cluster = peeringOfMap(map);
    const desired = map.spec?.desiredMapping?.[namespace];
    const current = map.status?.currentMapping?.[namespace];
    if (desired === undefined && !current) continue;
    if (desired !== undefined) required++;
    const offloadingRequired = remoteCondition(
      previous[cluster],
      desired !== undefined
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
          },
      stamp,
    );
    let readyCondition: Omit<RemoteNamespaceCondition, "lastTransitionTime">;
    if (!current) {
      readyCondition = {
        type: "Ready",
        status: "Unknown",
        reason: "Creating",
        message: "the remote namespace is being created",
      };
      pending.push(cluster);
    } else if (current.phase === "Accepted" && desired !== undefined) {
      readyCondition = {
        type: "Ready",
        status: "True",
        reason: "Accepted",
        message: `namespace ${current.remoteNamespace} is ready`,
      };
      ready.push(cluster);
    } else if (current.phase === "CreationLoopBackOff") {
      readyCondition = {
        type: "Ready",
        status: "False",
        reason: "CreationLoopBackOff",
        message: current.message ?? "the remote namespace could not be created",
      };
      if (desired !== undefined) failed.push(`${cluster}: ${readyCondition.message}`);
    } else {
      readyCondition = {
        type: "Ready",
        status: "False",
        reason: "Terminating",
        message: current.message ?? `namespace ${current.remoteNamespace} is being deleted`,
      };
      if (desired !== undefined) pending.push(cluster);
    }
    conditions[cluster] = [remoteCondition(previous[cluster], readyCondition, stamp), offloadingRequired];
  }

  let phase: OffloadingPhase;
  let message: string;
  if (offloading.metadata?.deletionTimestamp) {
    phase = "Terminating";
    const left = Object.keys(conditions);
    message = left.length ? `removing the replicas in ${left.sort().join(", ")}` : "the replicas are removed";
  } else if (remote.error) {
    phase = "AllFailed";
    message = remote.error;
  } else if (required === 0) {
    phase = "NoClusterSelected";
    message = "no peered cluster matches the clusterSelector";
  } else if (failed.length === required) {
    phase = "AllFailed";
    message = failed.sort().join("; ");
  } else if (failed.length > 0) {
    phase = "SomeFailed";
    message = failed.sort().join("; ");
  } else if (ready.length === required) {
    phase = "Ready";
    message = `namespace ${remote.name} is ready in ${ready.sort().join(", ")}`;
  } else {
    phase = "InProgress";
    message = `${ready.length} of ${required} replicas ready; waiting for ${pending.sort().join(", ")}`;
  }
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
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    offloadingPhase: phase,
    ...(remote.name ? { remoteNamespaceName: remote.name } : {}),
    // An empty map would reach the API server as null, which the schema refuses.
    ...(Object.keys(conditions).length ? { remoteNamespacesConditions: conditions } : {}),
    conditions: statusConditions,
  };
}
