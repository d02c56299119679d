import { setTimeout as sleep } from "node:timers/promises";

export interface PollOptions {
  /** How long to keep asking. */
  timeoutMs: number;
  /** The pause after the first miss (default 250 ms). */
  intervalMs?: number;
  /** Each further miss doubles the pause up to this (default: the pause stays `intervalMs`). */
  maxIntervalMs?: number;
  signal?: AbortSignal;
}

/**
 * Asks `check` until it answers (anything but undefined) or `timeoutMs` has passed, with one
 * backoff between asks: `intervalMs`, doubled after each miss up to `maxIntervalMs`. The last ask
 * falls on the deadline, so a condition met just in time counts. Resolves to the answer, or to
 * undefined when the deadline passed: the caller says what did not happen.
 */
export async function pollUntil<T>(
  check: () => Promise<T | undefined> | T | undefined,
  options: PollOptions,
): Promise<T | undefined> {
  const deadline = Date.now() + options.timeoutMs;
  const pauses = pollPauses(options);
  for (;;) {
    const answer = await check();
    if (answer !== undefined) return answer;
    const left = deadline - Date.now();
    if (left <= 0) return undefined;
    await sleep(Math.min(pauses.next().value, left), undefined, { signal: options.signal });
  }
}

/** The pauses between asks: `intervalMs`, then doubled after each miss up to `maxIntervalMs`. */
export function* pollPauses(
  options: Pick<PollOptions, "intervalMs" | "maxIntervalMs">,
): Generator<number, never> {
  let interval = options.intervalMs ?? 250;
  const maxInterval = Math.max(interval, options.maxIntervalMs ?? interval);
  for (;;) {
    yield interval;
    interval = Math.min(interval * 2, maxInterval);
  }
}
