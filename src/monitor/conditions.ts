/**
 * Table 4's time-based conditions as pure functions of one object and the time: whether the
 * condition holds past its cut-off, since when, and when to look again (nothing signals a
 * deadline passing, so the monitor schedules it).
 */
import type { V1Node, V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import type { MonitorCondition, MonitoredKind } from "./api/monitor-rule.js";

export interface Verdict {
  /** The condition holds past its cut-off: the alert fires (or keeps firing). */
  firing: boolean;
  /** When the condition began (present whenever it holds, even before the cut-off). */
  since?: Date;
  message?: string;
  /** Evaluate again after this long: the cut-off is reached, or a recent restart ages out. */
  recheckInMs?: number;
}

export type MonitoredObject = V1Pod | V1PersistentVolumeClaim | V1Node;

const NOT_FIRING: Verdict = { firing: false };

const time = (value: Date | string | undefined): Date | undefined =>
  value === undefined ? undefined : new Date(value);

/** Evaluates a time-based condition (all but endpoint-probe) of `obj` at `now`. */
export function evaluateTimed(
  kind: MonitoredKind,
  condition: Exclude<MonitorCondition, "endpoint-probe">,
  cutOffMinutes: number,
  obj: MonitoredObject,
  now: Date,
): Verdict {
  const cutOffMs = cutOffMinutes * 60_000;
  const lasted = (since: Date | undefined, what: string): Verdict => {
    if (!since) return NOT_FIRING;
    const elapsed = now.getTime() - since.getTime();
    if (elapsed < cutOffMs) return { firing: false, since, recheckInMs: cutOffMs - elapsed };
    return { firing: true, since, message: `${what} for ${minutes(elapsed)} (cut-off ${cutOffMinutes} min)` };
  };
  if (kind === "Pod") {
    const pod = obj as V1Pod;
    const deleting = pod.metadata?.deletionTimestamp !== undefined;
    const phase = pod.status?.phase ?? "Pending";
    switch (condition) {
      case "long-running":
        return !deleting && phase === "Running"
          ? lasted(time(pod.status?.startTime ?? pod.metadata?.creationTimestamp), "running")
          : NOT_FIRING;
      case "long-pending":
        return !deleting && phase === "Pending"
          ? lasted(time(pod.metadata?.creationTimestamp), "pending")
          : NOT_FIRING;
      case "long-terminating":
        return deleting ? lasted(deletionRequestedAt(pod), "terminating") : NOT_FIRING;
      case "last-restart": {
        const restartedAt = lastRestart(pod);
        if (!restartedAt) return NOT_FIRING;
        const age = now.getTime() - restartedAt.getTime();
        if (age >= cutOffMs) return NOT_FIRING;
        const restarts = [
          ...(pod.status?.containerStatuses ?? []),
          ...(pod.status?.initContainerStatuses ?? []),
        ]
          .map((s) => s.restartCount ?? 0)
          .reduce((a, b) => a + b, 0);
        return {
          firing: true,
          since: restartedAt,
          message: `restarted ${minutes(age)} ago (${restarts} restarts; cut-off ${cutOffMinutes} min)`,
          recheckInMs: cutOffMs - age,
        };
      }
      default:
        return NOT_FIRING;
    }
  }
  if (kind === "PersistentVolumeClaim" && condition === "long-pending") {
    const claim = obj as V1PersistentVolumeClaim;
    return claim.metadata?.deletionTimestamp === undefined && (claim.status?.phase ?? "Pending") === "Pending"
      ? lasted(time(claim.metadata?.creationTimestamp), "pending")
      : NOT_FIRING;
  }
  if (kind === "Node" && condition === "not-ready") {
    const node = obj as V1Node;
    const ready = node.status?.conditions?.find((c) => c.type === "Ready");
    if (ready?.status === "True") return NOT_FIRING;
    const verdict = lasted(time(ready?.lastTransitionTime ?? node.metadata?.creationTimestamp), "not ready");
    return verdict.firing && ready?.reason
      ? { ...verdict, message: `${verdict.message}: ${ready.reason}` }
      : verdict;
  }
  return NOT_FIRING;
}

/**
 * When deletion was asked for: the API server sets deletionTimestamp to that moment plus the
 * grace period, so the pod has been terminating since the difference.
 */
export function deletionRequestedAt(pod: V1Pod): Date | undefined {
  const at = time(pod.metadata?.deletionTimestamp);
  if (!at) return undefined;
  return new Date(at.getTime() - (pod.metadata?.deletionGracePeriodSeconds ?? 0) * 1000);
}

/** When a container of the pod last ended and was restarted, if ever. */
export function lastRestart(pod: V1Pod): Date | undefined {
  let latest: Date | undefined;
  for (const status of [
    ...(pod.status?.containerStatuses ?? []),
    ...(pod.status?.initContainerStatuses ?? []),
  ]) {
    if (!status.restartCount) continue;
    const finished = time(status.lastState?.terminated?.finishedAt);
    if (finished && (!latest || finished > latest)) latest = finished;
  }
  return latest;
}

function minutes(ms: number): string {
  const value = ms / 60_000;
  return value >= 10 ? `${Math.round(value)} min` : `${value.toFixed(1)} min`;
}
