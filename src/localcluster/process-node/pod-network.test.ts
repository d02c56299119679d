import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  ADDRESSES_PER_NODE,
  addressAt,
  claimPodCidr,
  PodAddresses,
  podCidrOf,
  releasePodCidr,
  secondOctetOf,
} from "./pod-network.js";

describe("pod networks of process nodes", () => {
  test("addresses skip .0, .1 and .255 of every /24", () => {
    assert.equal(addressAt("127.81.0.0/16", 0), "127.81.0.2");
    assert.equal(addressAt("127.81.0.0/16", 252), "127.81.0.254");
    assert.equal(addressAt("127.81.0.0/16", 253), "127.81.1.2");
    assert.equal(addressAt("127.81.0.0/16", ADDRESSES_PER_NODE - 1), "127.81.255.254");
    assert.throws(() => addressAt("127.81.0.0/16", ADDRESSES_PER_NODE), /no address number/);
    assert.throws(() => secondOctetOf("10.0.0.0/16"), /not a loopback \/16/);
    assert.equal(podCidrOf(90), "127.90.0.0/16");
  });

  test("allocation goes round: a released address comes back last, a reserved one never", () => {
    const addresses = new PodAddresses("127.81.0.0/16");
    addresses.reserve("127.81.0.3");
    assert.equal(addresses.allocate(), "127.81.0.2");
    assert.equal(addresses.allocate(), "127.81.0.4");
    addresses.release("127.81.0.2");
    assert.equal(addresses.allocate(), "127.81.0.5");
    const resumed = new PodAddresses("127.81.0.0/16", addresses.cursor());
    assert.equal(resumed.allocate(), "127.81.0.6");
  });

  describe("claims", () => {
    let root: string;
    let previousCache: string | undefined;
    const running = new Set<string>();
    const isRunning = async (dir: string) => running.has(dir);

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

    test("clusters get networks of their own and keep them across starts", async () => {
      const [a, b] = [join(root, "a"), join(root, "b")];
      await Promise.all([mkdir(a), mkdir(b)]);
      const [first, second] = await Promise.all([claimPodCidr(a, isRunning), claimPodCidr(b, isRunning)]);
      assert.notEqual(first, second);
      assert.deepEqual([first, second].sort(), ["127.81.0.0/16", "127.82.0.0/16"]);
      assert.equal(await claimPodCidr(a, isRunning), first);
    });

    test("a network whose cluster folder is gone, or whose old claim's cluster is stopped, is taken over", async () => {
      const gone = join(root, "gone");
      await mkdir(gone);
      const taken = await claimPodCidr(gone, isRunning);
      await rm(gone, { recursive: true });
      const c = join(root, "c");
      await mkdir(c);
      assert.equal(await claimPodCidr(c, isRunning), taken);

      // An old claim (not written in the last minutes) of a stopped cluster is free.
      const stopped = join(root, "stopped");
      await mkdir(stopped);
      const stoppedCidr = await claimPodCidr(stopped, isRunning);
      const claimFile = join(
        root,
        "cache",
        "process-node-networks",
        `127.${secondOctetOf(stoppedCidr)}.json`,
      );
      await writeFile(claimFile, JSON.stringify({ clusterDir: stopped, claimedAt: "2020-01-01T00:00:00Z" }));
      running.add(stopped);
      const d = join(root, "d");
      await mkdir(d);
      assert.notEqual(await claimPodCidr(d, isRunning), stoppedCidr, "a running cluster keeps its network");
      running.delete(stopped);
      const e = join(root, "e");
      await mkdir(e);
      assert.equal(await claimPodCidr(e, isRunning), stoppedCidr);
    });

    test("a reset gives the network back", async () => {
      const f = join(root, "f");
      await mkdir(f);
      const cidr = await claimPodCidr(f, isRunning);
      await releasePodCidr(f);
      await rm(f, { recursive: true });
      const g = join(root, "g");
      await mkdir(g);
      assert.equal(await claimPodCidr(g, isRunning), cidr);
    });
  });
});
