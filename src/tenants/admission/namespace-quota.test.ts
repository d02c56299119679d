import assert from "node:assert/strict";
import { test } from "node:test";
import type { Tenant } from "../api/tenant.js";
import { NAMESPACE_RESERVATIONS_ANNOTATION, readReservations, reserveNamespace } from "./namespace-quota.js";

const now = new Date("2025-01-01T00:00:00Z");
const later = (s: number) => new Date(now.getTime() + s * 1000).toISOString();

test("a creation takes a free slot and holds it until the namespace is seen or the reservation lapses", () => {
  const outcome = reserveNamespace({
    quota: 2,
    existing: new Set(["a"]),
    reservations: [],
    namespace: "b",
    now,
    ttlMs: 60_000,
  });
  assert.deepEqual(outcome, {
    admitted: true,
    reservations: [{ namespace: "b", expiresAt: later(60) }],
    changed: true,
  });
});

test("reserved and existing namespaces count once each against the quota", () => {
  const full = reserveNamespace({
    quota: 2,
    existing: new Set(["a"]),
    reservations: [{ namespace: "b", expiresAt: later(30) }],
    namespace: "c",
    now,
    ttlMs: 60_000,
  });
  assert.deepEqual(full, { admitted: false, used: 2, quota: 2 });
  const seen = reserveNamespace({
    quota: 2,
    existing: new Set(["a", "b"]),
    reservations: [{ namespace: "b", expiresAt: later(30) }],
    namespace: "c",
    now,
    ttlMs: 60_000,
  });
  assert.deepEqual(seen, { admitted: false, used: 2, quota: 2 });
});

test("lapsed and settled reservations free their slot and are dropped", () => {
  const outcome = reserveNamespace({
    quota: 2,
    existing: new Set(["a"]),
    reservations: [
      { namespace: "gone", expiresAt: later(-1) },
      { namespace: "a", expiresAt: later(30) },
    ],
    namespace: "c",
    now,
    ttlMs: 1000,
  });
  assert.deepEqual(outcome, {
    admitted: true,
    reservations: [{ namespace: "c", expiresAt: later(1) }],
    changed: true,
  });
});

test("a name that already holds a slot needs no second one; no quota means no reservation", () => {
  assert.deepEqual(
    reserveNamespace({ quota: 1, existing: new Set(["a"]), reservations: [], namespace: "a", now, ttlMs: 1 }),
    { admitted: true, reservations: [], changed: false },
  );
  assert.deepEqual(
    reserveNamespace({
      quota: undefined,
      existing: new Set(),
      reservations: [],
      namespace: "a",
      now,
      ttlMs: 1,
    }),
    { admitted: true, reservations: [], changed: false },
  );
  assert.deepEqual(
    reserveNamespace({ quota: 0, existing: new Set(), reservations: [], namespace: "a", now, ttlMs: 1 }),
    { admitted: false, used: 0, quota: 0 },
  );
});

test("reservations are read from the Tenant's annotation; anything unreadable counts as none", () => {
  const tenant = (text?: string) =>
    ({
      metadata: { name: "t", annotations: text ? { [NAMESPACE_RESERVATIONS_ANNOTATION]: text } : {} },
    }) as Tenant;
  assert.deepEqual(
    readReservations(tenant(JSON.stringify([{ namespace: "a", expiresAt: later(1) }, { x: 1 }]))),
    [{ namespace: "a", expiresAt: later(1) }],
  );
  assert.deepEqual(readReservations(tenant("{not json")), []);
  assert.deepEqual(readReservations(tenant()), []);
});

test("a namespace being deleted frees its slot, and its old reservation does not take it back", () => {
  const now = new Date("2026-01-01T00:00:00Z");
  const outcome = reserveNamespace({
    quota: 2,
    existing: new Set(["t-a"]),
    seen: new Set(["t-a", "t-leaving"]),
    reservations: [{ namespace: "t-leaving", expiresAt: "2026-01-01T00:00:30Z" }],
    namespace: "t-new",
    now,
    ttlMs: 60_000,
  });
  assert.ok(outcome.admitted);
});
