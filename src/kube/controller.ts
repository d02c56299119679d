import { isDeepStrictEqual } from "node:util";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type Clock, sleep, systemClock } from "./clock.js";
import { describeError } from "./errors.js";
import type { Informer } from "./informer.js";
import { silentLogger } from "./logging.js";
import type { RateLimiter } from "./ratelimit.js";
import { type ObjectRef, objectKey, type Priority, parseObjectKey, WorkQueue } from "./workqueue.js";

/**
 * Outcome of one reconcile. Throwing instead means "transient failure": the key is retried
 * with per-key exponential backoff.
 */
export type ReconcileResult =
  | { kind: "done" }
  | { kind: "requeueAfter"; ms: number }
  | { kind: "terminal"; error: unknown };

export function reconcileDone(): ReconcileResult {
  return { kind: "done" };
}

/** Success, but look again later (e.g. waiting on something not signalled by a watch). */
export function requeueAfter(ms: number): ReconcileResult {
  return { kind: "requeueAfter", ms };
}

/** A failure that retrying cannot fix (invalid spec, ...): logged, not retried until the object changes. */
export function terminalError(error: unknown): ReconcileResult {
  return { kind: "terminal", error };
}

export interface ReconcileContext {
  key: string;
  ref: ObjectRef;
  /** Aborted when the controller stops and its grace period is over. */
  signal: AbortSignal;
  logger: Logger;
  /** Consecutive failed attempts for this key before this one (0 on a first try). */
  retries: number;
}

export type Reconciler = (key: string, ctx: ReconcileContext) => Promise<ReconcileResult>;

/** Maps an object seen by an informer to the keys to reconcile. */
export type KeyMapper<T> = (obj: T, cluster: string) => string[];

/** Reconciles the object itself. */
export function ownKey(obj: KubernetesObject, cluster: string): string[] {
  const name = obj.metadata?.name;
  return name ? [objectKey(cluster, obj.metadata?.namespace, name)] : [];
}

export interface ControllerOptions {
  /** Appears in logs and metrics. */
  name: string;
  reconcile: Reconciler;
  /** Keys reconciled concurrently (a key is never reconciled twice at once). Default 1. */
  workers?: number;
  logger?: Logger;
  clock?: Clock;
  /** Defaults to controller-runtime's: per-key 5 ms..1000 s backoff, 10 qps / burst 100 overall. */
  rateLimiter?: RateLimiter;
}

export interface ControllerStats {
  reconcilesTotal: number;
  /** Reconciles that threw (and were retried with backoff). */
  reconcileErrorsTotal: number;
  /** Reconciles that returned a terminal error (not retried). */
  terminalErrorsTotal: number;
  requeueAfterTotal: number;
  /** Keys waiting for a worker. */
  queueDepth: number;
  /** Of those, the low-priority ones (from lists, relists and status-only changes). */
  lowPriorityDepth: number;
  /** Keys waiting for their backoff or requeue delay to pass. */
  delayedKeys: number;
  inFlight: number;
}

export interface StopOptions {
  /**
   * How long to wait for in-flight reconciles before abandoning them (their signal is then
   * aborted). 0 stops at once, as if the process were killed. Default 30 s.
   */
  timeoutMs?: number;
}

/**
 * Whether an update changed what controllers act on rather than only what they report: the
 * generation (the spec), labels, annotations, finalizers, owners or deletion. Objects without a
 * generation count every update as a change.
 */
export function changedBeyondStatus(oldObj: KubernetesObject, newObj: KubernetesObject): boolean {
  const before = oldObj.metadata ?? {};
  const after = newObj.metadata ?? {};
  if (before.generation === undefined || after.generation === undefined) return true;
  return (
    before.generation !== after.generation ||
    before.deletionTimestamp !== after.deletionTimestamp ||
    !isDeepStrictEqual(before.labels ?? {}, after.labels ?? {}) ||
    !isDeepStrictEqual(before.annotations ?? {}, after.annotations ?? {}) ||
    !isDeepStrictEqual(before.finalizers ?? [], after.finalizers ?? []) ||
    !isDeepStrictEqual(before.ownerReferences ?? [], after.ownerReferences ?? [])
  );
}

/** The controllers running in this process, for their metrics. */
const running = new Set<Controller>();

/** Every controller of this process that has started and not stopped. */
export function runningControllers(): Iterable<Controller> {
  return running;
}

/**
 * Level-based controller: informer events only say *which* keys to look at; the reconciler
 * reads the current state itself, so missed or merged events cannot lead to wrong results.
 *
 * Keys from what a watch reports as new, deleted or changed beyond its status go first; keys from
 * an informer's (re)list and from status-only changes wait behind them (see {@link Priority}), so
 * a leader that has just listed ten thousand objects still handles a new one within moments.
 */
export class Controller {
  readonly name: string;
  private readonly reconcile: Reconciler;
  private readonly workerCount: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly queue: WorkQueue;
  private readonly informers: Array<Informer<KubernetesObject>> = [];
  private readonly unsubscribers: Array<() => void> = [];
  private readonly stopRequested = new AbortController();
  private readonly reconcileAbort = new AbortController();
  private state: "new" | "starting" | "running" | "stopped" = "new";
  private workers: Array<Promise<void>> = [];
  private readonly counters = {
    reconcilesTotal: 0,
    reconcileErrorsTotal: 0,
    terminalErrorsTotal: 0,
    requeueAfterTotal: 0,
  };

  constructor(options: ControllerOptions) {
    this.name = options.name;
    this.reconcile = options.reconcile;
    this.workerCount = Math.max(1, options.workers ?? 1);
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({ controller: options.name });
    this.queue = new WorkQueue({
      clock: this.clock,
      ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
    });
  }

  /**
   * Enqueues the keys `mapToKeys` returns for every add, update (old and new object) and
   * delete the informer reports. `start()` waits for all watched informers to sync.
   */
  watch<T extends KubernetesObject>(informer: Informer<T>, mapToKeys: KeyMapper<T> = ownKey): void {
    this.informers.push(informer as unknown as Informer<KubernetesObject>);
    const enqueueFor = (obj: T, priority: Priority) => {
      for (const key of mapToKeys(obj, informer.cluster)) this.queue.add(key, priority);
    };
    this.unsubscribers.push(
      informer.addHandler({
        onAdd: (obj, origin) => enqueueFor(obj, origin === "watch" ? "high" : "low"),
        onUpdate: (oldObj, newObj, origin) => {
          const priority = origin === "watch" && changedBeyondStatus(oldObj, newObj) ? "high" : "low";
          enqueueFor(oldObj, priority);
          enqueueFor(newObj, priority);
        },
        // Gone is a change, even when only a relist shows it.
        onDelete: (obj) => enqueueFor(obj, "high"),
      }),
    );
  }

  enqueue(key: string, priority: Priority = "high"): void {
    this.queue.add(key, priority);
  }

  /** Reconciles `key` once `ms` have passed (for what no watch will signal, such as an expiry). */
  enqueueAfter(key: string, ms: number, priority: Priority = "high"): void {
    this.queue.addAfter(key, ms, priority);
  }

  /**
   * Waits until every watched informer has synced (so reconcilers never act on a partial
   * cache, e.g. mistaking a not-yet-listed object for a deleted one), then starts the workers.
   */
  async start(): Promise<void> {
    if (this.state !== "new") throw new Error(`controller ${this.name} was already started`);
    this.state = "starting";
    const stopped = new Promise<void>((resolve) =>
      this.stopRequested.signal.addEventListener("abort", () => resolve(), { once: true }),
    );
    await Promise.race([Promise.all(this.informers.map((informer) => informer.waitForSync())), stopped]);
    if (this.stopRequested.signal.aborted) return;
    this.state = "running";
    running.add(this);
    for (let id = 0; id < this.workerCount; id++) this.workers.push(this.work());
    this.logger.info({ workers: this.workerCount }, "controller started");
  }

  /** Stops taking keys and waits (up to `timeoutMs`) for in-flight reconciles. Informers are left running. */
  async stop(options: StopOptions = {}): Promise<void> {
    if (this.state === "stopped") return;
    this.state = "stopped";
    running.delete(this);
    this.stopRequested.abort();
    this.queue.shutDown();
    for (const unsubscribe of this.unsubscribers) unsubscribe();
    const timeoutMs = options.timeoutMs ?? 30_000;
    const allDone = Promise.all(this.workers).then(() => true);
    const cancelGraceTimer = new AbortController();
    const finished =
      timeoutMs > 0
        ? await Promise.race([
            allDone,
            sleep(this.clock, timeoutMs, cancelGraceTimer.signal).then(() => false),
          ])
        : false;
    cancelGraceTimer.abort();
    if (!finished && this.queue.processingCount() > 0) {
      this.logger.warn({ inFlight: this.queue.processingCount() }, "abandoning in-flight reconciles");
    }
    this.reconcileAbort.abort();
    this.logger.info("controller stopped");
  }

  stats(): ControllerStats {
    return {
      ...this.counters,
      queueDepth: this.queue.len(),
      lowPriorityDepth: this.queue.lenOf("low"),
      delayedKeys: this.queue.delayedCount(),
      inFlight: this.queue.processingCount(),
    };
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      if (this.stopRequested.signal.aborted) {
        this.queue.done(key);
        return;
      }
      await this.process(key);
    }
  }

  private async process(key: string): Promise<void> {
    let ref: ObjectRef;
    try {
      ref = parseObjectKey(key);
    } catch (error) {
      this.logger.error({ key, error: describeError(error) }, "dropping malformed key");
      this.queue.forget(key);
      this.queue.done(key);
      return;
    }
    const logger = this.logger.child({ key });
    const retries = this.queue.numRequeues(key);
    this.counters.reconcilesTotal++;
    try {
      const result =
        (await this.reconcile(key, { key, ref, signal: this.reconcileAbort.signal, logger, retries })) ??
        reconcileDone();
      if (result.kind === "requeueAfter") {
        this.counters.requeueAfterTotal++;
        // Success resets the backoff; the requeue is a plain timer, not a retry.
        this.queue.forget(key);
        this.queue.addAfter(key, result.ms);
      } else if (result.kind === "terminal") {
        this.counters.terminalErrorsTotal++;
        this.queue.forget(key);
        logger.error({ error: describeError(result.error) }, "terminal reconcile error");
      } else {
        this.queue.forget(key);
      }
    } catch (error) {
      this.counters.reconcileErrorsTotal++;
      this.queue.addRateLimited(key);
      logger.warn({ error: describeError(error), retries: retries + 1 }, "reconcile failed, retrying");
    } finally {
      this.queue.done(key);
    }
  }
}
