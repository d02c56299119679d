import { existsSync } from "node:fs";
import { mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { defaultClustersDir, UserError } from "../common/index.js";
import { type BuildOptions, type ComponentBinaries, ensureComponents } from "./build.js";
import { type ClusterState, type ClusterStatus, LocalCluster } from "./cluster.js";
import { ensureHostTools, ensureInotifyInstances } from "./host-tools.js";
import { acquireLock } from "./lock.js";
import { type LocalObjectStoreState, startLocalObjectStore, stopLocalObjectStore } from "./object-store.js";
import { type ClusterSpec, specFor } from "./spec.js";

export interface HarnessOptions {
  /** Folder holding one sub-folder per cluster (default ~/.local/state/tenantry/clusters). */
  dir?: string;
  build?: BuildOptions;
  log?: (line: string) => void;
}

/**
 * A set of named local clusters sharing one folder. Commands on one harness are serialised by a
 * lock file in that folder; two harnesses in different folders never share a port or a file.
 */
export class ClusterHarness {
  readonly dir: string;
  private readonly log: (line: string) => void;
  private binaries?: ComponentBinaries;

  constructor(private readonly options: HarnessOptions = {}) {
    this.dir = options.dir ?? defaultClustersDir();
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  async components(): Promise<ComponentBinaries> {
    this.binaries ??= await ensureComponents(this.options.build);
    return this.binaries;
  }

  private async locked<T>(purpose: string, fn: () => Promise<T>): Promise<T> {
    await mkdir(this.dir, { recursive: true });
    const release = await acquireLock(join(this.dir, ".lock"), purpose, 10 * 60_000);
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  /**
   * Starts (once) the S3-compatible object store the clusters' backups go to: versitygw serving
   * `<dir>/object-store/data`. It runs until {@link stopObjectStore}.
   */
  async objectStore(): Promise<LocalObjectStoreState> {
    return startLocalObjectStore(join(this.dir, "object-store"), {
      ...(this.options.build ? { build: this.options.build } : {}),
      log: this.log,
    });
  }

  async stopObjectStore(): Promise<void> {
    await stopLocalObjectStore(join(this.dir, "object-store"));
  }

  /** Names of the clusters that have a folder here (running or not). */
  async known(): Promise<string[]> {
    if (!existsSync(this.dir)) return [];
    const entries = await readdir(this.dir, { withFileTypes: true });
    return entries
      .filter(
        (e) => e.isDirectory() && e.name !== "object-store" && existsSync(join(this.dir, e.name, "pki")),
      )
      .map((e) => e.name)
      .sort();
  }

  private async existing(name: string): Promise<LocalCluster> {
    const known = await this.known();
    if (!known.includes(name)) {
      throw new UserError(
        `no cluster named "${name}" in ${this.dir}${known.length ? ` (known: ${known.join(", ")})` : " (none yet: run `tenantry dev cluster up`)"}`,
      );
    }
    const state = await new LocalCluster(specFor(name), this.dir).readState();
    return new LocalCluster(state?.spec ?? specFor(name), this.dir);
  }

  /** Starts the clusters in parallel; if one fails, the ones started by this call are stopped again. */
  async up(specs: ClusterSpec[]): Promise<ClusterState[]> {
    const names = specs.map((s) => s.name);
    const duplicate = names.find((n, i) => names.indexOf(n) !== i);
    if (duplicate) throw new UserError(`cluster "${duplicate}" is named twice`);
    const clusters = specs.map((spec) => new LocalCluster(spec, this.dir));
    await ensureHostTools(this.log);
    await ensureInotifyInstances(this.log);
    const binaries = await this.components();
    return this.locked(`starting ${names.join(", ")}`, async () => {
      const wasRunning = new Set<string>();
      for (const c of clusters) if ((await c.status()).state === "running") wasRunning.add(c.name);
      const results = await Promise.allSettled(clusters.map((c) => c.start(binaries, this.log)));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed) {
        await Promise.all(clusters.filter((c) => !wasRunning.has(c.name)).map((c) => c.stop()));
        throw failed.reason;
      }
      return results.map((r) => (r as PromiseFulfilledResult<ClusterState>).value);
    });
  }

  /** Stops the named clusters (all when none are named); data is kept. */
  async down(names?: string[]): Promise<string[]> {
    return this.locked("stopping clusters", async () => {
      const targets = names?.length
        ? await Promise.all(names.map((n) => this.existing(n)))
        : await this.all();
      await Promise.all(targets.map((c) => c.stop()));
      return targets.map((c) => c.name);
    });
  }

  /** Stops the named clusters (all when none are named) and deletes their data. */
  async reset(names?: string[]): Promise<string[]> {
    return this.locked("resetting clusters", async () => {
      const targets = names?.length
        ? await Promise.all(names.map((n) => this.existing(n)))
        : await this.all();
      await Promise.all(targets.map((c) => c.reset()));
      return targets.map((c) => c.name);
    });
  }

  async status(names?: string[]): Promise<ClusterStatus[]> {
    const targets = names?.length ? await Promise.all(names.map((n) => this.existing(n))) : await this.all();
    return Promise.all(targets.map((c) => c.status()));
  }

  private async all(): Promise<LocalCluster[]> {
    return Promise.all((await this.known()).map((n) => this.existing(n)));
  }
}
