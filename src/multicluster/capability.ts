import type {
  KubernetesObject,
  V1ConfigMap,
  V1NetworkPolicy,
  V1Pod,
  V1Service,
} from "@kubernetes/client-node";
import {
  applyObject,
  type Capability,
  type Informer,
  type SharedContext,
  Slot,
  type Started,
  StartedState,
  startInformers,
} from "../kube/index.js";
import { authenticatedUsername, TENANT_INFORMERS } from "../tenants/index.js";
import type { AdmissionCheck, AdmissionSource } from "../webhooks/index.js";
import { readClusterIdentity } from "./identity.js";
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
import {
  MCS_CLUSTER_ROLES,
  MCS_VIEW_RESOURCES,
  MulticlusterServicesController,
  type MulticlusterServicesOptions,
  multiclusterServicesChecks,
  type ViewInformers,
} from "./services/index.js";

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
  /** Read by the leader's controllers: the tenants' informers and the registry's cluster labels. */
  readonly dependsOn = ["tenants", "clusters"];
  private readonly started = new StartedState<{
    context: SharedContext;
    informers: MulticlusterInformers;
    services: ViewInformers;
  }>("multicluster");
  private controllerUsername?: Promise<string>;

  private readonly addresses = new PeerAddresses();
  private networkInformers?: {
    pods: Informer<V1Pod>;
    networkPolicies: Informer<V1NetworkPolicy>;
    configMaps: Informer<V1ConfigMap>;
    services: Informer<V1Service>;
  };

  constructor(private readonly options: MulticlusterOptions = {}) {}

  async start(context: SharedContext): Promise<Started> {
    const informers = new MulticlusterInformers(context.client, context.namespace);
    // Home's view of the multi-cluster services: the shared cache's.
    const services = {
      exports: context.cache.informer(MCS_VIEW_RESOURCES.exports),
      imports: context.cache.informer(MCS_VIEW_RESOURCES.imports),
      services: context.cache.informer(MCS_VIEW_RESOURCES.services),
      slices: context.cache.informer(MCS_VIEW_RESOURCES.slices),
    } as ViewInformers;
    await Promise.all([
      informers.start(),
      startInformers(Object.values(services) as Informer<KubernetesObject>[]),
      ...MCS_CLUSTER_ROLES.map((role) => applyObject(context.client, role)),
    ]);
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
        // The gateway's status, the ranges and the peerings' exchanges live in tenantry's namespace.
        configMaps: context.cache.informer({
          apiVersion: "v1",
          kind: "ConfigMap",
          namespace: context.namespace,
        }),
        services: services.services as Informer<V1Service>,
      };
      await startInformers(Object.values(this.networkInformers) as Informer<KubernetesObject>[]);
    }
    this.started.set({ context, informers, services });
    return { leaderControllers: () => this.controllers() };
  }

  admissionChecks(): AdmissionCheck[] {
    const { context, informers } = this.started.get();
    const controllerUsername = () => {
      this.controllerUsername ??= authenticatedUsername(context.client.kubeConfig).catch((err: unknown) => {
        // Asked again at the next request; until then the checks' failurePolicy applies.
        this.controllerUsername = undefined;
        throw err;
      });
      return this.controllerUsername;
    };
    return [offloadingPodWebhook(informers), ...multiclusterServicesChecks(controllerUsername)];
  }

  private controllers() {
    const { context, informers, services } = this.started.get();
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
      new ReflectionController({ client, informers, clusterId, logger, services: services.services }),
      new ReplicatedDeploymentController({ client, clusterId, informers, logger }),
      new MulticlusterServicesController({
        client,
        logger,
        informers,
        home: services,
        clusterName: async () => (await readClusterIdentity(client, namespace, "this cluster")).clusterName,
        ...this.addressMapping(),
      }),
      ...this.networkControllers(),
    ];
  }

  /**
   * With a gateway, imported endpoints carry the addresses the importing cluster dials through it;
   * clusters no gateway joins (two providers of this one) keep the source's own addresses.
   */
  private addressMapping(): Pick<MulticlusterServicesOptions, "mapAddress" | "onAddressesChanged"> {
    if (!this.options.network) return {};
    return {
      mapAddress: (address, clusters) => this.addresses.dialAddress(address, clusters),
      onAddressesChanged: (listener) => this.addresses.onChange(listener),
    };
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
