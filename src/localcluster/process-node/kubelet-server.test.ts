import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { tailOffset } from "./kubelet-server.js";

describe("container logs", () => {
  test("tailLines finds where the last lines of a log begin", async () => {
    const dir = await mkdtemp(join(tmpdir(), "logs-"));
    try {
      const file = join(dir, "0.log");
      await writeFile(file, "one\ntwo\nthree\n");
      assert.equal(await tailOffset(file, 1), "one\ntwo\n".length);
      assert.equal(await tailOffset(file, 2), "one\n".length);
      assert.equal(await tailOffset(file, 10), 0);
      assert.equal(await tailOffset(file, 0), "one\ntwo\nthree\n".length);
      await writeFile(file, "a\nb");
      assert.equal(await tailOffset(file, 1), 2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
