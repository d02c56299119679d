import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Lifecycle } from "./lifecycle.js";

describe("Lifecycle", () => {
  it("stops what started, the last started first, once", async () => {
    const stopped: string[] = [];
    const lifecycle = new Lifecycle();
    for (const name of ["cache", "informers", "server"])
      lifecycle.started(name, { stop: async () => void stopped.push(name) });
    await Promise.all([lifecycle.stop(), lifecycle.stop()]);
    assert.deepEqual(stopped, ["server", "informers", "cache"]);
  });

  it("stops the others when one fails, then reports the failure", async () => {
    const stopped: string[] = [];
    const lifecycle = new Lifecycle();
    lifecycle.started("first", { stop: () => void stopped.push("first") });
    lifecycle.started("broken", {
      stop: () => {
        throw new Error("stuck");
      },
    });
    lifecycle.started("last", { stop: () => void stopped.push("last") });
    await assert.rejects(lifecycle.stop(), /stuck/);
    assert.deepEqual(stopped, ["last", "first"]);
  });
});
