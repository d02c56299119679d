import { type CancelTimer, type Clock, systemClock } from "./clock.js";
import { defaultControllerRateLimiter, type RateLimiter } from "./ratelimit.js";

/** Identifies one object in one cluster; `namespace` is undefined for cluster-scoped objects. */
export interface ObjectRef {
  cluster: string;
  namespace?: string;
  name: string;
}

/**
 * Queue key for an object: `cluster/namespace/name`, with an empty namespace for
 * cluster-scoped objects (`cluster//name`). Strings keep keys cheap to compare and de-duplicate.
 */
export function objectKey(cluster: string, namespace: string | undefined, name: string): string {
  if (!cluster || cluster.includes("/")) throw new Error(`invalid cluster name in object key: "${cluster}"`);
  if (namespace?.includes("/")) throw new Error(`invalid namespace in object key: "${namespace}"`);
  if (!name) throw new Error("object key needs a name");
  return `${cluster}/${namespace ?? ""}/${name}`;
}

export function parseObjectKey(key: string): ObjectRef {
  const first = key.indexOf("/");
  const second = first < 0 ? -1 : key.indexOf("/", first + 1);
  if (first <= 0 || second < 0 || second === key.length - 1)
    throw new Error(`malformed object key: "${key}"`);
  const namespace = key.slice(first + 1, second);
  return {
    cluster: key.slice(0, first),
    ...(namespace ? { namespace } : {}),
    name: key.slice(second + 1),
  };
}

export interface WorkQueueOptions {
  rateLimiter?: RateLimiter;
  clock?: Clock;
}

/**
 * The controller-runtime work queue contract:
 * - a key already waiting is not added twice;
 * - a key being processed is never handed to a second worker: re-adding it marks it dirty
 *   and it goes back in the queue when the worker calls `done(key)`;
 * - `addAfter` and `addRateLimited` delay the add; `forget` resets the key's backoff;
 * - after `shutDown`, adds are ignored and `get()` resolves to undefined once the queue is drained.
 */
export class WorkQueue {
  private readonly rateLimiter: RateLimiter;
  private readonly clock: Clock;
  private queue: string[] = [];
  /** Keys that need processing: waiting in `queue`, or re-added while being processed. */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { readyAt: number; cancel: CancelTimer }>();
  private waiters: Array<(key: string | undefined) => void> = [];
  private shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter({ clock: this.clock });
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.queue.push(key);
    this.handOut();
  }

  /** Next key to process, waiting for one if needed; undefined once shut down and drained. */
  get(): Promise<string | undefined> {
    if (this.queue.length > 0) return Promise.resolve(this.take());
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks `key` as no longer processed; re-queues it if it was added meanwhile. */
  done(key: string): void {
    if (!this.processing.delete(key)) return;
    if (this.dirty.has(key)) {
      this.queue.push(key);
      this.handOut();
    }
  }

  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const readyAt = this.clock.now() + ms;
    const existing = this.delayed.get(key);
    // Like client-go, an earlier pending deadline wins; a later one never postpones it.
    if (existing && existing.readyAt <= readyAt) return;
    existing?.cancel();
    const cancel = this.clock.setTimer(ms, () => {
      this.delayed.delete(key);
      this.add(key);
    });
    this.delayed.set(key, { readyAt, cancel });
  }

  addRateLimited(key: string): void {
    this.addAfter(key, this.rateLimiter.when(key));
  }

  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.numRequeues(key);
  }

  /** Keys waiting to be handed to a worker (not counting keys in progress or delayed). */
  len(): number {
    return this.queue.length;
  }

  processingCount(): number {
    return this.processing.size;
  }

  delayedCount(): number {
    return this.delayed.size;
  }

  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const { cancel } of this.delayed.values()) cancel();
    this.delayed.clear();
    // Waiters only exist while the queue is empty, so they are all owed "drained".
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve(undefined);
  }

  private take(): string {
    const key = this.queue.shift()!;
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  private handOut(): void {
    while (this.waiters.length > 0 && this.queue.length > 0) {
      const resolve = this.waiters.shift()!;
      resolve(this.take());
    }
  }
}
