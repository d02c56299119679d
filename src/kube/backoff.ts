export interface JitteredBackoffOptions {
  initialMs?: number;
  maxMs?: number;
  /** Fraction of the delay added or removed at random (0.2 = ±20%). */
  jitter?: number;
}

export const DEFAULT_RECONNECT_BACKOFF: Required<JitteredBackoffOptions> = {
  initialMs: 100,
  maxMs: 30_000,
  jitter: 0.2,
};

/**
 * The one exponential backoff of tenantry: `initialMs` × 2^`attempt` (0-based), at most `maxMs`.
 * (2^attempt is Infinity past ~1000 attempts; the cap keeps that safe.)
 */
export function exponentialDelay(attempt: number, initialMs: number, maxMs: number): number {
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, attempt));
}

/**
 * Delay before retry number `attempt` (0-based): initial × 2^attempt, capped, then jittered
 * so that many clients disconnected by the same API server restart do not reconnect in lockstep.
 */
export function jitteredBackoffDelay(
  attempt: number,
  options: JitteredBackoffOptions = {},
  random: () => number = Math.random,
): number {
  const initialMs = options.initialMs ?? DEFAULT_RECONNECT_BACKOFF.initialMs;
  const maxMs = options.maxMs ?? DEFAULT_RECONNECT_BACKOFF.maxMs;
  const jitter = options.jitter ?? DEFAULT_RECONNECT_BACKOFF.jitter;
  const base = exponentialDelay(attempt, initialMs, maxMs);
  const factor = 1 + jitter * (2 * random() - 1);
  return Math.max(0, Math.round(base * factor));
}
