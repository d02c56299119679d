/**
 * An open-loop load generator: request i is sent at start + i × interval whatever the earlier ones
 * take, so a slow server shows as latency instead of slowing the load down.
 */
export interface OpenLoopOptions<T> {
  total: number;
  /** 0 sends everything at once (a burst). */
  intervalMs: number;
  /** Each request's deadline, from the moment it was due. */
  timeoutMs: number;
  send(index: number, deadline: number): Promise<T>;
  /** `latencyMs` counts from when the request was due, not from when it left. */
  onAnswer(value: T, latencyMs: number): void;
  onError(err: Error): void;
}

/** Runs the loop and waits for every answer; resolves with the elapsed milliseconds. */
export async function openLoop<T>(options: OpenLoopOptions<T>): Promise<number> {
  const { total, intervalMs, timeoutMs } = options;
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  let next = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (next < total && start + next * intervalMs <= now) {
        const due = start + next * intervalMs;
        const index = next++;
        inflight.push(
          options.send(index, due + timeoutMs).then(
            (value) => options.onAnswer(value, performance.now() - due),
            (err: Error) => options.onError(err),
          ),
        );
      }
      if (next >= total) resolve();
      else setTimeout(tick, Math.max(0, Math.min(intervalMs, start + next * intervalMs - performance.now())));
    };
    tick();
  });
  await Promise.all(inflight);
  return performance.now() - start;
}
