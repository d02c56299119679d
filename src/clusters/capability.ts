import { type Capability, type SharedContext, Slot, type Started } from "../kube/index.js";
import { CLUSTER_LABELS } from "../multicluster/index.js";
import { ClusterHealthController } from "./controller.js";
import { ClusterRegistry } from "./registry.js";

/** Registered clusters and their credentials, from informers. */
export const CLUSTER_REGISTRY = new Slot<ClusterRegistry>("the cluster registry");

/** The cluster registry's timings: how often registered clusters are probed, and for how long. */
export interface ClustersOptions {
  probeIntervalMs?: number;
  requestTimeoutMs?: number;
}

/** The cluster registry (Cluster objects), and for the leader the controller probing each cluster's health. */
export class ClustersCapability implements Capability {
  readonly name = "clusters";

  constructor(private readonly options: ClustersOptions = {}) {}

  async start({ client, namespace, logger, lifecycle, values }: SharedContext): Promise<Started> {
    const { requestTimeoutMs, probeIntervalMs } = this.options;
    const registry = new ClusterRegistry(client, namespace, requestTimeoutMs ? { requestTimeoutMs } : {});
    await registry.start();
    lifecycle.started("cluster registry", registry);
    values.set(CLUSTER_REGISTRY, registry);
    values.set(CLUSTER_LABELS, registry.asLabelSource());
    return {
      leaderControllers: () => [
        new ClusterHealthController({
          client,
          registry,
          logger,
          ...(probeIntervalMs ? { probeIntervalMs } : {}),
        }),
      ],
    };
  }
}
