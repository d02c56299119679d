/** The longest delay Node's timers honour (about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Cancels a timer created by {@link Clock.setTimer}; calling it after the timer fired is harmless. */
export type CancelTimer = () => void;

/**
 * Time source for everything in this folder that waits. Injected so tests can drive
 * backoff, leases and delayed requeues with a {@link ManualClock} instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimer(ms: number, callback: () => void): CancelTimer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, callback) {
    // Node fires a timer longer than 2^31-1 ms after 1 ms: clamp, so a far-off deadline never spins.
    const handle = setTimeout(callback, Math.min(Math.max(0, ms), MAX_TIMER_MS));
    return () => clearTimeout(handle);
  },
};

/** Resolves after `ms` on `clock`, or early (without rejecting) when `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = () => {
      cancel();
      resolve();
    };
    const cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

interface PendingTimer {
  id: number;
  dueAt: number;
  callback: () => void;
}

/** A clock that only moves when told to; timers fire in due order during {@link ManualClock.advance}. */
export class ManualClock implements Clock {
  private current: number;
  private timers: PendingTimer[] = [];
  private nextId = 0;

  constructor(startMs = 1_700_000_000_000) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(ms: number, callback: () => void): CancelTimer {
    const timer: PendingTimer = { id: this.nextId++, dueAt: this.current + Math.max(0, ms), callback };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Number of timers that have not fired or been cancelled. */
  pendingTimers(): number {
    return this.timers.length;
  }

  /**
   * Moves time forward by `ms`, firing due timers one by one. Between timers it yields to
   * the event loop so promise chains woken by a timer can schedule further timers that
   * fall inside the same window, as they would with real time.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await flushAsync();
    for (;;) {
      const next = this.earliestDue();
      if (!next || next.dueAt > target) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.dueAt);
      next.callback();
      await flushAsync();
    }
    this.current = target;
    await flushAsync();
  }

  private earliestDue(): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const timer of this.timers) {
      if (!best || timer.dueAt < best.dueAt || (timer.dueAt === best.dueAt && timer.id < best.id))
        best = timer;
    }
    return best;
  }
}

/** Lets pending promise continuations and I/O callbacks run. */
export function flushAsync(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
