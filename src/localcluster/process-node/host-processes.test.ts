import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { describe, test } from "node:test";
import { identify, isAlive, processTree, stopTree } from "./host-processes.js";

describe("container processes on this machine", () => {
  test("a process tree is stopped whole, and a reused pid is never taken for the recorded one", async () => {
    // A shell with a child of its own, in a group of its own, ignoring nothing.
    const child = spawn("sh", ["-c", "sleep 60 & wait"], { detached: true, stdio: "ignore" });
    await new Promise((resolve) => child.once("spawn", resolve));
    const identity = identify(child.pid!)!;
    assert.ok(isAlive(identity));
    let tree: number[] = [];
    for (let i = 0; i < 50 && tree.length < 2; i++) {
      tree = processTree(identity);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(tree.length, 2, "the shell and its sleep");
    assert.equal(isAlive({ pid: identity.pid, startTicks: identity.startTicks + 1 }), false);
    const killed = await stopTree(identity, 2000);
    assert.equal(killed, false, "SIGTERM was enough");
    assert.ok(!isAlive(identity));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const left = tree.map(identify).filter((p) => p !== undefined && isAlive(p));
    assert.deepEqual(left, [], "no process of the tree is left");
  });

  test("a process that ignores SIGTERM is killed once the grace period has passed", async () => {
    const child = spawn("sh", ["-c", "trap '' TERM; while true; do sleep 0.1; done"], {
      detached: true,
      stdio: "ignore",
    });
    await new Promise((resolve) => child.once("spawn", resolve));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const identity = identify(child.pid!)!;
    assert.equal(await stopTree(identity, 300), true);
    assert.ok(!isAlive(identity));
  });
});
