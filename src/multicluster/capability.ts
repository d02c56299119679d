import { type Capability, type SharedContext, Slot, type Started, StartedState } from "../kube/index.js";
import { TENANT_INFORMERS } from "../tenants/index.js";
import type { AdmissionCheck, AdmissionSource } from "../webhooks/index.js";
import { MulticlusterInformers } from "./informers.js";
import { offloadingControllers } from "./offloading/index.js";
import { offloadingPodWebhook } from "./offloading/pod-webhook.js";
import { PeerCertificateApprover } from "./peer-certificate-approver.js";
import { PeerCertificateRenewer } from "./peer-certificate-renewer.js";
import {
  type ClusterLabelSource,
  PeeringController,
  type PeeringControllerOptions,
} from "./peering-controller.js";
import { ReflectionController } from "./reflection/reflection-controller.js";
import { ReplicatedDeploymentController } from "./replication/index.js";

/** The Peerings', offloading's and reflection's informers. */
export const MULTICLUSTER_INFORMERS = new Slot<MulticlusterInformers>("the multicluster informers");
/** Where the labels the administrator gave registered clusters come from (the cluster registry). */
export const CLUSTER_LABELS = new Slot<ClusterLabelSource>("the registered clusters' labels");

/** Virtual nodes for this cluster's Peerings: probe and heartbeat periods. */
export type MulticlusterOptions = Pick<
  PeeringControllerOptions,
  "probeIntervalMs" | "probeTimeoutMs" | "statusHeartbeatMs"
>;

/**
 * Peering and offloading: the informers, the offloaded pods' admission check, and for the leader
 * the peering, peer-certificate, offloading, reflection and replication controllers.
 */
export class MulticlusterCapability implements Capability, AdmissionSource {
  readonly name = "multicluster";
  /** Read by the leader's controllers: the tenants' informers and the registry's cluster labels. */
  readonly dependsOn = ["tenants", "clusters"];
  private readonly started = new StartedState<{ context: SharedContext; informers: MulticlusterInformers }>(
    "multicluster",
  );

  constructor(private readonly options: MulticlusterOptions = {}) {}

  async start(context: SharedContext): Promise<Started> {
    const informers = new MulticlusterInformers(context.client, context.namespace);
    await informers.start();
    context.lifecycle.started("offloading informers", informers);
    context.values.set(MULTICLUSTER_INFORMERS, informers);
    this.started.set({ context, informers });
    return { leaderControllers: () => this.controllers() };
  }

  admissionChecks(): AdmissionCheck[] {
    return [offloadingPodWebhook(this.started.get().informers)];
  }

  private controllers() {
    const { context, informers } = this.started.get();
    const { client, namespace, logger, metrics, clusterId, values } = context;
    return [
      new PeeringController({
        client,
        namespace,
        informers,
        logger,
        clusterLabels: values.get(CLUSTER_LABELS),
        ...this.options,
      }),
      // Peer certificates: this cluster renews its own with its providers and approves its consumers'.
      new PeerCertificateRenewer({
        client,
        peerings: informers.peerings,
        peerSecrets: informers.peerSecrets,
        namespace,
        registry: metrics,
        logger,
      }),
      new PeerCertificateApprover({
        client,
        csrs: informers.clientCsrs,
        tenants: values.get(TENANT_INFORMERS).tenants,
        logger,
      }),
      ...offloadingControllers({ client, informers, clusterId, logger }),
      new ReflectionController({ client, informers, clusterId, logger }),
      new ReplicatedDeploymentController({ client, informers, logger }),
    ];
  }
}
