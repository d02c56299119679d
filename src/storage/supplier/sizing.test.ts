import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { BackingStore } from "../api/volume-pool.js";
import {
  bytesOf,
  chooseStore,
  demandBySize,
  fitSize,
  noStoreMessage,
  onDemandSize,
  type StoreUse,
  sizeText,
  warmPolicy,
  warmTarget,
} from "./sizing.js";

const GI = 1024n ** 3n;
const MI = 1024n ** 2n;

function use(name: string, capacityGi: bigint, allocatedGi: bigint, extra: Partial<StoreUse> = {}): StoreUse {
  const store: BackingStore = {
    name,
    path: `/stores/${name}`,
    node: `node-${name}`,
    capacity: `${capacityGi}Gi`,
  };
  return { store, capacity: capacityGi * GI, allocated: allocatedGi * GI, volumes: 0, ...extra };
}

describe("pool sizing", () => {
  test("quantities become bytes and back", () => {
    assert.equal(bytesOf("1Gi"), GI);
    assert.equal(bytesOf("1G"), 1_000_000_000n);
    assert.equal(bytesOf("1500m"), 2n, "a fraction of a byte is a byte");
    assert.equal(sizeText(GI), "1Gi");
    assert.equal(sizeText(1536n * MI), "1536Mi");
    assert.equal(sizeText(1000n), "1000");
  });

  test("a claim gets the smallest size that holds it", () => {
    const sizes = [5n * GI, GI, 10n * GI];
    assert.equal(fitSize(GI, sizes), GI);
    assert.equal(fitSize(GI + 1n, sizes), 5n * GI);
    assert.equal(fitSize(100n * MI, sizes), GI);
    assert.equal(fitSize(11n * GI, sizes), undefined);
  });

  test("on-demand sizes are whole MiB and at least 16 MiB", () => {
    assert.equal(onDemandSize(1n), 16n * MI);
    assert.equal(onDemandSize(20n * MI + 1n), 21n * MI);
    assert.equal(onDemandSize(11n * GI), 11n * GI);
  });

  test("forecasts per request size add up per pool size; larger requests are not pre-allocated", () => {
    const demand = demandBySize(
      new Map([
        [100n * MI, 1.5],
        [GI, 2],
        [3n * GI, 0.25],
        [50n * GI, 9],
      ]),
      [GI, 5n * GI],
    );
    assert.deepEqual(
      [...demand],
      [
        [GI, 3.5],
        [5n * GI, 0.25],
      ],
    );
  });

  test("the warm target covers the forecast windows, between min and max", () => {
    const policy = warmPolicy({ forecastWindows: 2, min: 1, max: 10 });
    assert.equal(warmTarget(0, policy), 1, "min when nothing is forecast");
    assert.equal(warmTarget(1.2, policy), 3);
    assert.equal(warmTarget(1.0000000001, policy), 2, "floating-point dust buys no volume");
    assert.equal(warmTarget(40, policy), 10, "max caps a burst");
    assert.deepEqual(warmPolicy(undefined), { min: 1, max: 100, forecastWindows: 2 });
    assert.equal(warmTarget(3, warmPolicy({ min: 0, max: 0 })), 0, "max 0 turns pre-allocation off");
  });
});

describe("bin filling", () => {
  test("stores are filled in turn: the first with room takes the volume", () => {
    const uses = [use("a", 10n, 9n), use("b", 10n, 0n), use("c", 10n, 0n)];
    assert.equal(chooseStore(uses, GI)?.store.name, "a", "a still has exactly 1Gi");
    assert.equal(chooseStore(uses, 2n * GI)?.store.name, "b", "a is exhausted for 2Gi, b is next");
  });

  test("a store whose disk is full is skipped whatever its capacity says", () => {
    const uses = [use("a", 10n, 0n, { fullReason: "disk full (ENOSPC)" }), use("b", 10n, 0n)];
    assert.equal(chooseStore(uses, GI)?.store.name, "b");
  });

  test("eligibility (the claim's node or zone) narrows the stores", () => {
    const uses = [use("a", 10n, 0n), use("b", 10n, 0n)];
    assert.equal(chooseStore(uses, GI, (s) => s.node === "node-b")?.store.name, "b");
  });

  test("none left: undefined, and a message naming every store and why", () => {
    const uses = [use("a", 1n, 1n), use("b", 10n, 0n, { fullReason: "disk full (ENOSPC)" })];
    assert.equal(chooseStore(uses, GI), undefined);
    assert.equal(
      noStoreMessage(uses, GI),
      "no backing store has room for 1Gi: a: 1Gi of 1Gi allocated, no room for 1Gi; b: disk full (ENOSPC)",
    );
    assert.equal(
      noStoreMessage(uses, GI, (s) => s.node === "elsewhere", 'node "elsewhere"'),
      'no backing store of the pool is on node "elsewhere"',
    );
  });
});
