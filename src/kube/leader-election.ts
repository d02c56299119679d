import { type V1Lease, type V1LeaseSpec, V1MicroTime } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { ClusterClient } from "./clients.js";
import { type Clock, sleep, systemClock } from "./clock.js";
import { describeError, isAlreadyExists, isConflict, isNotFound } from "./errors.js";
import { silentLogger } from "./logging.js";

/** The leader-election view of a Lease; times are epoch milliseconds. */
export interface LeaseRecord {
  /** Empty when nobody holds the lease. */
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime?: number;
  renewTime?: number;
  leaseTransitions: number;
}

/** A lease as read from storage, with what is needed to write it back optimistically. */
export interface StoredLease {
  record: LeaseRecord;
  resourceVersion: string;
  /** The full object, so an update keeps fields this module does not manage. */
  raw?: V1Lease;
}

/** Persistence of one Lease; {@link KubeLeaseStore} is the coordination.k8s.io/v1 implementation. */
export interface LeaseStore {
  readonly description: string;
  get(): Promise<StoredLease | undefined>;
  /** Fails with 409 AlreadyExists if someone created it first. */
  create(record: LeaseRecord): Promise<StoredLease>;
  /** Fails with 409 Conflict if the lease changed since `previous` was read. */
  update(previous: StoredLease, record: LeaseRecord): Promise<StoredLease>;
}

function toMillis(value: unknown): number | undefined {
  if (value instanceof Date) return value.getTime();
  if (typeof value === "string") {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  return undefined;
}

export function leaseRecordFrom(spec: V1LeaseSpec | undefined): LeaseRecord {
  // client-node leaves MicroTime fields as strings when reading, despite their declared type.
  const acquireTime = toMillis(spec?.acquireTime);
  const renewTime = toMillis(spec?.renewTime);
  return {
    holderIdentity: spec?.holderIdentity ?? "",
    leaseDurationSeconds: spec?.leaseDurationSeconds ?? 0,
    ...(acquireTime !== undefined ? { acquireTime } : {}),
    ...(renewTime !== undefined ? { renewTime } : {}),
    leaseTransitions: spec?.leaseTransitions ?? 0,
  };
}

export function leaseSpecFrom(record: LeaseRecord): V1LeaseSpec {
  // MicroTime must be sent with exactly six fractional digits; V1MicroTime serializes that way.
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    ...(record.acquireTime !== undefined ? { acquireTime: new V1MicroTime(record.acquireTime) } : {}),
    ...(record.renewTime !== undefined ? { renewTime: new V1MicroTime(record.renewTime) } : {}),
    leaseTransitions: record.leaseTransitions,
  };
}

/**
 * Whether `identity` may write itself into the lease at `now`: the lease is missing, free,
 * already ours, or expired. Expiry is measured from `observedAt` — the local time at which
 * this candidate first saw the current version of the record — rather than from the
 * holder's renewTime, as client-go does, so that clock skew between machines cannot make a
 * candidate take a lease that is still being renewed. Without `observedAt`, renewTime is used.
 */
export function shouldAcquire(
  record: LeaseRecord | undefined,
  now: number,
  identity: string,
  observedAt?: number,
): boolean {
  if (!record?.holderIdentity || record.holderIdentity === identity) return true;
  const since = observedAt ?? record.renewTime ?? record.acquireTime;
  if (since === undefined) return true;
  return since + record.leaseDurationSeconds * 1000 <= now;
}

/** The record to write when `identity` acquires or renews the lease. */
export function acquiredRecord(
  previous: LeaseRecord | undefined,
  identity: string,
  now: number,
  leaseDurationMs: number,
): LeaseRecord {
  const renewing = previous?.holderIdentity === identity;
  return {
    holderIdentity: identity,
    leaseDurationSeconds: Math.max(1, Math.ceil(leaseDurationMs / 1000)),
    acquireTime: renewing ? (previous.acquireTime ?? now) : now,
    renewTime: now,
    leaseTransitions: !previous ? 0 : renewing ? previous.leaseTransitions : previous.leaseTransitions + 1,
  };
}

/**
 * The record written on a voluntary release: no holder and a one-second duration (as
 * client-go), so the next candidate can take over right away instead of waiting out the lease.
 */
export function releasedRecord(previous: LeaseRecord, now: number): LeaseRecord {
  return {
    holderIdentity: "",
    leaseDurationSeconds: 1,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: previous.leaseTransitions,
  };
}

/** client-go's JitterFactor for the acquire loop. */
const RETRY_JITTER = 1.2;

export interface LeaseTimings {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** client-go's timing rules: renewals must fail for a while before another candidate may take over. */
export function validateLeaseTimings({
  leaseDurationMs,
  renewDeadlineMs,
  retryPeriodMs,
}: LeaseTimings): void {
  if (retryPeriodMs <= 0) throw new Error("retryPeriod must be positive");
  if (leaseDurationMs <= renewDeadlineMs) throw new Error("leaseDuration must be greater than renewDeadline");
  if (renewDeadlineMs <= RETRY_JITTER * retryPeriodMs) {
    throw new Error(`renewDeadline must be greater than ${RETRY_JITTER} × retryPeriod`);
  }
}

export class KubeLeaseStore implements LeaseStore {
  readonly description: string;

  constructor(
    private readonly client: ClusterClient,
    private readonly namespace: string,
    private readonly name: string,
  ) {
    this.description = `${client.name}/${namespace}/${name}`;
  }

  async get(): Promise<StoredLease | undefined> {
    try {
      return stored(
        await this.client.coordination.readNamespacedLease({ name: this.name, namespace: this.namespace }),
      );
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  async create(record: LeaseRecord): Promise<StoredLease> {
    const body: V1Lease = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { name: this.name, namespace: this.namespace },
      spec: leaseSpecFrom(record),
    };
    return stored(await this.client.coordination.createNamespacedLease({ namespace: this.namespace, body }));
  }

  async update(previous: StoredLease, record: LeaseRecord): Promise<StoredLease> {
    const raw = previous.raw ?? {};
    const body: V1Lease = {
      ...raw,
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      // resourceVersion makes the replace conditional: 409 if anyone wrote in between.
      metadata: {
        ...raw.metadata,
        name: this.name,
        namespace: this.namespace,
        resourceVersion: previous.resourceVersion,
        managedFields: undefined,
      },
      spec: { ...raw.spec, ...leaseSpecFrom(record) },
    };
    return stored(
      await this.client.coordination.replaceNamespacedLease({
        name: this.name,
        namespace: this.namespace,
        body,
      }),
    );
  }
}

function stored(lease: V1Lease): StoredLease {
  return {
    record: leaseRecordFrom(lease.spec),
    resourceVersion: lease.metadata?.resourceVersion ?? "",
    raw: lease,
  };
}

export interface LeaderElectorOptions extends Partial<LeaseTimings> {
  /** Where the lease lives: a store, or a Lease name in a cluster. */
  lease: LeaseStore | { client: ClusterClient; namespace: string; name: string };
  /** Unique per candidate (e.g. hostname + random suffix). */
  identity: string;
  /** Called on becoming leader; `signal` aborts when leadership is lost or the elector stops. */
  onStartedLeading?: (signal: AbortSignal) => void | Promise<void>;
  /** Called after leadership ends; the lease is released only once this has resolved. */
  onStoppedLeading?: () => void | Promise<void>;
  /** Called whenever a different holder is observed (including this candidate). */
  onNewLeader?: (identity: string) => void;
  /** Give the lease up on `stop()` so another candidate takes over at once. Default true. */
  releaseOnStop?: boolean;
  clock?: Clock;
  logger?: Logger;
  random?: () => number;
}

/**
 * Lease-based leader election with client-go's algorithm and defaults (lease 15 s, renew
 * deadline 10 s, retry 2 s). Candidates poll the lease; one whose view of the lease has not
 * changed for a full lease duration may take it. Every write is conditional on the
 * resourceVersion that was read, so two candidates can never both succeed.
 *
 * After losing leadership the elector becomes a candidate again.
 */
export class LeaderElector {
  readonly identity: string;
  private readonly store: LeaseStore;
  private readonly timings: LeaseTimings;
  private readonly options: LeaderElectorOptions;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private readonly stopController = new AbortController();
  private observedResourceVersion: string | undefined;
  private observedAt = 0;
  private observedHolder = "";
  private leading = false;
  private leadershipAbort: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(options: LeaderElectorOptions) {
    if (!options.identity) throw new Error("leader election needs an identity");
    this.options = options;
    this.identity = options.identity;
    this.store =
      "get" in options.lease
        ? options.lease
        : new KubeLeaseStore(options.lease.client, options.lease.namespace, options.lease.name);
    this.timings = {
      leaseDurationMs: options.leaseDurationMs ?? 15_000,
      renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
      retryPeriodMs: options.retryPeriodMs ?? 2_000,
    };
    validateLeaseTimings(this.timings);
    this.clock = options.clock ?? systemClock;
    this.logger = (options.logger ?? silentLogger).child({
      lease: this.store.description,
      identity: this.identity,
    });
    this.random = options.random ?? Math.random;
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
  }

  /** Stops competing; if leading, runs onStoppedLeading and then releases the lease. */
  async stop(): Promise<void> {
    this.stopController.abort();
    await this.loop;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** Holder of the lease as last observed by this candidate ("" if none). */
  observedLeader(): string {
    return this.observedHolder;
  }

  private get stopped(): boolean {
    return this.stopController.signal.aborted;
  }

  private async run(): Promise<void> {
    const signal = this.stopController.signal;
    while (!this.stopped) {
      let acquired = false;
      while (!this.stopped && !acquired) {
        acquired = await this.tryAcquireOrRenew();
        if (!acquired) await sleep(this.clock, this.retryDelay(), signal);
      }
      if (!acquired) break;
      if (this.stopped) {
        await this.release();
        break;
      }
      this.beginLeading();
      await this.renewUntilLost(signal);
      await this.endLeading();
      if (this.stopped) {
        if (this.options.releaseOnStop ?? true) await this.release();
        break;
      }
    }
  }

  /** Renews every retryPeriod; returns when stopped, or when renewal failed for renewDeadline. */
  private async renewUntilLost(signal: AbortSignal): Promise<void> {
    let lastRenewal = this.clock.now();
    while (!this.stopped) {
      await sleep(this.clock, this.timings.retryPeriodMs, signal);
      if (this.stopped) return;
      const remaining = lastRenewal + this.timings.renewDeadlineMs - this.clock.now();
      // A hung request must not stretch leadership past the deadline.
      const renewed = remaining > 0 ? await this.withDeadline(this.tryAcquireOrRenew(), remaining) : false;
      if (renewed) {
        lastRenewal = this.clock.now();
        continue;
      }
      if (this.observedHolder && this.observedHolder !== this.identity) {
        this.logger.warn({ holder: this.observedHolder }, "lease taken over by another candidate");
        return;
      }
      if (this.clock.now() - lastRenewal >= this.timings.renewDeadlineMs) {
        this.logger.warn("failed to renew the lease within the renew deadline");
        return;
      }
    }
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = this.clock.now();
    let current: StoredLease | undefined;
    try {
      current = await this.store.get();
    } catch (error) {
      this.logger.warn({ error: describeError(error) }, "could not read the lease");
      return false;
    }
    if (current) this.observe(current);
    if (!shouldAcquire(current?.record, now, this.identity, current ? this.observedAt : undefined))
      return false;
    try {
      const record = acquiredRecord(current?.record, this.identity, now, this.timings.leaseDurationMs);
      const written = current ? await this.store.update(current, record) : await this.store.create(record);
      this.observe(written);
      return true;
    } catch (error) {
      // Losing a race to another candidate is normal; anything else is worth a warning.
      const lostRace = isConflict(error) || isAlreadyExists(error);
      this.logger[lostRace ? "debug" : "warn"]({ error: describeError(error) }, "could not write the lease");
      return false;
    }
  }

  private observe(lease: StoredLease): void {
    if (lease.resourceVersion !== this.observedResourceVersion) {
      this.observedResourceVersion = lease.resourceVersion;
      this.observedAt = this.clock.now();
    }
    const holder = lease.record.holderIdentity;
    if (holder !== this.observedHolder) {
      this.observedHolder = holder;
      if (holder) {
        this.logger.info({ holder }, "new leader observed");
        try {
          this.options.onNewLeader?.(holder);
        } catch (error) {
          this.logger.error({ error: describeError(error) }, "onNewLeader threw");
        }
      }
    }
  }

  private beginLeading(): void {
    this.leading = true;
    this.leadershipAbort = new AbortController();
    this.logger.info("started leading");
    const signal = this.leadershipAbort.signal;
    // Runs alongside renewal, like client-go's goroutine; its completion does not end leadership.
    Promise.resolve()
      .then(() => this.options.onStartedLeading?.(signal))
      .catch((error) => this.logger.error({ error: describeError(error) }, "onStartedLeading failed"));
  }

  private async endLeading(): Promise<void> {
    this.leading = false;
    this.leadershipAbort?.abort();
    this.logger.info("stopped leading");
    try {
      await this.options.onStoppedLeading?.();
    } catch (error) {
      this.logger.error({ error: describeError(error) }, "onStoppedLeading failed");
    }
  }

  /** Gives the lease up if this candidate still holds it; failure only delays the next leader. */
  private async release(): Promise<void> {
    try {
      const current = await this.store.get();
      if (!current || current.record.holderIdentity !== this.identity) return;
      this.observe(await this.store.update(current, releasedRecord(current.record, this.clock.now())));
      this.logger.info("released the lease");
    } catch (error) {
      this.logger.warn({ error: describeError(error) }, "could not release the lease");
    }
  }

  private retryDelay(): number {
    // client-go's JitterUntil: retryPeriod plus up to 1.2 × retryPeriod at random.
    return this.timings.retryPeriodMs * (1 + RETRY_JITTER * this.random());
  }

  private async withDeadline(attempt: Promise<boolean>, ms: number): Promise<boolean> {
    const cancel = new AbortController();
    const result = await Promise.race([attempt, sleep(this.clock, ms, cancel.signal).then(() => false)]);
    cancel.abort();
    return result;
  }
}
