import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiException } from "@kubernetes/client-node";
import { flushAsync, ManualClock } from "./clock.js";
import {
  acquiredRecord,
  LeaderElector,
  type LeaseRecord,
  type LeaseStore,
  leaseRecordFrom,
  leaseSpecFrom,
  releasedRecord,
  type StoredLease,
  shouldAcquire,
  validateLeaseTimings,
} from "./leader-election.js";

const NOW = Date.UTC(2025, 5, 1, 8, 0, 0);

function held(holderIdentity: string, renewTime: number, leaseDurationSeconds = 15): LeaseRecord {
  return { holderIdentity, leaseDurationSeconds, acquireTime: renewTime, renewTime, leaseTransitions: 2 };
}

function apiError(code: number, reason: string): ApiException<string> {
  return new ApiException(
    code,
    "Unsuccessful HTTP Request",
    JSON.stringify({ kind: "Status", code, reason }),
    {},
  );
}

describe("lease decisions", () => {
  test("a missing, free or own lease may be taken", () => {
    assert.ok(shouldAcquire(undefined, NOW, "me"));
    assert.ok(shouldAcquire({ ...held("", NOW) }, NOW, "me"));
    assert.ok(shouldAcquire(held("me", NOW), NOW, "me"));
  });

  test("another holder's lease is taken only once it expired", () => {
    const record = held("other", NOW);
    assert.ok(!shouldAcquire(record, NOW + 14_999, "me"));
    assert.ok(shouldAcquire(record, NOW + 15_000, "me"));
  });

  test("expiry counts from when this candidate observed the record, not the holder's clock", () => {
    // The holder's clock is an hour behind: by its renewTime the lease looks long expired.
    const record = held("other", NOW - 3_600_000);
    assert.ok(shouldAcquire(record, NOW, "me"), "without an observation time renewTime is used");
    assert.ok(!shouldAcquire(record, NOW, "me", NOW - 1_000));
    assert.ok(shouldAcquire(record, NOW, "me", NOW - 15_000));
  });

  test("the holder's lease duration is what counts", () => {
    assert.ok(shouldAcquire(held("other", NOW, 1), NOW + 1_000, "me", NOW));
  });

  test("acquiring and renewing records", () => {
    const created = acquiredRecord(undefined, "me", NOW, 15_000);
    assert.deepEqual(created, {
      holderIdentity: "me",
      leaseDurationSeconds: 15,
      acquireTime: NOW,
      renewTime: NOW,
      leaseTransitions: 0,
    });
    const renewed = acquiredRecord(created, "me", NOW + 2_000, 15_000);
    assert.equal(renewed.acquireTime, NOW, "renewal keeps the acquire time");
    assert.equal(renewed.renewTime, NOW + 2_000);
    assert.equal(renewed.leaseTransitions, 0);
    const takenOver = acquiredRecord(held("other", NOW), "me", NOW + 20_000, 3_500);
    assert.equal(takenOver.acquireTime, NOW + 20_000);
    assert.equal(takenOver.leaseTransitions, 3);
    assert.equal(takenOver.leaseDurationSeconds, 4, "durations round up to whole seconds");
  });

  test("a released lease has no holder and a one-second duration", () => {
    assert.deepEqual(releasedRecord(held("me", NOW), NOW + 5), {
      holderIdentity: "",
      leaseDurationSeconds: 1,
      acquireTime: NOW + 5,
      renewTime: NOW + 5,
      leaseTransitions: 2,
    });
  });

  test("timings must leave room for renewals before another candidate may take over", () => {
    validateLeaseTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    assert.throws(() =>
      validateLeaseTimings({ leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }),
    );
    assert.throws(() =>
      validateLeaseTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 2_400, retryPeriodMs: 2_000 }),
    );
    assert.throws(() =>
      validateLeaseTimings({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 0 }),
    );
  });

  test("converts Lease specs both ways, with MicroTime precision on the wire", () => {
    const record = leaseRecordFrom({
      holderIdentity: "a",
      leaseDurationSeconds: 15,
      // What client-node hands back when reading: strings, despite the declared Date type.
      renewTime: "2025-06-01T08:00:00.123456Z" as unknown as Date,
      acquireTime: new Date(NOW),
      leaseTransitions: 4,
    });
    assert.deepEqual(record, {
      holderIdentity: "a",
      leaseDurationSeconds: 15,
      acquireTime: NOW,
      renewTime: NOW + 123,
      leaseTransitions: 4,
    });
    const wire = JSON.parse(JSON.stringify(leaseSpecFrom(record)));
    assert.equal(wire.renewTime, "2025-06-01T08:00:00.123000Z");
    assert.deepEqual(leaseRecordFrom(undefined), {
      holderIdentity: "",
      leaseDurationSeconds: 0,
      leaseTransitions: 0,
    });
  });
});

/** One Lease in memory with resourceVersion checks, shared by several candidates. */
class MemoryLease {
  current: StoredLease | undefined;
  private version = 0;
  writes = 0;

  read(): StoredLease | undefined {
    return this.current && structuredClone(this.current);
  }

  create(record: LeaseRecord): StoredLease {
    if (this.current) throw apiError(409, "AlreadyExists");
    return this.store(record);
  }

  update(previous: StoredLease, record: LeaseRecord): StoredLease {
    if (!this.current) throw apiError(404, "NotFound");
    if (previous.resourceVersion !== this.current.resourceVersion) throw apiError(409, "Conflict");
    return this.store(record);
  }

  private store(record: LeaseRecord): StoredLease {
    this.writes++;
    this.current = { record: { ...record }, resourceVersion: String(++this.version) };
    return structuredClone(this.current);
  }
}

/** A candidate's connection to the shared lease; `broken` simulates losing the API server. */
class CandidateStore implements LeaseStore {
  readonly description = "memory";
  broken = false;
  constructor(private readonly lease: MemoryLease) {}

  private check(): void {
    if (this.broken) throw new Error("connection refused");
  }

  async get() {
    this.check();
    return this.lease.read();
  }

  async create(record: LeaseRecord) {
    this.check();
    return this.lease.create(record);
  }

  async update(previous: StoredLease, record: LeaseRecord) {
    this.check();
    return this.lease.update(previous, record);
  }
}

function candidate(lease: MemoryLease, clock: ManualClock, identity: string, log: string[]) {
  const store = new CandidateStore(lease);
  const elector = new LeaderElector({
    lease: store,
    identity,
    clock,
    random: () => 0,
    onStartedLeading: () => {
      log.push(`${identity} started`);
    },
    onStoppedLeading: async () => {
      log.push(`${identity} stopped (lease holder: ${lease.current?.record.holderIdentity})`);
    },
  });
  return { store, elector };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await flushAsync();
}

describe("LeaderElector", () => {
  test("exactly one of two candidates leads, and it keeps the lease by renewing", async () => {
    const clock = new ManualClock(NOW);
    const lease = new MemoryLease();
    const log: string[] = [];
    const a = candidate(lease, clock, "a", log);
    const b = candidate(lease, clock, "b", log);
    a.elector.start();
    await settle();
    b.elector.start();
    await settle();
    assert.deepEqual(log, ["a started"]);
    assert.ok(a.elector.isLeader());
    assert.ok(!b.elector.isLeader());
    assert.equal(b.elector.observedLeader(), "a");
    const writesBefore = lease.writes;
    await clock.advance(60_000);
    assert.ok(a.elector.isLeader() && !b.elector.isLeader());
    assert.equal(lease.current?.record.holderIdentity, "a");
    assert.equal(lease.writes - writesBefore, 30, "renewed every 2 s");
    await a.elector.stop();
    await b.elector.stop();
  });

  test("stopping the leader runs onStoppedLeading, then releases, and the other takes over at once", async () => {
    const clock = new ManualClock(NOW);
    const lease = new MemoryLease();
    const log: string[] = [];
    const a = candidate(lease, clock, "a", log);
    const b = candidate(lease, clock, "b", log);
    a.elector.start();
    await settle();
    b.elector.start();
    await clock.advance(10_000);
    await a.elector.stop();
    assert.deepEqual(
      log,
      ["a started", "a stopped (lease holder: a)"],
      "work stops before the lease is released",
    );
    assert.equal(lease.current?.record.holderIdentity, "");
    assert.equal(lease.current?.record.leaseDurationSeconds, 1);
    await clock.advance(2_000);
    assert.ok(b.elector.isLeader(), "the next poll (every 2 s with zero jitter) takes the free lease");
    assert.equal(lease.current?.record.holderIdentity, "b");
    assert.equal(lease.current?.record.leaseTransitions, 1);
    await b.elector.stop();
  });

  test("a leader that cannot renew steps down after the renew deadline; others wait out the lease", async () => {
    const clock = new ManualClock(NOW);
    const lease = new MemoryLease();
    const log: string[] = [];
    const a = candidate(lease, clock, "a", log);
    const b = candidate(lease, clock, "b", log);
    a.elector.start();
    await settle();
    b.elector.start();
    await settle();
    a.store.broken = true;
    const lostAt = clock.now();
    while (a.elector.isLeader()) await clock.advance(500);
    const steppedDownAfter = clock.now() - lostAt;
    assert.ok(
      steppedDownAfter >= 10_000 && steppedDownAfter <= 12_000,
      `stepped down after ${steppedDownAfter} ms`,
    );
    assert.ok(!b.elector.isLeader(), "b must not take over before the lease expired");
    while (!b.elector.isLeader()) await clock.advance(500);
    const takeoverAfter = clock.now() - lostAt;
    assert.ok(takeoverAfter >= 15_000 && takeoverAfter <= 20_000, `took over after ${takeoverAfter} ms`);
    assert.ok(
      takeoverAfter > steppedDownAfter,
      "the old leader always stops before the new one starts, as long as clocks run at the same rate",
    );
    assert.deepEqual(log, ["a started", "a stopped (lease holder: a)", "b started"]);
    // Once reachable again, the old leader is just a candidate.
    a.store.broken = false;
    await clock.advance(30_000);
    assert.ok(!a.elector.isLeader());
    assert.equal(a.elector.observedLeader(), "b");
    await a.elector.stop();
    await b.elector.stop();
  });

  test("write conflicts are survived: a candidate that loses a race retries later", async () => {
    const clock = new ManualClock(NOW);
    const lease = new MemoryLease();
    const log: string[] = [];
    const a = candidate(lease, clock, "a", log);
    const b = candidate(lease, clock, "b", log);
    // Both start in the same tick: both see no lease and try to create it.
    a.elector.start();
    b.elector.start();
    await settle();
    assert.equal([a, b].filter((c) => c.elector.isLeader()).length, 1);
    await clock.advance(30_000);
    assert.equal([a, b].filter((c) => c.elector.isLeader()).length, 1);
    await a.elector.stop();
    await b.elector.stop();
    assert.equal(clock.pendingTimers(), 0);
  });
});
