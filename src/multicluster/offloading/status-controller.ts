/**
 * The OffloadingStatus controller (Liqo thesis, figure 6.2, step 4): keeps every
 * NamespaceOffloading's status in line with the NamespaceMaps, the source of truth about the
 * remote namespaces.
 */
import { isDeepStrictEqual } from "node:util";
import type { Logger } from "pino";
import {
  applyStatus,
  type ClusterClient,
  type Controller,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { NAMESPACE_OFFLOADING_NAME } from "../api/offloading.js";
import { type MulticlusterInformers, offloadingController } from "../informers.js";
import { remoteNamespaceName } from "./names.js";
import { offloadingStatus } from "./offloading-status.js";
import { namespacesOfMap } from "./replicas.js";

export interface OffloadingStatusControllerOptions {
  client: ClusterClient;
  informers: MulticlusterInformers;
  clusterId: string;
  logger: Logger;
  workers?: number;
}

export class OffloadingStatusController {
  private readonly controller: Controller;
  private readonly cluster: string;

  constructor(private readonly options: OffloadingStatusControllerOptions) {
    const { informers } = options;
    this.cluster = options.client.name;
    this.controller = offloadingController("offloading-status", options, 4, (ctx) => this.reconcile(ctx));
    this.controller.watch(informers.offloadings);
    this.controller.watch(informers.maps, (map) =>
      namespacesOfMap(map).map((ns) => objectKey(this.cluster, ns, NAMESPACE_OFFLOADING_NAME)),
    );
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const { informers, client, clusterId } = this.options;
    const offloading = informers.offloadingOf(ctx.ref.namespace!);
    if (!offloading) return reconcileDone();
    const remote = remoteNamespaceName(offloading.spec, offloading.metadata!.namespace!, clusterId);
    const status = offloadingStatus(offloading, informers.maps.list(), remote, new Date());
    if (isDeepStrictEqual(status, offloading.status)) return reconcileDone();
    try {
      await applyStatus(client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceOffloading",
        metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace: offloading.metadata!.namespace! },
        status,
      });
    } catch (err) {
      // Gone while finishing its deletion: nothing left to report on.
      if (!isNotFound(err)) throw err;
    }
    if (status.offloadingPhase !== offloading.status?.offloadingPhase) {
      ctx.logger.info(
        { namespace: offloading.metadata!.namespace, phase: status.offloadingPhase },
        "offloading phase",
      );
    }
    return reconcileDone();
  }
}
