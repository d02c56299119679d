import assert from "node:assert/strict";
import { test } from "node:test";
import { csrfMatches, SessionStore } from "./sessions.js";

const identity = { username: "alice", uid: "u1", groups: [], tenantAdmin: true, provider: "builtin" };
const user = { username: "alice", uid: "u1", groups: [], extra: {} };

test("a session ends at its token's expiry, at the longest session, or when deleted", () => {
  let now = 1_000_000;
  const store = new SessionStore({ now: () => now });
  const short = store.create("t1", { ...identity, expiresAt: new Date(now + 60_000) }, user, 3_600_000);
  const long = store.create("t2", identity, user, 120_000);
  assert.equal(store.get(short.id)?.token, "t1");
  assert.notEqual(short.id, long.id);
  assert.notEqual(short.csrf, long.csrf);
  now += 60_000;
  assert.equal(store.get(short.id), undefined, "past the token's expiry");
  assert.equal(store.get(long.id)?.token, "t2");
  now += 60_000;
  assert.equal(store.get(long.id), undefined, "past the longest session");
  const third = store.create("t3", identity, user, 120_000);
  store.delete(third.id);
  assert.equal(store.get(third.id), undefined);
  assert.equal(store.get(undefined), undefined);
  assert.equal(store.get("made-up"), undefined);
});

test("the CSRF header must be the session's token exactly", () => {
  const session = new SessionStore().create("t", identity, user, 60_000);
  assert.equal(csrfMatches(session, session.csrf), true);
  assert.equal(csrfMatches(session, undefined), false);
  assert.equal(csrfMatches(session, ""), false);
  assert.equal(csrfMatches(session, `${session.csrf}x`), false);
  assert.equal(csrfMatches(session, [session.csrf, session.csrf]), false);
  const other = new SessionStore().create("t", identity, user, 60_000);
  assert.equal(csrfMatches(session, other.csrf), false);
});
