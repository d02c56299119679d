import { setTimeout as sleep } from "node:timers/promises";

/**
 * Retries `check` until it stops throwing, then returns its value; after `timeoutMs` rethrows the
 * last failure, so a test that never converges fails with the real assertion message.
 */
export async function eventually<T>(
  check: () => Promise<T> | T,
  { timeoutMs = 30_000, intervalMs = 200 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await sleep(intervalMs);
  }
}
