/** A counting semaphore and an abortable pause, shared by the prober and the notifier. */
export class Slots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  acquire(): Promise<void> {
    if (this.running < this.size) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) =>
      this.waiting.push(() => {
        this.running++;
        resolve();
      }),
    );
  }

  release(): void {
    this.running--;
    this.waiting.shift()?.();
  }

  /** Lets every waiter through (when stopping: they then see the stop and return). */
  releaseAll(): void {
    for (const wake of this.waiting.splice(0)) wake();
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
