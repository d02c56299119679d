export type ConditionStatus = "True" | "False" | "Unknown";

/** Shape of metav1.Condition, as it appears on the wire (timestamps are RFC 3339 strings). */
export interface Condition {
  type: string;
  status: ConditionStatus;
  /** CamelCase, machine-readable cause of the last transition. */
  reason: string;
  message: string;
  lastTransitionTime: string;
  /** metadata.generation of the object the condition was computed from. */
  observedGeneration?: number;
}

/** What a controller states about a condition; the transition time is derived by {@link setCondition}. */
export type ConditionUpdate = Omit<Condition, "lastTransitionTime">;

// Same rule the API server applies to metav1.Condition.reason.
const REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
const STATUSES: ReadonlySet<string> = new Set(["True", "False", "Unknown"]);

/** metav1.Time precision: whole seconds, UTC. */
export function formatKubeTime(time: Date | number): string {
  return new Date(time).toISOString().replace(/\.\d+Z$/, "Z");
}

/**
 * Returns a new list with `next` set. `lastTransitionTime` moves to `now` only when the
 * status changes (or the condition is new): consumers use it to tell how long a state has
 * held, so rewriting reason or message must not reset it. Other conditions keep their order.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionUpdate,
  now: Date | number,
): Condition[] {
  if (!next.type) throw new Error("condition type must not be empty");
  if (!STATUSES.has(next.status)) throw new Error(`invalid condition status "${next.status}"`);
  if (!REASON_PATTERN.test(next.reason)) throw new Error(`invalid condition reason "${next.reason}"`);
  const list = conditions ?? [];
  const previous = findCondition(list, next.type);
  const lastTransitionTime =
    previous && previous.status === next.status ? previous.lastTransitionTime : formatKubeTime(now);
  const updated: Condition = { ...next, lastTransitionTime };
  if (!previous) return [...list, updated];
  return list.map((condition) => (condition.type === next.type ? updated : condition));
}

export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((condition) => condition.type !== type);
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === "True";
}

export function isFalse(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === "False";
}
