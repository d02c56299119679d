import assert from "node:assert/strict";
import { test } from "node:test";
import { GroupCommitter } from "./batcher.js";

test("requests arriving during a commit are decided together in the next one, in order", async () => {
  const batches: number[][] = [];
  let budget = 3;
  const committer = new GroupCommitter<number, boolean>(async (_key, requests) => {
    batches.push(requests);
    await new Promise((r) => setTimeout(r, 10));
    return requests.map(() => budget-- > 0);
  });
  const results = await Promise.all([1, 2, 3, 4, 5].map((n) => committer.submit("q", n)));
  assert.deepEqual(results, [true, true, true, false, false]);
  assert.deepEqual(batches, [[1], [2, 3, 4, 5]]);
});

test("a failed commit rejects its whole batch and later requests still run", async () => {
  let calls = 0;
  const committer = new GroupCommitter<string, string>(async (_key, requests) => {
    calls++;
    if (calls === 1) throw new Error("conflict storm");
    return requests.map((r) => r.toUpperCase());
  });
  await assert.rejects(committer.submit("k", "a"), /conflict storm/);
  assert.equal(await committer.submit("k", "b"), "B");
});
