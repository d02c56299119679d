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
 * How soon a key is wanted. `high`: something someone waits on (an object created, deleted or whose
 * spec changed). `low`: a look that confirms rather than changes — a key from an informer's first
 * list or a relist, or an object whose status alone changed. After a restart with thousands of
 * objects listed, a new object is then handled next, not after all of them.
 */
export type Priority = "high" | "low";

/** While low-priority keys wait, one of them is handed out after this many high-priority ones, so they are never starved. */
const HIGH_PER_LOW = 9;

/**
 * The controller-runtime work queue contract:
 * - a key already waiting is not added twice (added again with a higher priority, it moves up);
 * - a key being processed is never handed to a second worker: re-adding it marks it dirty
 *   and it goes back in the queue when the worker calls `done(key)`;
 * - high-priority keys go first, in the order added, and so do low-priority ones among themselves;
 *   while both wait, every tenth key handed out is a low-priority one;
 * - `addAfter` and `addRateLimited` delay the add; `forget` resets the key's backoff;
 * - after `shutDown`, adds are ignored and `get()` resolves to undefined once the queue is drained.
 */
export class WorkQueue {
  private readonly rateLimiter: RateLimiter;
  private readonly clock: Clock;
  /** Waiting keys per priority; a Set keeps insertion order and removes from the middle in O(1). */
  private readonly lanes: Record<Priority, Set<string>> = { high: new Set(), low: new Set() };
  /** Keys that need processing, with the highest priority asked for: waiting in a lane, or re-added while being processed. */
  private readonly dirty = new Map<string, Priority>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { readyAt: number; cancel: CancelTimer }>();
  private waiters: Array<(key: string | undefined) => void> = [];
  private shuttingDown = false;
  /** High-priority keys handed out in a row while low-priority ones waited. */
  private highStreak = 0;

  constructor(options: WorkQueueOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter({ clock: this.clock });
  }

  add(key: string, priority: Priority = "high"): void {
    if (this.shuttingDown) return;
    const asked = this.dirty.get(key);
    if (asked !== undefined) {
      if (asked === "low" && priority === "high") {
        this.dirty.set(key, "high");
        if (this.lanes.low.delete(key)) this.lanes.high.add(key);
      }
      return;
    }
    this.dirty.set(key, priority);
    if (this.processing.has(key)) return;
    this.lanes[priority].add(key);
    this.handOut();
  }

  /** Next key to process, waiting for one if needed; undefined once shut down and drained. */
  get(): Promise<string | undefined> {
    if (this.len() > 0) return Promise.resolve(this.take());
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks `key` as no longer processed; re-queues it if it was added meanwhile. */
  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const priority = this.dirty.get(key);
    if (priority !== undefined) {
      this.lanes[priority].add(key);
      this.handOut();
    }
  }

  addAfter(key: string, ms: number, priority: Priority = "high"): void {
    if (this.shuttingDown) return;
    if (ms <= 0) {
      this.add(key, priority);
      return;
    }
    const readyAt = this.clock.now() + ms;
    const existing = this.delayed.get(key);
    // Like client-go, an earlier pending deadline wins; a later one never postpones it.
    if (existing && existing.readyAt <= readyAt) return;
    existing?.cancel();
    const cancel = this.clock.setTimer(ms, () => {
      this.delayed.delete(key);
      this.add(key, priority);
    });
    this.delayed.set(key, { readyAt, cancel });
  }

  addRateLimited(key: string, priority: Priority = "high"): void {
    this.addAfter(key, this.rateLimiter.when(key), priority);
  }

  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.numRequeues(key);
  }

  /** Keys waiting to be handed to a worker (not counting keys in progress or delayed). */
  len(): number {
    return this.lanes.high.size + this.lanes.low.size;
  }

  /** Waiting keys of one priority. */
  lenOf(priority: Priority): number {
    return this.lanes[priority].size;
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

  /** The lane to serve next: high first, but a low-priority key after every {@link HIGH_PER_LOW} high ones. */
  private nextLane(): Set<string> {
    const { high, low } = this.lanes;
    if (low.size === 0 || (high.size > 0 && this.highStreak < HIGH_PER_LOW)) {
      this.highStreak = low.size === 0 ? 0 : this.highStreak + 1;
      return high;
    }
    this.highStreak = 0;
    return low;
  }

  private take(): string {
    const lane = this.nextLane();
    const key = lane.values().next().value as string;
    lane.delete(key);
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  private handOut(): void {
    while (this.waiters.length > 0 && this.len() > 0) {
      const resolve = this.waiters.shift()!;
      resolve(this.take());
    }
  }
}
