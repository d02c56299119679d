/** Start limits of a RuntimeService (429 with Retry-After beyond them), decided from the cache. */
import type { Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";

export const DEFAULT_LIMITS = { concurrentStartsPerUser: 2, concurrentStarts: 100, instancesPerUser: 10 };

export interface LimitRefusal {
  field: keyof typeof DEFAULT_LIMITS;
  limit: number;
  detail: string;
}

/** A runtime asked to run that is not yet Running (nor Failed): a start in progress. */
export function isStarting(runtime: Runtime): boolean {
  if ((runtime.spec?.desiredState ?? "Running") !== "Running") return false;
  const phase = runtime.status?.phase;
  return phase === undefined || phase === "Pending" || phase === "Starting";
}

/**
 * Whether one more start of `service` by `user` fits. `serviceRuntimes` are the service's runtimes
 * (all users); `isNew` says the start creates an instance (a resume does not count against
 * instancesPerUser); `inFlight` counts starts this replica is creating that the cache has not seen.
 */
export function checkStartLimits(
  service: RuntimeService,
  user: string,
  serviceRuntimes: readonly Runtime[],
  isNew: boolean,
  inFlight: { user: number; all: number } = { user: 0, all: 0 },
): LimitRefusal | undefined {
  const limits = { ...DEFAULT_LIMITS, ...(service.spec?.limits ?? {}) };
  const name = service.metadata?.name ?? "";
  const mine = serviceRuntimes.filter((r) => r.spec?.user === user);
  if (isNew && mine.length + inFlight.user >= limits.instancesPerUser) {
    return {
      field: "instancesPerUser",
      limit: limits.instancesPerUser,
      detail: `user ${user} already has ${mine.length} runtimes of service ${name}; limits.instancesPerUser is ${limits.instancesPerUser}`,
    };
  }
  const userStarts = mine.filter(isStarting).length + inFlight.user;
  if (userStarts >= limits.concurrentStartsPerUser) {
    return {
      field: "concurrentStartsPerUser",
      limit: limits.concurrentStartsPerUser,
      detail: `user ${user} has ${userStarts} starts of service ${name} in progress; limits.concurrentStartsPerUser is ${limits.concurrentStartsPerUser}`,
    };
  }
  const allStarts = serviceRuntimes.filter(isStarting).length + inFlight.all;
  if (allStarts >= limits.concurrentStarts) {
    return {
      field: "concurrentStarts",
      limit: limits.concurrentStarts,
      detail: `service ${name} has ${allStarts} starts in progress; limits.concurrentStarts is ${limits.concurrentStarts}`,
    };
  }
  return undefined;
}
