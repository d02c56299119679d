import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Lifecycle } from "./lifecycle.js";
import {
  type Capability,
  type Elector,
  type LeadershipCallbacks,
  type ManagedContext,
  Manager,
  Provided,
  Slot,
  type Started,
} from "./manager.js";

const context = (): ManagedContext => ({ lifecycle: new Lifecycle(), values: new Provided() });

/** A capability that records its start and stop in `events`, after an optional delay. */
function recorded(
  events: string[],
  name: string,
  dependsOn: string[] = [],
  extra: { delayMs?: number; fails?: boolean; started?: Started } = {},
): Capability<ManagedContext> {
  return {
    name,
    dependsOn,
    start: async ({ lifecycle }) => {
      await new Promise((resolve) => setTimeout(resolve, extra.delayMs ?? 0));
      if (extra.fails) throw new Error(`${name} cannot start`);
      events.push(`start ${name}`);
      lifecycle.started(name, { stop: () => void events.push(`stop ${name}`) });
      return extra.started;
    },
  };
}

/** An elector the test leads and unleads by hand. */
class FakeElector implements Elector {
  leading = false;
  competing = false;
  constructor(private readonly callbacks: LeadershipCallbacks) {}
  start(): void {
    this.competing = true;
  }
  async stop(): Promise<void> {
    if (this.leading) await this.lose();
    this.competing = false;
  }
  isLeader(): boolean {
    return this.leading;
  }
  async win(): Promise<void> {
    this.leading = true;
    await this.callbacks.onStartedLeading();
  }
  async lose(): Promise<void> {
    this.leading = false;
    await this.callbacks.onStoppedLeading();
  }
}

describe("Manager", () => {
  it("starts dependencies first, independent ones together, and stops in reverse", async () => {
    const events: string[] = [];
    const ctx = context();
    const manager = new Manager([
      recorded(events, "gateway", ["identity"]),
      recorded(events, "identity", ["tenants"], { delayMs: 5 }),
      recorded(events, "tenants", [], { delayMs: 10 }),
      recorded(events, "dashboard"),
    ]);
    await manager.start(ctx);
    assert.deepEqual(events, ["start dashboard", "start tenants", "start identity", "start gateway"]);
    await ctx.lifecycle.stop();
    assert.deepEqual(events.slice(4), ["stop gateway", "stop identity", "stop tenants", "stop dashboard"]);
  });

  it("passes values from a capability to those depending on it", async () => {
    const authenticator = new Slot<{ who: string }>("authenticator");
    let seen = "";
    const manager = new Manager<ManagedContext>([
      {
        name: "gateway",
        dependsOn: ["identity"],
        start: async ({ values }) => {
          seen = values.get(authenticator).who;
          return undefined;
        },
      },
      {
        name: "identity",
        start: async ({ values }) => {
          values.set(authenticator, { who: "alice" });
          return undefined;
        },
      },
    ]);
    await manager.start(context());
    assert.equal(seen, "alice");
    assert.throws(() => new Provided().get(authenticator), /nothing provided authenticator/);
  });

  it("stops what started when one capability fails, after the others finished starting", async () => {
    const events: string[] = [];
    const ctx = context();
    const manager = new Manager([
      recorded(events, "tenants"),
      recorded(events, "identity", ["tenants"], { fails: true }),
      recorded(events, "gateway", ["identity"]),
      recorded(events, "storage", [], { delayMs: 10 }),
    ]);
    await assert.rejects(manager.start(ctx), /identity cannot start/);
    assert.deepEqual(events, ["start tenants", "start storage", "stop storage", "stop tenants"]);
  });

  it("starts nothing more once a capability failed", async () => {
    const events: string[] = [];
    const manager = new Manager([
      recorded(events, "identity", [], { fails: true }),
      recorded(events, "tenants", [], { delayMs: 10 }),
      recorded(events, "nodes", ["tenants"]),
    ]);
    await assert.rejects(manager.start(context()), /identity cannot start/);
    assert.deepEqual(events, ["start tenants", "stop tenants"]);
  });

  it("drains every started server", async () => {
    const drained: string[] = [];
    const server = (name: string) => ({ drain: () => void drained.push(name) });
    const manager = new Manager([
      recorded([], "gateway", [], { started: { servers: [server("gateway")] } }),
      recorded([], "tenants"),
      recorded([], "identity", [], { started: { servers: [server("access"), server("oidc")] } }),
    ]);
    await manager.start(context());
    manager.drain();
    assert.deepEqual(drained, ["gateway", "access", "oidc"]);
  });

  it("runs leader-only controllers while leading, built afresh on each lead", async () => {
    const events: string[] = [];
    let built = 0;
    const controller = (name: string) => ({
      start: () => void events.push(`start ${name} #${built}`),
      stop: () => void events.push(`stop ${name} #${built}`),
    });
    const ctx = context();
    const manager = new Manager([
      recorded([], "tenants", [], {
        started: { leaderControllers: () => [controller("tenant"), controller("quota")] },
      }),
      recorded([], "nodes", [], {
        started: {
          leaderControllers: () => {
            built++;
            return [controller("node")];
          },
        },
      }),
    ]);
    await manager.start(ctx);
    let elector: FakeElector | undefined;
    const leadership = manager.lead(ctx, (callbacks) => {
      elector = new FakeElector(callbacks);
      return elector;
    });
    assert.ok(elector?.competing);
    assert.equal(leadership.running(), false);
    await elector.win();
    assert.equal(leadership.running(), true);
    assert.deepEqual(events, ["start tenant #1", "start quota #1", "start node #1"]);
    await elector.lose();
    assert.equal(leadership.running(), false);
    assert.deepEqual(events.slice(3).sort(), ["stop node #1", "stop quota #1", "stop tenant #1"]);
    await elector.win();
    assert.deepEqual(events.slice(6), ["start tenant #2", "start quota #2", "start node #2"]);
    await ctx.lifecycle.stop();
    assert.equal(elector.competing, false);
    assert.equal(events.length, 12);
  });

  it("does not compete for the Lease when told not to, but still stops the elector", async () => {
    const ctx = context();
    const manager = new Manager<ManagedContext>([]);
    let elector: FakeElector | undefined;
    manager.lead(
      ctx,
      (callbacks) => {
        elector = new FakeElector(callbacks);
        return elector;
      },
      false,
    );
    assert.equal(elector?.competing, false);
    await ctx.lifecycle.stop();
  });

  it("refuses an unknown dependency, a cycle and a name listed twice", () => {
    assert.throws(
      () => new Manager([recorded([], "gateway", ["identty"])]),
      /capability "gateway" depends on unknown "identty"/,
    );
    assert.throws(
      () =>
        new Manager([
          recorded([], "a", ["b"]),
          recorded([], "b", ["c"]),
          recorded([], "c", ["a"]),
          recorded([], "d", ["a"]),
        ]),
      /cycle: a → b → c → a/,
    );
    assert.throws(() => new Manager([recorded([], "a"), recorded([], "a")]), /"a" listed twice/);
  });
});
