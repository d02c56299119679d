import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { claimNetwork, releaseNetwork } from "./claims.js";

describe("pod network claims", () => {
  let root: string;
  let previousCache: string | undefined;
  const running = new Set<string>();
  const isClusterRunning = async (dir: string) => running.has(dir);
  const claim = (dir: string, extra: Partial<Parameters<typeof claimNetwork>[1]> = {}) =>
    claimNetwork(dir, { isClusterRunning, ...extra });

  before(async () => {
    root = await mkdtemp(join(tmpdir(), "pod-networks-"));
    previousCache = process.env.TENANTRY_CACHE_DIR;
    process.env.TENANTRY_CACHE_DIR = join(root, "cache");
  });
  after(async () => {
    if (previousCache === undefined) delete process.env.TENANTRY_CACHE_DIR;
    else process.env.TENANTRY_CACHE_DIR = previousCache;
    await rm(root, { recursive: true, force: true });
  });

  test("clusters get networks of their own and keep them across starts; a podCIDR may be given", async () => {
    const [a, b] = [join(root, "a"), join(root, "b")];
    await Promise.all([mkdir(a), mkdir(b)]);
    const [first, second] = await Promise.all([claim(a), claim(b, { podCidr: "10.244.0.0/24" })]);
    assert.notEqual(first.index, second.index);
    assert.deepEqual([first.index, second.index].sort(), [1, 2]);
    assert.equal(second.podCidr, "10.244.0.0/24");
    assert.equal((await claim(a)).index, first.index);
  });

  test("a network whose routes the machine has is skipped", async () => {
    const c = join(root, "c");
    await mkdir(c);
    const plan = await claim(c, { taken: (p) => p.index <= 4 });
    assert.equal(plan.index, 5);
    await releaseNetwork(c);
  });

  test("a network whose cluster folder is gone, or whose old claim's cluster is stopped, is taken over", async () => {
    const gone = join(root, "gone");
    await mkdir(gone);
    const taken = await claim(gone);
    await rm(gone, { recursive: true });
    const removed: number[] = [];
    const d = join(root, "d");
    await mkdir(d);
    const reused = await claim(d, { removeAbandoned: async (index) => void removed.push(index) });
    assert.equal(reused.index, taken.index);
    assert.deepEqual(removed, [taken.index], "what is left of the abandoned network is removed first");

    const stopped = join(root, "stopped");
    await mkdir(stopped);
    const stoppedPlan = await claim(stopped);
    const claimFile = join(root, "cache", "process-node-networks", `net-${stoppedPlan.index}.json`);
    await writeFile(claimFile, JSON.stringify({ clusterDir: stopped, claimedAt: "2020-01-01T00:00:00Z" }));
    running.add(stopped);
    const e = join(root, "e");
    await mkdir(e);
    assert.notEqual((await claim(e)).index, stoppedPlan.index, "a running cluster keeps its network");
    running.delete(stopped);
    const f = join(root, "f");
    await mkdir(f);
    assert.equal((await claim(f)).index, stoppedPlan.index);
  });

  test("a reset gives the network back", async () => {
    const g = join(root, "g");
    await mkdir(g);
    const plan = await claim(g);
    await releaseNetwork(g);
    await rm(g, { recursive: true });
    const h = join(root, "h");
    await mkdir(h);
    assert.equal((await claim(h)).index, plan.index);
  });
});
