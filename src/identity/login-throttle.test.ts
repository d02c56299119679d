import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LoginThrottle, type ThrottleVerdict } from "./login-throttle.js";

function clock() {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

function refusal(verdict: ThrottleVerdict) {
  assert.equal(verdict.allowed, false, "refused");
  return verdict as Extract<ThrottleVerdict, { allowed: false }>;
}

describe("login throttle", () => {
  test("after the free failures, one client waits a doubling delay for that user; other clients do not", () => {
    const time = clock();
    const throttle = new LoginThrottle({ freeFailures: 3, baseDelaySeconds: 1, now: time.now });
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(throttle.check("alice", "attacker"), { allowed: true });
      throttle.failed("alice", "attacker");
    }
    const waits: number[] = [];
    for (let i = 0; i < 5; i++) {
      const verdict = refusal(throttle.check("alice", "attacker"));
      assert.equal(verdict.scope, "pair");
      assert.match(
        verdict.reason,
        /wrong passwords for "alice" from this client.*other clients are not affected/,
      );
      waits.push(verdict.retryAfterSeconds);
      time.advance(verdict.retryAfterSeconds * 1000);
      assert.deepEqual(throttle.check("alice", "attacker"), { allowed: true });
      throttle.failed("alice", "attacker");
    }
    assert.deepEqual(waits, [1, 2, 4, 8, 16], "the delay doubles with every failure");
    assert.deepEqual(
      throttle.check("alice", "her-laptop"),
      { allowed: true },
      "the right person from another client is not held back",
    );
    throttle.succeeded("alice", "her-laptop");
    assert.equal(throttle.check("alice", "attacker").allowed, false, "the attacker still waits");
  });

  test("the delay stops growing at maxDelaySeconds, and a series quiet for a window is forgotten", () => {
    const time = clock();
    const throttle = new LoginThrottle({
      freeFailures: 1,
      maxDelaySeconds: 60,
      windowSeconds: 600,
      now: time.now,
    });
    for (let i = 0; i < 20; i++) {
      const verdict = throttle.check("bob", "c");
      if (!verdict.allowed) time.advance(verdict.retryAfterSeconds * 1000);
      throttle.failed("bob", "c");
    }
    assert.equal(refusal(throttle.check("bob", "c")).retryAfterSeconds, 60);
    time.advance(600_000);
    throttle.failed("bob", "c");
    assert.equal(refusal(throttle.check("bob", "c")).retryAfterSeconds, 1, "a new series starts small");
  });

  test("a right password ends that client's series", () => {
    const throttle = new LoginThrottle({ freeFailures: 2, now: clock().now });
    throttle.failed("alice", "c");
    throttle.failed("alice", "c");
    assert.equal(throttle.check("alice", "c").allowed, false);
    throttle.succeeded("alice", "c");
    assert.deepEqual(throttle.check("alice", "c"), { allowed: true });
  });

  test("locks a user only after userLockFailures failures from many clients, for lockoutSeconds", () => {
    const time = clock();
    const throttle = new LoginThrottle({
      freeFailures: 3,
      userLockFailures: 12,
      lockoutSeconds: 120,
      windowSeconds: 600,
      now: time.now,
    });
    for (let client = 0; client < 3; client++) {
      for (let i = 0; i < 3; i++) throttle.failed("ops", `c${client}`);
    }
    assert.deepEqual(throttle.check("ops", "fresh"), { allowed: true }, "9 failures lock nobody");
    for (let client = 3; client < 6; client++) throttle.failed("ops", `c${client}`);
    const locked = refusal(throttle.check("ops", "fresh"));
    assert.equal(locked.scope, "user");
    assert.equal(locked.retryAfterSeconds, 120);
    assert.match(locked.reason, /"ops" is locked .*tenantry user unlock/);
    assert.deepEqual(throttle.check("someone-else", "fresh"), { allowed: true });
    time.advance(121_000);
    assert.deepEqual(throttle.check("ops", "fresh"), { allowed: true }, "the lock ends");
    throttle.failed("ops", "c9");
    assert.deepEqual(throttle.check("ops", "fresh"), { allowed: true }, "and the count starts over");
  });

  test("an administrator's unlock lifts the lock and voids the failures before it", () => {
    const time = clock();
    const throttle = new LoginThrottle({ freeFailures: 1, userLockFailures: 4, now: time.now });
    for (let i = 0; i < 4; i++) throttle.failed("ops", `c${i}`);
    assert.equal(throttle.check("ops", "fresh").allowed, false);
    time.advance(1000);
    const unlockedAt = time.now();
    assert.deepEqual(throttle.check("ops", "fresh", unlockedAt), { allowed: true });
    assert.deepEqual(throttle.check("ops", "c0", unlockedAt), { allowed: true }, "the clients' delays too");
    throttle.failed("ops", "c0", unlockedAt);
    assert.deepEqual(
      throttle.check("ops", "fresh", unlockedAt),
      { allowed: true },
      "one new failure locks nobody",
    );
  });

  test("refuses a client that fails too often within the window, whichever users it tries", () => {
    const time = clock();
    const throttle = new LoginThrottle({ maxClientFailures: 4, windowSeconds: 100, now: time.now });
    for (let i = 0; i < 4; i++) throttle.failed(`user-${i}`, "10.9.9.9");
    const refused = refusal(throttle.check("someone-else", "10.9.9.9"));
    assert.equal(refused.scope, "client");
    assert.match(refused.reason, /too many failed logins from this client/);
    assert.deepEqual(throttle.check("someone-else", "10.1.1.1"), { allowed: true });
    time.advance(101_000);
    assert.deepEqual(throttle.check("someone-else", "10.9.9.9"), { allowed: true });
  });

  test("stays bounded however many names are tried", () => {
    const throttle = new LoginThrottle({ maxEntries: 100, freeFailures: 0, now: clock().now });
    for (let i = 0; i < 10_000; i++) throttle.failed(`u${i}`, `c${i}`);
    assert.deepEqual(throttle.check("u0", "c0"), { allowed: true }, "evicted, not kept forever");
  });
});
