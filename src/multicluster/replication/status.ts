/**
 * A ReplicatedDeployment's status from what the controller found and did: one entry per replica
 * Deployment (current and obsolete), the counts for `kubectl get`, and the Ready condition.
 */
import type { V1Deployment, V1DeploymentCondition } from "@kubernetes/client-node";
import { type Condition, type ConditionUpdate, formatKubeTime, setCondition } from "../../kube/index.js";
import type {
  DeploymentConditionSummary,
  ReplicaStatus,
  ReplicatedDeploymentStatus,
} from "../api/replicated-deployment.js";
import type { Combination } from "./combinations.js";
import { recordedCombination } from "./replica.js";

/** Why no replica can exist at all. */
export interface Blocked {
  reason: "NamespaceNotOffloaded" | "LocalOnlyOffloading" | "InvalidSpec" | "ReplicaFailed";
  message: string;
}

/** One wanted replica: its Deployment as last seen (or applied), or why it could not be applied. */
export interface ReplicaOutcome {
  combination: Combination;
  name: string;
  deployment?: V1Deployment;
  error?: string;
}

export interface ReplicationReport {
  generation: number | undefined;
  blocked?: Blocked;
  generationLabels: readonly string[];
  /** Virtual nodes matching the clusterSelector and selectedClusters. */
  selectedNodes: number;
  /** Selected nodes lacking a generation label. */
  unlabelled: readonly string[];
  replicas: readonly ReplicaOutcome[];
  /** Replicas whose combination is gone, still kept so the service is not interrupted. */
  obsolete: readonly V1Deployment[];
  /** Replicas left as they are while the spec is invalid. */
  untouched?: readonly V1Deployment[];
  /** Errors deleting obsolete replicas, by name. */
  deleteErrors?: Readonly<Record<string, string>>;
}

/** Available=True for the Deployment's current spec. */
export function deploymentAvailable(deployment: V1Deployment | undefined): boolean {
  if (!deployment) return false;
  const generation = deployment.metadata?.generation ?? 0;
  if ((deployment.status?.observedGeneration ?? -1) < generation) return false;
  return (deployment.status?.conditions ?? []).some((c) => c.type === "Available" && c.status === "True");
}

function time(value: Date | string | undefined): number {
  return value === undefined ? 0 : new Date(value).getTime();
}

function failing(condition: V1DeploymentCondition): boolean {
  return condition.type === "ReplicaFailure" ? condition.status === "True" : condition.status !== "True";
}

/**
 * The Deployment's last condition that tells its state: the most recently updated failing one, else
 * Available (the Liqo thesis shows Available; Progressing is updated last even when all is well).
 */
export function lastCondition(deployment: V1Deployment): DeploymentConditionSummary | undefined {
  const conditions = deployment.status?.conditions ?? [];
  let last: V1DeploymentCondition | undefined;
  for (const c of conditions.filter(failing)) {
    if (!last || time(c.lastUpdateTime) >= time(last.lastUpdateTime)) last = c;
  }
  last ??= conditions.find((c) => c.type === "Available") ?? conditions.at(-1);
  if (!last) return undefined;
  return {
    type: last.type,
    status: last.status,
    ...(last.reason ? { reason: last.reason } : {}),
    ...(last.message ? { message: last.message } : {}),
    ...(last.lastUpdateTime ? { lastUpdateTime: formatKubeTime(new Date(last.lastUpdateTime)) } : {}),
    ...(last.lastTransitionTime
      ? { lastTransitionTime: formatKubeTime(new Date(last.lastTransitionTime)) }
      : {}),
  };
}

function deploymentFields(deployment: V1Deployment | undefined): Partial<ReplicaStatus> {
  if (!deployment) return {};
  const condition = lastCondition(deployment);
  return {
    replicas: deployment.spec?.replicas ?? 1,
    readyReplicas: deployment.status?.readyReplicas ?? 0,
    ...(condition ? { lastCondition: condition } : {}),
  };
}

function replicaEntry(outcome: ReplicaOutcome): ReplicaStatus {
  return {
    name: outcome.name,
    generationLabelsValues: outcome.combination.values,
    virtualNodes: outcome.combination.nodes,
    ...deploymentFields(outcome.deployment),
    available: !outcome.error && deploymentAvailable(outcome.deployment),
    ...(outcome.error ? { error: outcome.error.slice(0, 4096) } : {}),
  };
}

/** A replica known only by its Deployment (obsolete, or left alone): its combination from its annotation. */
function existingEntry(deployment: V1Deployment, obsolete: boolean, deleteError?: string): ReplicaStatus {
  const recorded = recordedCombination(deployment);
  return {
    name: deployment.metadata!.name!,
    ...(recorded ? { generationLabelsValues: recorded.values } : {}),
    ...(recorded?.node ? { virtualNodes: [recorded.node] } : {}),
    ...deploymentFields(deployment),
    available: deploymentAvailable(deployment),
    ...(obsolete ? { obsolete: true } : {}),
    ...(deleteError ? { error: deleteError.slice(0, 4096) } : {}),
  };
}

/** `name (region=eu-south)`, or `name (node tenantry-edge-1)`. */
function describeReplica(outcome: ReplicaOutcome): string {
  const { values, node } = outcome.combination;
  const what =
    node !== undefined
      ? `node ${node}`
      : Object.entries(values)
          .map(([k, v]) => `${k}=${v}`)
          .join(", ");
  return `${outcome.name} (${what})`;
}

function list(items: readonly string[], most = 5): string {
  const shown = items.slice(0, most).join("; ");
  return items.length > most ? `${shown}; and ${items.length - most} more` : shown;
}

/** The Ready condition: True only when every wanted replica exists and is Available. */
export function readyCondition(report: ReplicationReport): ConditionUpdate {
  const observedGeneration = report.generation;
  const unready = (reason: string, message: string): ConditionUpdate => ({
    type: "Ready",
    status: "False",
    reason,
    message,
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  });
  if (report.blocked) return unready(report.blocked.reason, report.blocked.message);
  const leftOut = report.unlabelled.length
    ? `${report.unlabelled.length} selected virtual node(s) lack a generation label (${report.generationLabels.join(", ")}) and get no replica: ${list(report.unlabelled)}`
    : "";
  if (report.replicas.length === 0) {
    const why =
      report.selectedNodes === 0
        ? "no virtual node matches the NamespaceOffloading's clusterSelector and selectedClusters"
        : leftOut;
    return unready("NoClusterSelected", why);
  }
  const failed = report.replicas.filter((r) => r.error);
  const deleteErrors = Object.entries(report.deleteErrors ?? {}).map(
    ([name, error]) => `deleting obsolete ${name}: ${error}`,
  );
  const notes = [
    ...(report.obsolete.length
      ? [
          `keeping ${report.obsolete.length} obsolete replica(s) until every current one is Available: ${list(report.obsolete.map((d) => d.metadata!.name!))}`,
        ]
      : []),
    ...(leftOut ? [leftOut] : []),
  ];
  const withNotes = (message: string) => [message, ...notes].join("; ");
  if (failed.length || deleteErrors.length) {
    return unready(
      "ReplicaFailed",
      withNotes(list([...failed.map((r) => `${describeReplica(r)}: ${r.error}`), ...deleteErrors])),
    );
  }
  const waiting = report.replicas.filter((r) => !deploymentAvailable(r.deployment));
  if (waiting.length) {
    const detail = waiting.map((r) => {
      const condition = r.deployment ? lastCondition(r.deployment) : undefined;
      return condition?.message ? `${describeReplica(r)}: ${condition.message}` : describeReplica(r);
    });
    return unready(
      "ReplicasNotAvailable",
      withNotes(
        `${report.replicas.length - waiting.length} of ${report.replicas.length} replica(s) Available; waiting for ${list(detail)}`,
      ),
    );
  }
  return {
    type: "Ready",
    status: "True",
    reason: "AllReplicasAvailable",
    message: withNotes(`${report.replicas.length} replica(s) Available`),
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
}

export function replicationStatus(
  report: ReplicationReport,
  previous: readonly Condition[] | undefined,
  now: Date,
): ReplicatedDeploymentStatus {
  const entries = [
    ...report.replicas.map(replicaEntry),
    ...report.obsolete.map((d) => existingEntry(d, true, report.deleteErrors?.[d.metadata!.name!])),
    ...(report.untouched ?? []).map((d) => existingEntry(d, false)),
  ].sort((a, b) => a.name.localeCompare(b.name));
  return {
    ...(report.generation !== undefined ? { observedGeneration: report.generation } : {}),
    conditions: setCondition(previous, readyCondition(report), now),
    deploymentCount: report.replicas.length,
    availableDeploymentCount: report.replicas.filter((r) => !r.error && deploymentAvailable(r.deployment))
      .length,
    deployments: entries,
  };
}

/** JSON with object keys sorted, so equal values compare equal whatever their field order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

/** Whether a new status changes more than replica states: generation, Ready's status or reason, which replicas, errors. */
export function statusShapeChanged(
  current: ReplicatedDeploymentStatus,
  next: ReplicatedDeploymentStatus,
): boolean {
  const shape = (s: ReplicatedDeploymentStatus) =>
    canonicalJson({
      generation: s.observedGeneration,
      ready: s.conditions?.filter((c) => c.type === "Ready").map((c) => [c.status, c.reason]),
      replicas: (s.deployments ?? []).map((d) => [d.name, d.obsolete ?? false, d.error ?? ""]),
    });
  return shape(current) !== shape(next);
}
