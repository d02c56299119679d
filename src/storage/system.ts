import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { UserError } from "../common/index.js";
import {
  applyObject,
  type ClusterClient,
  describeError,
  type InformerCache,
  statusOf,
} from "../kube/index.js";
import { Advisor } from "./advisor/advisor.js";
import { validateForecastOptions } from "./advisor/ewma.js";
import { STORAGE_API_VERSION } from "./api/crds.js";
import { POOLED_PROVISIONER } from "./api/names.js";
import type { VolumePool, VolumePoolSpec } from "./api/volume-pool.js";
import { NodeAgent } from "./driver/agent.js";
import { StorageEvents } from "./events.js";
import { BY_POOL, StorageInformers } from "./informers.js";
import { StorageMetrics } from "./metrics.js";
import { PooledProvisioner } from "./provisioner/provisioner.js";
import { VolumeLedger } from "./supplier/ledger.js";
import { Supplier } from "./supplier/supplier.js";

export interface StorageOptions {
  /** Provisioner name this storage system serves (pools, classes and volumes of that name). Default storage.tenantry.dev/pooled. */
  provisioner?: string;
  /** The advisor's EWMA: weight of the newest window (0 < smoothing ≤ 1, default 0.3) and window length (default 60 s). */
  advisor?: { smoothing?: number; windowSeconds?: number };
  /**
   * The node agent (sparse files, loop mounts, fscrypt) in this process: `{}` serves every store,
   * for a machine that is every node (the embedded default); `{ node }` the stores of one node;
   * false leaves it to the node agents of a DaemonSet (deploy/storage).
   */
  agent?: { node?: string; installTools?: boolean } | false;
  /** Pools applied at start, e.g. the embedded default's `tenantry-pooled` on its own backing store. */
  pools?: { name: string; spec: VolumePoolSpec }[];
}

export interface StorageSystemOptions extends StorageOptions {
  client: ClusterClient;
  /** The process's shared cache; without it storage watches on its own. */
  cache?: InformerCache;
  /** tenantry's namespace: the volume key Secrets live there. */
  namespace: string;
  registry: Registry;
  logger: Logger;
}

/** Checks options before anything starts: a clear error naming the field and the limit. */
export function validateStorageOptions(options: StorageOptions): void {
  const advisor = options.advisor ?? {};
  validateForecastOptions({
    smoothing: advisor.smoothing ?? 0.3,
    windowMs: (advisor.windowSeconds ?? 60) * 1000,
  });
  for (const [i, pool] of (options.pools ?? []).entries()) {
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(pool.name) || pool.name.length > 253)
      throw new UserError(
        `storage.pools[${i}].name "${pool.name}" must be a DNS subdomain (lowercase, at most 253 characters)`,
      );
  }
}

/**
 * tenantry's storage on one cluster (Vasilenko & Kurapati §4): the advisor, the supplier and the
 * provisioner, plus the node agent when this process also runs on the nodes' machine. Built afresh
 * by the leader each time it starts leading.
 */
export class StorageSystem {
  private readonly informers: StorageInformers;
  private readonly advisor: Advisor;
  private readonly parts: { start(): Promise<void> | void; stop(): Promise<void> | void }[];
  private readonly provisioner: string;

  constructor(private readonly options: StorageSystemOptions) {
    validateStorageOptions(options);
    this.provisioner = options.provisioner ?? POOLED_PROVISIONER;
    const logger = options.logger.child({ capability: "storage" });
    this.informers = new StorageInformers(options.client, options.namespace, logger, options.cache);
    const metrics = StorageMetrics.for(options.registry);
    const events = new StorageEvents(options.client.core, this.provisioner, logger);
    this.advisor = new Advisor({
      claims: this.informers.claims,
      metrics,
      logger,
      forecast: {
        ...(options.advisor?.smoothing !== undefined ? { smoothing: options.advisor.smoothing } : {}),
        ...(options.advisor?.windowSeconds !== undefined
          ? { windowMs: options.advisor.windowSeconds * 1000 }
          : {}),
      },
    });
    const informers = this.informers;
    const common = {
      client: options.client,
      informers,
      provisioner: this.provisioner,
      logger,
    };
    const ledger = new VolumeLedger({
      get: (name) => informers.volumes.get(undefined, name),
      ofPool: (pool) => informers.volumes.byIndex(BY_POOL, pool),
    });
    this.parts = [
      new Supplier({ ...common, advisor: this.advisor, metrics, ledger }),
      new PooledProvisioner({ ...common, events, metrics, ledger }),
      ...(options.agent === false || options.agent === undefined
        ? []
        : [
            new NodeAgent({
              ...common,
              ...(options.agent.node ? { node: options.agent.node } : {}),
              installTools: options.agent.installTools ?? false,
            }),
          ]),
    ];
  }

  async start(): Promise<void> {
    for (const pool of this.options.pools ?? []) await applyPool(this.options.client, pool.name, pool.spec);
    this.informers.start();
    await this.informers.claims.waitForSync();
    this.advisor.start();
    for (const part of this.parts) await part.start();
  }

  async stop(): Promise<void> {
    this.advisor.stop();
    await Promise.all(this.parts.map((part) => part.stop()));
    await this.informers.stop();
  }
}

/** Applies a pool; the API server's refusal (naming the field) becomes a UserError. */
export async function applyPool(
  client: ClusterClient,
  name: string,
  spec: VolumePoolSpec,
): Promise<VolumePool> {
  try {
    return await applyObject<VolumePool>(client, {
      apiVersion: STORAGE_API_VERSION,
      kind: "VolumePool",
      metadata: { name },
      spec,
    });
  } catch (err) {
    const status = statusOf(err);
    throw new UserError(`VolumePool ${name} was refused: ${status?.message ?? describeError(err)}`);
  }
}

/** The node agent alone, as the DaemonSet of a real cluster runs it on each node. */
export class StandaloneNodeAgent {
  private readonly informers: StorageInformers;
  private readonly agent: NodeAgent;

  constructor(options: {
    client: ClusterClient;
    namespace: string;
    node: string;
    provisioner?: string;
    installTools?: boolean;
    logger: Logger;
  }) {
    this.informers = new StorageInformers(options.client, options.namespace, options.logger);
    this.agent = new NodeAgent({
      client: options.client,
      informers: this.informers,
      provisioner: options.provisioner ?? POOLED_PROVISIONER,
      node: options.node,
      installTools: options.installTools ?? false,
      logger: options.logger,
    });
  }

  async start(): Promise<void> {
    this.informers.start();
    await this.agent.start();
  }

  async stop(): Promise<void> {
    await this.agent.stop();
    await this.informers.stop();
  }
}
