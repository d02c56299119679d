import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { LoginThrottle } from "./login-throttle.js";

function clock() {
  let now = 1_000_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe("login throttle", () => {
  test("locks a user out after maxFailures wrong passwords in a row, then lets them try again", () => {
    const time = clock();
    const throttle = new LoginThrottle({ maxFailures: 3, lockoutSeconds: 60, now: time.now });
    for (let i = 0; i < 3; i++) {
      assert.deepEqual(throttle.check("alice", "10.0.0.1"), { allowed: true });
      throttle.failed("alice", "10.0.0.1");
    }
    const locked = throttle.check("alice", "10.0.0.2");
    assert.equal(locked.allowed, false);
    assert.equal(locked.allowed ? 0 : locked.retryAfterSeconds, 60);
    assert.match(locked.allowed ? "" : locked.reason, /too many wrong passwords for "alice"/);
    assert.deepEqual(throttle.check("bob", "10.0.0.3"), { allowed: true }, "other users are not affected");
    time.advance(61_000);
    assert.deepEqual(throttle.check("alice", "10.0.0.1"), { allowed: true });
    throttle.failed("alice", "10.0.0.1");
    assert.deepEqual(
      throttle.check("alice", "10.0.0.1"),
      { allowed: true },
      "a new series after the lockout",
    );
  });

  test("a success clears the user's count", () => {
    const throttle = new LoginThrottle({ maxFailures: 2, now: clock().now });
    throttle.failed("alice", "c");
    throttle.succeeded("alice");
    throttle.failed("alice", "c");
    assert.deepEqual(throttle.check("alice", "c"), { allowed: true });
  });

  test("refuses a client that fails too often within the window, whichever users it tries", () => {
    const time = clock();
    const throttle = new LoginThrottle({ maxClientFailures: 4, windowSeconds: 100, now: time.now });
    for (let i = 0; i < 4; i++) throttle.failed(`user-${i}`, "10.9.9.9");
    const refused = throttle.check("someone-else", "10.9.9.9");
    assert.equal(refused.allowed, false);
    assert.match(refused.allowed ? "" : refused.reason, /too many failed logins from this client/);
    assert.deepEqual(throttle.check("someone-else", "10.1.1.1"), { allowed: true });
    time.advance(101_000);
    assert.deepEqual(throttle.check("someone-else", "10.9.9.9"), { allowed: true });
  });

  test("stays bounded however many names are tried", () => {
    const throttle = new LoginThrottle({ maxEntries: 100, now: clock().now });
    for (let i = 0; i < 10_000; i++) throttle.failed(`u${i}`, `c${i}`);
    assert.deepEqual(throttle.check("u0", "c0"), { allowed: true }, "evicted, not kept forever");
  });
});
