import type { Logger } from "pino";
import {
  applyStatusUnlessGone,
  type ClusterClient,
  type Condition,
  Controller,
  describeError,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  sameStoredJson,
  setCondition,
} from "../kube/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { NodeProviderStatus } from "./api/node-provider.js";
import type { NodeInformers } from "./informers.js";
import type { ProviderRegistry } from "./providers/registry.js";

export interface NodeProviderControllerOptions {
  client: ClusterClient;
  informers: NodeInformers;
  registry: ProviderRegistry;
  logger: Logger;
  /** How often flavors are listed again. Default 5 minutes. */
  refreshMs?: number;
}

/**
 * Keeps each NodeProvider's status: the flavors it offers (admission checks requests against
 * them, so it never calls a cloud per request) and whether it answers (`Ready`).
 */
export class NodeProviderController {
  private readonly controller: Controller;

  constructor(private readonly options: NodeProviderControllerOptions) {
    this.controller = new Controller({
      name: "node-providers",
      workers: 2,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(options.informers.providers);
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  stop(options?: { timeoutMs?: number }): Promise<void> {
    return this.controller.stop(options);
  }

  /** Lists the provider's flavors again now (after its credentials changed, say). */
  refresh(name: string): void {
    this.controller.enqueue(objectKey(this.options.client.name, undefined, name));
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const name = ctx.ref.name;
    const object = this.options.informers.providers.get(undefined, name);
    if (!object) {
      this.options.registry.forget(name);
      return reconcileDone();
    }
    const now = new Date();
    const status: NodeProviderStatus = structuredClone(object.status ?? {});
    status.observedGeneration = object.metadata?.generation ?? 0;
    const generation = object.metadata?.generation ?? 0;
    let failed: unknown;
    try {
      const provider = await this.options.registry.providerFor(object);
      const flavors = await provider.listFlavors(ctx.signal);
      const listed = flavors.map((f) => ({
        name: f.name,
        vcpus: f.vcpus,
        memoryMiB: f.memoryMiB,
        ...(f.diskGiB !== undefined ? { diskGiB: f.diskGiB } : {}),
      }));
      if (!sameStoredJson(status.flavors, listed)) {
        status.flavors = listed;
        status.lastListed = now.toISOString().replace(/\.\d+Z$/, "Z");
      }
      status.lastListed ??= now.toISOString().replace(/\.\d+Z$/, "Z");
      const names = listed.map((f) => f.name).join(", ");
      status.flavorSummary = names.length > 1024 ? `${names.slice(0, 1020)}, …` : names;
      status.conditions = setCondition(
        status.conditions as Condition[] | undefined,
        {
          type: "Ready",
          status: "True",
          reason: "FlavorsListed",
          message: `${listed.length} flavor${listed.length === 1 ? "" : "s"}`,
          observedGeneration: generation,
        },
        now,
      );
    } catch (err) {
      failed = err;
      status.conditions = setCondition(
        status.conditions as Condition[] | undefined,
        {
          type: "Ready",
          status: "False",
          reason: "ProviderUnavailable",
          message: describeError(err).slice(0, 4000),
          observedGeneration: generation,
        },
        now,
      );
    }
    if (!sameStoredJson(object.status ?? {}, status)) {
      await applyStatusUnlessGone(this.options.client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "NodeProvider",
        metadata: { name },
        status,
      });
    }
    // A provider that does not answer is asked again in a while, not hammered by retries.
    if (failed) return requeueAfter(15_000);
    return requeueAfter(this.options.refreshMs ?? 5 * 60_000);
  }
}
