import type { KubernetesObject, V1NetworkPolicy, V1Pod } from "@kubernetes/client-node";
import {
  type Capability,
  type Informer,
  type SharedContext,
  Slot,
  type Started,
  StartedState,
  startInformers,
} from "../kube/index.js";
import { TENANT_INFORMERS } from "../tenants/index.js";
import type { AdmissionCheck, AdmissionSource } from "../webhooks/index.js";
import { MulticlusterInformers } from "./informers.js";
import { type GatewayPlacement, NetworkController, PeerAddresses } from "./network/index.js";
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

/** How this cluster reaches each peer's pods through the gateway (multi-cluster services read it). */
export const PEER_ADDRESSES = new Slot<PeerAddresses>("the peers' pod addresses");

/**
 * Virtual nodes for this cluster's Peerings: probe and heartbeat periods; and the network gateway
 * joining peers' pod networks (run only when its placement is given).
 */
export type MulticlusterOptions = Pick<
  PeeringControllerOptions,
  "probeIntervalMs" | "probeTimeoutMs" | "statusHeartbeatMs"
> & { network?: { gateway: GatewayPlacement; podCidr?: string } };

/**
 * Peering and offloading: the informers, the offloaded pods' admission check, and for the leader
 * the peering, peer-certificate, offloading, reflection and replication controllers.
 */
export class MulticlusterCapability implements Capability, AdmissionSource {
  readonly name = "multicluster";
  private readonly started = new StartedState<{ context: SharedContext; informers: MulticlusterInformers }>(
    "multicluster",
  );

  private readonly addresses = new PeerAddresses();
  private networkInformers?: { pods: Informer<V1Pod>; networkPolicies: Informer<V1NetworkPolicy> };

  constructor(private readonly options: MulticlusterOptions = {}) {}

  async start(context: SharedContext): Promise<Started> {
    const informers = new MulticlusterInformers(context.client, context.namespace);
    await informers.start();
    context.lifecycle.started("offloading informers", informers);
    context.values.set(MULTICLUSTER_INFORMERS, informers);
    context.values.set(PEER_ADDRESSES, this.addresses);
    // The shared cache's informers run once someone starts them (starting twice is a no-op).
    if (this.options.network) {
      this.networkInformers = {
        pods: context.cache.informer({ apiVersion: "v1", kind: "Pod" }),
        networkPolicies: context.cache.informer({
          apiVersion: "networking.k8s.io/v1",
          kind: "NetworkPolicy",
        }),
      };
      await startInformers(Object.values(this.networkInformers) as Informer<KubernetesObject>[]);
    }
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
      ...this.networkControllers(),
    ];
  }

  private networkControllers() {
    const network = this.options.network;
    if (!network) return [];
    const { context, informers } = this.started.get();
    return [
      new NetworkController({
        client: context.client,
        namespace: context.namespace,
        informers,
        ...this.networkInformers!,
        tenantNamespaces: context.values.get(TENANT_INFORMERS).tenantNamespaces,
        placement: network.gateway,
        ...(network.podCidr ? { podCidr: network.podCidr } : {}),
        addresses: this.addresses,
        logger: context.logger,
      }),
    ];
  }
}
