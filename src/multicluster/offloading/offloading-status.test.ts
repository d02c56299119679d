import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CurrentMapping, NamespaceMap, NamespaceOffloading } from "../api/offloading.js";
import { offloadingStatus } from "./offloading-status.js";

const now = new Date("2026-11-22T10:00:00Z");
const offloading = (extra: Partial<NamespaceOffloading["metadata"]> = {}): NamespaceOffloading => ({
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "NamespaceOffloading",
  metadata: { name: "offloading", namespace: "shop", generation: 3, ...extra },
  spec: {},
});
const map = (peering: string, desired?: string, current?: Partial<CurrentMapping>): NamespaceMap => ({
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "NamespaceMap",
  metadata: { name: peering, namespace: "tenantry-system", labels: { "tenantry.dev/peering": peering } },
  spec: { desiredMapping: desired ? { shop: desired } : {} },
  status: {
    currentMapping: current ? { shop: { remoteNamespace: "shop", phase: "Accepted", ...current } } : {},
  },
});
const ok = { name: "shop" };

describe("NamespaceOffloading status from the NamespaceMaps (table 4.3)", () => {
  test("Ready when every selected peer holds an accepted replica; conditions per cluster", () => {
    const status = offloadingStatus(
      offloading(),
      [map("a", "shop", {}), map("b", "shop", {}), map("c")],
      ok,
      now,
    );
    assert.equal(status.offloadingPhase, "Ready");
    assert.equal(status.observedGeneration, 3);
    assert.deepEqual(Object.keys(status.remoteNamespacesConditions!), ["a", "b"]);
    assert.deepEqual(
      status.remoteNamespacesConditions!.a!.map((c) => [c.type, c.status]),
      [
        ["Ready", "True"],
        ["OffloadingRequired", "True"],
      ],
    );
    assert.equal(status.conditions![0]!.message, "namespace shop is ready in a, b");
  });

  test("InProgress, SomeFailed, AllFailed, NoClusterSelected", () => {
    assert.equal(
      offloadingStatus(offloading(), [map("a", "shop"), map("b", "shop", {})], ok, now).offloadingPhase,
      "InProgress",
    );
    const some = offloadingStatus(
      offloading(),
      [
        map("a", "shop", { phase: "CreationLoopBackOff", message: "cluster a does not answer" }),
        map("b", "shop", {}),
      ],
      ok,
      now,
    );
    assert.equal(some.offloadingPhase, "SomeFailed");
    assert.equal(some.conditions![0]!.message, "a: cluster a does not answer");
    assert.equal(some.remoteNamespacesConditions!.a![0]!.reason, "CreationLoopBackOff");
    const all = offloadingStatus(offloading(), [map("a", "shop", { phase: "CreationLoopBackOff" })], ok, now);
    assert.equal(all.offloadingPhase, "AllFailed");
    const none = offloadingStatus(offloading(), [map("a"), map("b")], ok, now);
    assert.equal(none.offloadingPhase, "NoClusterSelected");
    assert.equal(none.remoteNamespacesConditions, undefined);
  });

  test("a deselected peer shows OffloadingRequired False while its replica goes; Terminating on deletion; name errors", () => {
    const moving = offloadingStatus(
      offloading(),
      [map("a", "shop", {}), map("b", undefined, { phase: "Terminating" })],
      ok,
      now,
    );
    assert.equal(moving.offloadingPhase, "Ready");
    assert.equal(moving.remoteNamespacesConditions!.b![1]!.status, "False");
    const deleting = offloadingStatus(
      offloading({ deletionTimestamp: new Date() }),
      [map("a", undefined, { phase: "Terminating" })],
      ok,
      now,
    );
    assert.equal(deleting.offloadingPhase, "Terminating");
    assert.equal(deleting.conditions![0]!.message, "removing the replicas in a");
    const bad = offloadingStatus(offloading(), [map("a")], { error: "too long" }, now);
    assert.equal(bad.offloadingPhase, "AllFailed");
    assert.equal(bad.conditions![0]!.message, "too long");
  });

  test("transition times move only when a status changes", () => {
    const first = offloadingStatus(offloading(), [map("a", "shop", {})], ok, now);
    const later = new Date(now.getTime() + 60_000);
    const again = offloadingStatus({ ...offloading(), status: first }, [map("a", "shop", {})], ok, later);
    assert.deepEqual(again, first);
  });
});
