import assert from "node:assert/strict";
import { test } from "node:test";
import type { PooledVolume } from "../api/pooled-volume.js";
import { VolumeLedger } from "./ledger.js";
import { bytesOf, chooseStore } from "./sizing.js";
import { storeUses } from "./stores.js";

const pool = {
  metadata: { name: "p" },
  spec: {
    storageClass: { name: "p" },
    sizes: ["64Mi"],
    backingStores: [{ name: "a", path: "/s/a", node: "n", capacity: "256Mi" }],
  },
} as never;

const volume = (name: string | undefined): PooledVolume =>
  ({
    metadata: name ? { name } : { generateName: "p-" },
    spec: {
      pool: "p",
      provisioner: "x",
      storageClassName: "p",
      store: { name: "a", path: "/s/a", node: "n" },
      size: "64Mi",
    },
  }) as PooledVolume;

test("a burst of allocations against a lagging cache never puts more on a store than its capacity", async () => {
  const cache = new Map<string, PooledVolume>();
  const ledger = new VolumeLedger({ get: (n) => cache.get(n), ofPool: () => [...cache.values()] });
  let made = 0;
  // Ten workers decide at once; the cache shows nothing until all have asked.
  const attempts = Array.from({ length: 10 }, async (_, i) => {
    const chosen = chooseStore(storeUses(pool, ledger.volumesOf("p")), bytesOf("64Mi"));
    if (!chosen) return "no room";
    await ledger.create(volume(`claim-${i}`), async (body) => {
      await new Promise((r) => setTimeout(r, 5));
      made++;
      return body;
    });
    return "made";
  });
  const outcomes = await Promise.all(attempts);
  assert.equal(made, 4, "256Mi holds four 64Mi volumes");
  assert.equal(outcomes.filter((o) => o === "no room").length, 6);
});

test("a volume counts until the cache shows it (a generated name once created), or not at all when creation failed", async () => {
  const cache = new Map<string, PooledVolume>();
  let now = 0;
  const ledger = new VolumeLedger({ get: (n) => cache.get(n), ofPool: () => [...cache.values()] }, () => now);
  const created = await ledger.create(volume(undefined), async (body) => ({
    ...body,
    metadata: { name: "p-abcde" },
  }));
  assert.equal(ledger.volumesOf("p").length, 1);
  assert.equal(ledger.volumesOf("other").length, 0);
  cache.set("p-abcde", created);
  assert.equal(ledger.volumesOf("p").length, 1, "counted once, from the cache");
  assert.equal(ledger.size, 0);

  await assert.rejects(
    ledger.create(volume("claim-x"), async () => {
      throw new Error("refused");
    }),
    /refused/,
  );
  assert.equal(ledger.volumesOf("p").length, 1);

  await ledger.create(volume("claim-lost"), async (body) => body);
  assert.equal(ledger.volumesOf("p").length, 2);
  now += 61_000;
  assert.equal(
    ledger.volumesOf("p").length,
    1,
    "a volume the cache never showed stops counting after a minute",
  );
});
