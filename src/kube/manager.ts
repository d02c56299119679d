import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { InformerCache } from "./cache.js";
import type { ClusterClient } from "./clients.js";
import type { Lifecycle } from "./lifecycle.js";

/** Something started and stopped as a whole: a controller, an informer set, a server. */
export interface Runnable {
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

/** A server that, asked to drain, keeps answering but has its clients reconnect elsewhere. */
export interface Drainable {
  drain(): void;
}

/**
 * A value one capability provides to those depending on it (an authenticator, a registry): the
 * providing capability exports the slot through its index.ts, so nobody reaches its internals.
 */
export class Slot<T> {
  /** Carries T for the type checker only. */
  declare readonly value?: T;
  constructor(readonly name: string) {}
}

/** The values capabilities provided, read by slot. */
export class Provided {
  private readonly values = new Map<Slot<unknown>, unknown>();

  /** Provides a value (once per slot) and hands it back. */
  set<T>(slot: Slot<T>, value: T): T {
    if (this.values.has(slot)) throw new Error(`${slot.name} was provided twice`);
    this.values.set(slot, value);
    return value;
  }

  /** A value a dependency provided; throws when none did (a missing `dependsOn`, most likely). */
  get<T>(slot: Slot<T>): T {
    if (!this.values.has(slot))
      throw new Error(`nothing provided ${slot.name} (is its capability a dependency?)`);
    return this.values.get(slot) as T;
  }

  /** A value of a capability that may be off, or undefined. */
  find<T>(slot: Slot<T>): T | undefined {
    return this.values.get(slot) as T | undefined;
  }
}

/** What the manager gives every capability: where to record what it starts and what others provided. */
export interface ManagedContext {
  /** Every part a capability starts goes here, so that stopping is the reverse of starting. */
  lifecycle: Lifecycle;
  values: Provided;
}

/** The context tenantry's capabilities share: the cluster, the shared cache, the logger and the metrics. */
export interface SharedContext extends ManagedContext {
  client: ClusterClient;
  /** The home cluster's shared informers: capabilities that take it watch nothing twice. */
  cache: InformerCache;
  logger: Logger;
  metrics: Registry;
  /** tenantry's own namespace. */
  namespace: string;
  /** Who this cluster is to its peers (its cluster identity's id). */
  clusterId: string;
  /** Where the servers listen unless told otherwise. */
  host: string;
}

/**
 * What a capability keeps from its start for what is asked of it later (its admission checks, its
 * controllers), refusing to be read before.
 */
export class StartedState<T> {
  private value?: T;
  constructor(private readonly capability: string) {}

  set(value: T): T {
    this.value = value;
    return value;
  }

  get(): T {
    if (this.value === undefined) throw new Error(`the ${this.capability} capability has not started`);
    return this.value;
  }
}

/**
 * Waits for every start, like Promise.all, but also for the ones still going when one fails: each
 * registers itself with the lifecycle as it ends, and a failed start stops whatever did start.
 */
export async function allStarted<T extends readonly unknown[]>(
  starts: readonly [...{ [K in keyof T]: Promise<T[K]> }],
): Promise<T> {
  const results = await Promise.allSettled(starts);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** What a started capability contributes besides the values it provided. */
export interface Started {
  /** Servers drained when the process is about to stop. */
  servers?: Drainable[];
  /**
   * Controllers run only by the replica holding the Lease, in this order; built afresh each time
   * it starts leading (a stopped controller does not restart).
   */
  leaderControllers?: () => Runnable[];
}

/** One capability's door: what it needs started first, and how it starts against the shared context. */
export interface Capability<C extends ManagedContext = SharedContext> {
  readonly name: string;
  /** Capabilities whose values or servers this one uses; they start (and are ready) first. */
  readonly dependsOn?: readonly string[];
  start(context: C): Promise<Started | undefined>;
}

/** How the manager competes for the Lease: an elector calling back when leading starts and stops. */
export interface Elector {
  start(): void;
  stop(): Promise<void>;
  isLeader(): boolean;
}
export interface LeadershipCallbacks {
  onStartedLeading: () => Promise<void>;
  onStoppedLeading: () => Promise<void>;
}

/**
 * Starts capabilities in dependency order (each as soon as its dependencies are up, so independent
 * ones start together), stops them in reverse through the context's lifecycle, drains every server
 * they serve, and runs each capability's leader-only controllers while this replica holds that
 * capability's Lease (like controller-runtime's Manager with its Runnables that need leader
 * election, one election per capability so that replicas may run different capabilities).
 */
export class Manager<C extends ManagedContext = SharedContext> {
  private readonly byName: Map<string, Capability<C>>;
  private readonly started = new Map<string, Started>();

  constructor(
    private readonly capabilities: readonly Capability<C>[],
    private readonly logger?: Logger,
  ) {
    this.byName = new Map(capabilities.map((c) => [c.name, c]));
    if (this.byName.size !== capabilities.length)
      throw new Error(`capabilities: ${duplicatesOf(capabilities)}`);
    checkDependencies(capabilities, this.byName);
  }

  /**
   * Starts every capability; once one fails, starts no more, waits for those still starting, stops
   * everything the context's lifecycle recorded and rejects with that failure.
   */
  async start(context: C): Promise<void> {
    let failure: { reason: unknown } | undefined;
    const starting = new Map<string, Promise<void>>();
    const startOne = (capability: Capability<C>): Promise<void> => {
      let done = starting.get(capability.name);
      if (!done) {
        const dependencies = (capability.dependsOn ?? []).map((d) => startOne(this.byName.get(d)!));
        done = Promise.all(dependencies).then(async () => {
          if (failure) return;
          try {
            this.started.set(capability.name, (await capability.start(context)) ?? {});
          } catch (err) {
            failure ??= { reason: err };
          }
        });
        starting.set(capability.name, done);
      }
      return done;
    };
    await Promise.all(this.capabilities.map(startOne));
    if (!failure) return;
    await context.lifecycle.stop().catch(() => undefined);
    throw failure.reason;
  }

  /** Every started capability's servers ask their clients to reconnect elsewhere. */
  drain(): void {
    for (const { servers } of this.startedInOrder()) for (const server of servers ?? []) server.drain();
  }

  /**
   * Competes, for each capability in `leading` (default: all) that has leader-only controllers, for
   * that capability's Lease through an elector of its own (`elector(name, callbacks)`), records the
   * electors in the lifecycle, and runs a capability's controllers while its Lease is held. A
   * capability not in `leading`, or with no such controllers, costs no Lease.
   */
  lead(
    context: C,
    elector: (capability: string, callbacks: LeadershipCallbacks) => Elector,
    leading?: readonly string[],
  ): LeaderControllers {
    const unknown = (leading ?? []).filter((name) => !this.byName.has(name));
    if (unknown.length)
      throw new Error(`cannot lead ${unknown.map((n) => `"${n}"`).join(", ")}: not started`);
    const elections = this.capabilities
      .filter((c) => (leading ?? [c.name]).includes(c.name) && this.started.get(c.name)?.leaderControllers)
      .map((c) => {
        const election = new CapabilityElection(c.name, this.started.get(c.name)!, this.logger);
        election.elector = elector(c.name, election.callbacks());
        election.elector.start();
        context.lifecycle.started(`leader election (${c.name})`, election.elector);
        return election;
      });
    return {
      isLeader: () => elections.length > 0 && elections.every((e) => e.elector!.isLeader()),
      running: () => elections.length > 0 && elections.every((e) => e.running()),
      leading: () => elections.filter((e) => e.running()).map((e) => e.name),
      electing: () => elections.map((e) => e.name),
    };
  }

  private startedInOrder(): Started[] {
    return this.capabilities.flatMap((c) => this.started.get(c.name) ?? []);
  }
}

/** One capability's leader-only controllers, started when its Lease is won and stopped when lost. */
class CapabilityElection {
  elector?: Elector;
  private controllers: Runnable[] = [];
  private leading = false;

  constructor(
    readonly name: string,
    private readonly started: Started,
    private readonly logger?: Logger,
  ) {}

  callbacks(): LeadershipCallbacks {
    return {
      onStartedLeading: () => this.startControllers(),
      onStoppedLeading: () => this.stopControllers(),
    };
  }

  /** Leads and every controller has started. */
  running(): boolean {
    return this.leading && (this.elector?.isLeader() ?? false);
  }

  private async startControllers(): Promise<void> {
    this.logger?.info({ capability: this.name }, "leading: starting controllers");
    const mine = this.started.leaderControllers?.() ?? [];
    this.controllers = mine;
    for (const controller of mine) {
      // Leadership lost while starting (a slow informer sync): these were stopped, start no more.
      if (this.controllers !== mine) return;
      await controller.start();
    }
    if (this.controllers === mine) {
      this.leading = true;
      this.logger?.info({ capability: this.name }, "leading: controllers running");
    }
  }

  private async stopControllers(): Promise<void> {
    this.leading = false;
    this.logger?.info({ capability: this.name }, "no longer leading: stopping controllers");
    await Promise.all(this.controllers.map((c) => c.stop()));
    this.controllers = [];
  }
}

/** Whether this replica leads, and whether its controllers have all started (it is doing the work). */
export interface LeaderControllers {
  /** Holds the Lease of every capability it competes for (false when it competes for none). */
  isLeader(): boolean;
  /** Leads every capability it competes for, and all their controllers have started. */
  running(): boolean;
  /** The capabilities whose controllers run here now. */
  leading(): string[];
  /** The capabilities whose Leases this replica competes for. */
  electing(): string[];
}

/**
 * The capabilities named and, transitively, those they depend on, in the order listed; a name not
 * listed is refused, naming it and the known ones.
 */
export function withDependencies<C extends ManagedContext>(
  capabilities: readonly Capability<C>[],
  names: readonly string[],
): Capability<C>[] {
  const byName = new Map(capabilities.map((c) => [c.name, c]));
  const unknown = names.filter((n) => !byName.has(n));
  if (unknown.length) {
    throw new Error(
      `unknown capability ${unknown.map((n) => `"${n}"`).join(", ")}; known: ${[...byName.keys()].join(", ")}`,
    );
  }
  const wanted = new Set<string>();
  const add = (name: string): void => {
    if (wanted.has(name)) return;
    wanted.add(name);
    for (const d of byName.get(name)?.dependsOn ?? []) add(d);
  };
  for (const name of names) add(name);
  return capabilities.filter((c) => wanted.has(c.name));
}

function duplicatesOf(capabilities: readonly Capability<never>[]): string {
  const names = capabilities.map((c) => c.name);
  const twice = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))];
  return `${twice.map((n) => `"${n}"`).join(", ")} listed twice`;
}

/** Refuses a dependency on a capability not listed and a dependency cycle, naming them. */
function checkDependencies<C extends ManagedContext>(
  capabilities: readonly Capability<C>[],
  byName: Map<string, Capability<C>>,
): void {
  for (const c of capabilities) {
    const unknown = (c.dependsOn ?? []).filter((d) => !byName.has(d));
    if (unknown.length)
      throw new Error(`capability "${c.name}" depends on unknown ${unknown.map((d) => `"${d}"`).join(", ")}`);
  }
  const done = new Set<string>();
  const visit = (name: string, path: string[]): void => {
    if (done.has(name)) return;
    if (path.includes(name)) {
      throw new Error(
        `capabilities depend on each other in a cycle: ${[...path.slice(path.indexOf(name)), name].join(" → ")}`,
      );
    }
    for (const d of byName.get(name)?.dependsOn ?? []) visit(d, [...path, name]);
    done.add(name);
  };
  for (const c of capabilities) visit(c.name, []);
}
