/**
 * Steps 1–4 of the Liqo thesis's figure 7.3 as pure functions: read the filters, keep the matching
 * virtual nodes, group them by generation-label values, build one Deployment per combination; and
 * which obsolete replicas may go without interrupting the service (7.1.1).
 */
import type { V1Deployment, V1Node, V1NodeSelector } from "@kubernetes/client-node";
import { NAMESPACE_OFFLOADING_NAME, type NamespaceOffloading } from "../api/offloading.js";
import type { ReplicatedDeployment } from "../api/replicated-deployment.js";
import { type Combination, groupNodes, replicaName, selectNodes } from "./combinations.js";
import { checkSpec, ReplicaError, replicaDeployment } from "./replica.js";
import { type Blocked, deploymentAvailable, type ReplicaOutcome } from "./status.js";

/** A wanted replica: the Deployment to apply, or why there is none. */
export interface WantedReplica {
  combination: Combination;
  name: string;
  deployment?: V1Deployment;
  error?: string;
}

export interface ReplicationPlan {
  blocked?: Blocked;
  selectedNodes: number;
  unlabelled: string[];
  wanted: WantedReplica[];
}

/** Why the namespace's offloading allows no replica at all, if it does not. */
export function offloadingBlock(
  namespace: string,
  offloading: NamespaceOffloading | undefined,
): Blocked | undefined {
  if (!offloading) {
    return {
      reason: "NamespaceNotOffloaded",
      message: `namespace ${namespace} has no NamespaceOffloading "${NAMESPACE_OFFLOADING_NAME}": offload the namespace first`,
    };
  }
  if (offloading.metadata?.deletionTimestamp) {
    return {
      reason: "NamespaceNotOffloaded",
      message: `the NamespaceOffloading of namespace ${namespace} is being deleted`,
    };
  }
  if (offloading.spec?.podOffloadingStrategy === "Local") {
    return {
      reason: "LocalOnlyOffloading",
      message: `the NamespaceOffloading of namespace ${namespace} has podOffloadingStrategy Local: no pod may run on a virtual node`,
    };
  }
  return undefined;
}

export function planReplication(
  rd: ReplicatedDeployment,
  offloading: NamespaceOffloading | undefined,
  virtualNodes: readonly V1Node[],
): ReplicationPlan {
  const none = { selectedNodes: 0, unlabelled: [], wanted: [] };
  const problems = checkSpec(rd);
  if (problems.length) {
    return {
      ...none,
      blocked: { reason: "InvalidSpec", message: problems.map((p) => `${p.field}: ${p.message}`).join("; ") },
    };
  }
  const blocked = offloadingBlock(rd.metadata!.namespace!, offloading);
  if (blocked) return { ...none, blocked };
  const nodes = selectNodes(
    virtualNodes,
    offloading?.spec?.clusterSelector as V1NodeSelector | undefined,
    rd.spec.selectedClusters as V1NodeSelector | undefined,
  );
  let grouping: ReturnType<typeof groupNodes>;
  try {
    grouping = groupNodes(nodes, rd.spec.generationLabels ?? []);
  } catch (err) {
    return { ...none, blocked: { reason: "ReplicaFailed", message: (err as Error).message } };
  }
  const wanted = grouping.combinations.map((combination): WantedReplica => {
    const name = replicaName(rd.metadata!.name!, combination.hash);
    try {
      return { combination, name, deployment: replicaDeployment(rd, combination) };
    } catch (err) {
      if (!(err instanceof ReplicaError)) throw err;
      return { combination, name, error: err.message };
    }
  });
  return { selectedNodes: nodes.length, unlabelled: grouping.unlabelled, wanted };
}

/**
 * Obsolete replicas that may be deleted now: all of them once every wanted replica is Available (or
 * none is wanted), so replacing one set by another never leaves the service without replicas;
 * before that, those that are not Available themselves, since they serve nothing.
 */
export function deletableObsolete(
  wanted: readonly ReplicaOutcome[],
  obsolete: readonly V1Deployment[],
): V1Deployment[] {
  return everyReplicaAvailable(wanted) ? [...obsolete] : obsolete.filter((d) => !deploymentAvailable(d));
}

/** Every wanted replica exists without error and is Available (true when none is wanted). */
export function everyReplicaAvailable(wanted: readonly ReplicaOutcome[]): boolean {
  return wanted.every((r) => !r.error && deploymentAvailable(r.deployment));
}
