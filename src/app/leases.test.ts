import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Elector } from "../kube/index.js";
import { controllersLease, ElectorAfter } from "./leases.js";

/** Records whether it was started and stopped. */
class RecordedElector implements Elector {
  started = false;
  stopped = false;
  start(): void {
    this.started = true;
  }
  async stop(): Promise<void> {
    this.stopped = true;
  }
  isLeader(): boolean {
    return this.started && !this.stopped;
  }
}

describe("capability Leases", () => {
  it("are named after their capability", () => {
    assert.equal(controllersLease("tenants"), "tenantry-tenants");
  });

  it("compete only once the previous version's leader is gone", async () => {
    let gone!: () => void;
    const inner = new RecordedElector();
    const elector = new ElectorAfter(new Promise<void>((resolve) => (gone = resolve)), inner);
    elector.start();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(inner.started, false, "waits while the old leader may still run every controller");
    gone();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(inner.started, true);
    assert.equal(elector.isLeader(), true);
    await elector.stop();
    assert.equal(inner.stopped, true);
  });

  it("stopped while waiting, never compete (and the stop does not wait for the old leader)", async () => {
    const inner = new RecordedElector();
    const elector = new ElectorAfter(new Promise<void>(() => {}), inner);
    elector.start();
    await elector.stop();
    assert.equal(inner.started, false);
  });
});
