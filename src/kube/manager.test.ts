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
  withDependencies,
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

  it("runs each capability's leader-only controllers while it holds that capability's Lease, built afresh on each lead", async () => {
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
      recorded([], "webhooks"),
    ]);
    await manager.start(ctx);
    const electors = new Map<string, FakeElector>();
    const leadership = manager.lead(ctx, (name, callbacks) => {
      const elector = new FakeElector(callbacks);
      electors.set(name, elector);
      return elector;
    });
    assert.deepEqual(
      [...electors.keys()],
      ["tenants", "nodes"],
      "no Lease for a capability with nothing to lead",
    );
    assert.deepEqual(leadership.electing(), ["tenants", "nodes"]);
    const [tenants, nodes] = [electors.get("tenants")!, electors.get("nodes")!];
    assert.ok(tenants.competing && nodes.competing);
    assert.equal(leadership.running(), false);
    await nodes.win();
    assert.deepEqual(events, ["start node #1"], "only the won capability's controllers");
    assert.deepEqual(leadership.leading(), ["nodes"]);
    assert.equal(leadership.isLeader(), false, "not every Lease held");
    await tenants.win();
    assert.equal(leadership.running(), true);
    assert.equal(leadership.isLeader(), true);
    assert.deepEqual(events.slice(1), ["start tenant #1", "start quota #1"]);
    await tenants.lose();
    assert.deepEqual(events.slice(3).sort(), ["stop quota #1", "stop tenant #1"]);
    assert.deepEqual(
      leadership.leading(),
      ["nodes"],
      "losing one Lease leaves the others' controllers running",
    );
    await nodes.lose();
    await nodes.win();
    assert.deepEqual(events.slice(5), ["stop node #1", "start node #2"]);
    await ctx.lifecycle.stop();
    assert.ok(!tenants.competing && !nodes.competing, "the lifecycle stops every elector");
    assert.equal(events.at(-1), "stop node #2");
  });

  it("competes only for the capabilities it is told to lead; none at all holds no Lease", async () => {
    const ctx = context();
    const leads = { leaderControllers: () => [] };
    const manager = new Manager<ManagedContext>([
      recorded([], "tenants", [], { started: leads }),
      recorded([], "nodes", ["tenants"], { started: leads }),
    ]);
    await manager.start(ctx);
    const names: string[] = [];
    const elect = (name: string, callbacks: LeadershipCallbacks) => {
      names.push(name);
      return new FakeElector(callbacks);
    };
    manager.lead(ctx, elect, ["nodes"]);
    assert.deepEqual(names, ["nodes"]);
    const none = manager.lead(ctx, elect, []);
    assert.deepEqual(names, ["nodes"]);
    assert.equal(none.isLeader(), false);
    assert.equal(none.running(), false);
    assert.throws(() => manager.lead(ctx, elect, ["storage"]), /cannot lead "storage": not started/);
    await ctx.lifecycle.stop();
  });

  it("selects the capabilities named with their dependencies, in the order listed", () => {
    const all = [
      recorded([], "tenants"),
      recorded([], "identity", ["tenants", "access"]),
      recorded([], "access", ["tenants"]),
      recorded([], "gateway", ["identity"]),
      recorded([], "monitor"),
    ];
    const names = (list: Capability<ManagedContext>[]) => list.map((c) => c.name);
    assert.deepEqual(names(withDependencies(all, ["gateway"])), ["tenants", "identity", "access", "gateway"]);
    assert.deepEqual(names(withDependencies(all, ["monitor", "tenants"])), ["tenants", "monitor"]);
    assert.throws(
      () => withDependencies(all, ["gateway", "gatway"]),
      /unknown capability "gatway"; known: tenants, identity, access, gateway, monitor/,
    );
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
