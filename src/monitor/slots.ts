/** Bounded background work for the monitor (its Event writes), on p-queue. */
import PQueue from "p-queue";

/**
 * Work done beside the caller: at most `concurrency` tasks at once, at most `capacity` started or
 * waiting; beyond that a task is refused (the caller says what was lost), so a storm of alerts
 * cannot grow memory without bound.
 */
export class BackgroundTasks {
  private readonly queue: PQueue;

  constructor(
    concurrency: number,
    private readonly capacity: number,
  ) {
    this.queue = new PQueue({ concurrency });
  }

  /** Starts `task` when a slot is free; false (and not run) when `capacity` tasks are already there. */
  run(task: () => Promise<void>): boolean {
    if (this.size >= this.capacity) return false;
    // A task reports its own failures; one that throws must not take the others down.
    this.queue.add(task).catch(() => {});
    return true;
  }

  /** Tasks started or waiting. */
  get size(): number {
    return this.queue.size + this.queue.pending;
  }

  /** Resolves once every task taken so far has ended. */
  async drain(): Promise<void> {
    await this.queue.onIdle();
  }
}
