import assert from "node:assert/strict";
import { test } from "node:test";
import { admit, describeExceeded, type QuotaState, type Reservation, settle } from "./reservations.js";

const now = new Date("2026-01-01T00:00:00Z");
const request = (id: string, amounts: Record<string, string>) => ({
  id,
  namespace: "t-a",
  resource: "pods",
  name: id,
  amounts,
});

test("admits within hard and records a reservation that counts against the next request", () => {
  let state: QuotaState = { hard: { pods: "2" }, used: { pods: "1" }, reservations: [] };
  const first = admit(state, request("r1", { pods: "1", cpu: "1" }), now, 30_000);
  assert.ok(first.admitted);
  assert.deepEqual(
    first.reservations.map((r) => [r.id, r.amounts]),
    [["r1", { pods: "1" }]],
    "untracked cpu is not reserved",
  );
  state = { ...state, reservations: first.reservations };
  const second = admit(state, request("r2", { pods: "1" }), now, 30_000);
  assert.ok(!second.admitted);
  assert.deepEqual(second.exceeded, [
    { resource: "pods", requested: "1", used: "1", reserved: "1", hard: "2" },
  ]);
  assert.equal(
    describeExceeded("q", "acme", second.exceeded),
    'exceeded quota of tenant "acme" (TenantResourceQuota q): pods: requested 1, used 1, reserved 1, limited to 2',
  );
});

test("expired reservations still count until the controller settles them, and a retried request does not count twice", () => {
  const stale: Reservation = { ...request("old", { pods: "1" }), expiresAt: "2025-12-31T23:59:59Z" };
  const mine: Reservation = { ...request("r1", { pods: "1" }), expiresAt: "2026-01-01T00:00:10Z" };
  // used is stale while no controller runs: the expired reservation may be a pod it misses.
  const refused = admit(
    { hard: { pods: "1" }, used: {}, reservations: [stale] },
    request("r2", { pods: "1" }),
    now,
    30_000,
  );
  assert.ok(!refused.admitted);
  assert.equal(refused.exceeded[0]?.reserved, "1");
  const again = admit(
    { hard: { pods: "2" }, used: {}, reservations: [stale, mine] },
    request("r1", { pods: "1" }),
    now,
    30_000,
  );
  assert.ok(again.admitted);
  assert.deepEqual(
    again.reservations.map((r) => r.id),
    ["old", "r1"],
  );
});

test("memory is compared exactly across units", () => {
  const state: QuotaState = {
    hard: { "requests.memory": "1Gi" },
    used: { "requests.memory": "512Mi" },
    reservations: [],
  };
  assert.ok(admit(state, request("a", { "requests.memory": "512Mi" }), now, 1000).admitted);
  const over = admit(state, request("b", { "requests.memory": "513Mi" }), now, 1000);
  assert.ok(!over.admitted && over.exceeded[0]?.hard === "1Gi");
});

test("settling drops observed and expired reservations only", () => {
  const live = (id: string): Reservation => ({
    ...request(id, { pods: "1" }),
    expiresAt: "2026-01-01T00:01:00Z",
  });
  const expired: Reservation = { ...request("x", { pods: "1" }), expiresAt: "2025-01-01T00:00:00Z" };
  const kept = settle([live("seen"), live("pending"), expired], (r) => r.name === "seen", now);
  assert.deepEqual(
    kept.map((r) => r.id),
    ["pending"],
  );
});
