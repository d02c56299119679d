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

/**
 * Work done beside the caller: at most `concurrency` tasks at once, at most `capacity` started or
 * waiting; beyond that a task is refused (the caller says what was lost), so a storm of alerts
 * cannot grow memory without bound.
 */
export class BackgroundTasks {
  private readonly slots: Slots;
  private readonly tasks = new Set<Promise<void>>();

  constructor(
    concurrency: number,
    private readonly capacity: number,
  ) {
    this.slots = new Slots(concurrency);
  }

  /** Starts `task` when a slot is free; false (and not run) when `capacity` tasks are already there. */
  run(task: () => Promise<void>): boolean {
    if (this.tasks.size >= this.capacity) return false;
    const running: Promise<void> = (async () => {
      await this.slots.acquire();
      try {
        await task();
      } finally {
        this.slots.release();
      }
    })()
      // A task reports its own failures; one that throws must not take the others down.
      .catch(() => {})
      .finally(() => this.tasks.delete(running));
    this.tasks.add(running);
    return true;
  }

  /** Tasks started or waiting. */
  get size(): number {
    return this.tasks.size;
  }

  /** Resolves once every task taken so far has ended. */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.tasks]);
  }
}
