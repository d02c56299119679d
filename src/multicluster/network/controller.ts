import {
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1Namespace,
  type V1NetworkPolicy,
  type V1Pod,
  type V1Service,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  type ClusterClient,
  Controller,
  describeError,
  type Informer,
  isNotFound,
  objectKey,
  type ReconcileResult,
  requeueAfter,
} from "../../kube/index.js";
import { TENANT_LABEL } from "../../tenants/index.js";
import type { Peering } from "../api/peering.js";
import { readClusterIdentity } from "../identity.js";
import type { MulticlusterInformers } from "../informers.js";
import { PEER_CLUSTER_ID_LABEL, PEER_CLUSTER_NAME_LABEL, peerTenantName } from "../peer.js";
import { allocateRemapRange, contains, parseAddress, parsePrefix, remapAddress } from "./addresses.js";
import { GATEWAY_PORT, type GatewayConfig, type GatewayPeerConfig } from "./config.js";
import {
  CONSUMER_KEY,
  type ConsumerHalf,
  EXCHANGE_LABEL,
  exchangeConfigMapName,
  PROVIDER_KEY,
  type ProviderHalf,
  PUBLIC_GATEWAY_CONFIGMAP,
  PUBLIC_KEY,
  type PublicGateway,
  readJson,
} from "./exchange.js";
import { GATEWAY_OBJECTS, type GatewayStatus, STATUS_KEY } from "./gateway/agent.js";
import {
  GATEWAY_APP_LABEL,
  GATEWAY_NAME,
  type GatewayPlacement,
  gatewayConfigMap,
  gatewayObjects,
  gatewayStores,
  POD_ROUTES_ANNOTATION,
} from "./manifests.js";
import type { ClusterRef, PeerAddresses, PeerLink } from "./peer-addresses.js";
import { type PeerWatch, PeerWatches } from "./peer-watches.js";

/** Where this cluster keeps the ranges it gave its peers' pods (cluster id → range). */
export const REMAPS_CONFIGMAP = "tenantry-network-remaps";

export interface NetworkControllerOptions {
  client: ClusterClient;
  namespace: string;
  informers: MulticlusterInformers;
  /** Every pod of the cluster (the shared cache's). */
  pods: Informer<V1Pod>;
  /** NetworkPolicies (the shared cache's): only a namespace already isolated needs the peers admitted. */
  networkPolicies: Informer<V1NetworkPolicy>;
  /** Tenant namespaces (the shared cache's): a replica must be the peer's tenant's. */
  tenantNamespaces: Informer<V1Namespace>;
  /** ConfigMaps of tenantry's namespace (the shared cache's): the gateway's status, the ranges, the exchanges. */
  configMaps: Informer<V1ConfigMap>;
  /** Services (the shared cache's): the gateway's load balancer address. */
  services: Informer<V1Service>;
  placement: GatewayPlacement;
  /** Where the mappings to peers' pods are published (the multi-cluster services read them). */
  addresses: PeerAddresses;
  /** The cluster's pod range; default: the gateway node's podCIDR. */
  podCidr?: string;
  logger: Logger;
  /** A full pass this often besides the events (peerings made before their exchange could be watched). */
  resyncMs?: number;
}

/** Both sides' offloaded namespaces being gathered: key → this cluster's pods and the peers'. */
type NamespacePods = Map<
  string,
  { namespace: string; local: Set<string>; remote: Set<string>; peerRanges: Set<string> }
>;

/** The NetworkPolicy that admits a peer's pods (their remapped range) into an offloaded namespace. */
export const PEER_POLICY = "tenantry-peer-network";
const PEER_POLICY_LABEL = "network.tenantry.dev/peer-policy";

function emptyEntry(namespace: string) {
  return { namespace, local: new Set<string>(), remote: new Set<string>(), peerRanges: new Set<string>() };
}

/** Both directions of each peer: where this cluster sees the peer's pods, and where the peer sees this one's. */
function peerLinks(own: ClusterRef, podCidr: string, peers: readonly GatewayPeerConfig[]): PeerLink[] {
  return peers.flatMap((peer) => {
    const other = { name: peer.name, id: peer.cluster };
    return [
      { source: other, importer: own, podCidr: peer.podCidr, remappedCidr: peer.remappedCidr },
      { source: own, importer: other, podCidr, remappedCidr: peer.seenAs },
    ];
  });
}

const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/**
 * The cluster's gateway and its tunnels to every peer, either side of the peering (Liqo thesis,
 * ch. 5): runs the gateway, publishes its public key and endpoint, exchanges them and the remapped
 * ranges through each peering's exchange ConfigMap, and writes the gateway's configuration — its
 * peers, and the pods of each offloaded namespace and of its replica that may talk across. Level-
 * based on one key, reconciled whenever an informer it reads changes: this cluster's (the shared
 * cache's) and, in each provider, the replicas' pods and the two ConfigMaps of the peering.
 */
export class NetworkController {
  private readonly controller: Controller;
  private readonly key: string;
  private readonly peers: PeerWatches;
  private identity?: ClusterRef;
  private podCidr?: string;
  /** What was last written, so unchanged objects cost no request. */
  private readonly written = new Map<string, string>();

  constructor(private readonly options: NetworkControllerOptions) {
    const { client, namespace, informers } = options;
    this.key = objectKey(client.name, undefined, "network");
    this.controller = new Controller({
      name: "network",
      logger: options.logger,
      reconcile: () => this.reconcile(),
    });
    this.peers = new PeerWatches({
      namespace,
      logger: options.logger.child({ component: "network" }),
      onChange: () => this.controller.enqueue(this.key),
    });
    const all = () => [this.key];
    const ownNamespace = (o: KubernetesObject) => (o.metadata?.namespace === namespace ? [this.key] : []);
    for (const informer of [
      options.pods,
      options.networkPolicies,
      options.tenantNamespaces,
      informers.peerings,
      informers.maps,
      informers.virtualNodes,
    ] as Informer<KubernetesObject>[])
      this.controller.watch(informer, all);
    this.controller.watch(options.configMaps, ownNamespace);
    this.controller.watch(options.services, ownNamespace);
  }

  async start(): Promise<void> {
    const { pods, networkPolicies, configMaps, services } = this.options;
    await Promise.all([pods, networkPolicies, configMaps, services].map((i) => i.waitForSync()));
    await this.controller.start();
    this.controller.enqueue(this.key);
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    await this.peers.stop();
  }

  async reconcile(): Promise<ReconcileResult> {
    const { client, namespace } = this.options;
    if (!this.identity) {
      const { clusterName, clusterId } = await readClusterIdentity(client, namespace, "this cluster");
      this.identity = { name: clusterName, id: clusterId };
    }
    await this.followPeers();
    await this.ensureGateway();
    const own = await this.ownGateway();
    if (!own) return requeueAfter(this.options.resyncMs ?? 30_000);
    await this.write({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: PUBLIC_GATEWAY_CONFIGMAP, namespace },
      data: { [PUBLIC_KEY]: JSON.stringify(own) },
    } as V1ConfigMap);
    const remaps = new Map(Object.entries(this.ownConfigMap(REMAPS_CONFIGMAP)?.data ?? {}));
    const peers: GatewayPeerConfig[] = [];
    const namespaces: NamespacePods = new Map();
    for (const peering of this.options.informers.peerings.list()) {
      await this.asConsumer(peering, own, remaps, peers, namespaces).catch((err) =>
        this.options.logger.warn(
          { peering: peering.metadata?.name, error: describeError(err) },
          "network: consumer side",
        ),
      );
    }
    const exchanges = this.options.configMaps
      .inNamespace(namespace)
      .filter((map) => map.metadata?.labels?.[EXCHANGE_LABEL] !== undefined);
    for (const exchange of exchanges) {
      await this.asProvider(exchange, own, remaps, peers, namespaces).catch((err) =>
        this.options.logger.warn(
          { exchange: exchange.metadata?.name, error: describeError(err) },
          "network: provider side",
        ),
      );
    }
    await this.saveRemaps(remaps, peers);
    await this.configure(own.podCidr, peers, namespaces);
    await this.admitPeers(namespaces);
    return requeueAfter(this.options.resyncMs ?? 30_000);
  }

  /** Watches, in each provider, the peering's two ConfigMaps and the pods of its accepted replicas. */
  private async followPeers(): Promise<void> {
    const { informers, namespace } = this.options;
    const wanted: PeerWatch[] = [];
    for (const peering of informers.peerings.list()) {
      const name = peering.metadata!.name!;
      let client: ClusterClient;
      try {
        client = informers.peerClients.clientFor(name).client;
      } catch {
        continue; // its credentials are not read yet: a later event brings them
      }
      const map = informers.maps.get(namespace, name);
      const replicas = Object.values(map?.status?.currentMapping ?? {})
        .filter((current) => current.phase === "Accepted")
        .map((current) => current.remoteNamespace);
      const configMaps = [PUBLIC_GATEWAY_CONFIGMAP, exchangeConfigMapName(this.identity!.name)];
      wanted.push({ peering: name, client, configMaps, replicas });
    }
    await this.peers.follow(wanted);
  }

  private ownConfigMap(name: string): V1ConfigMap | undefined {
    return this.options.configMaps.get(this.options.namespace, name);
  }

  /** A ConfigMap of the provider's: from its informer once listed, else asked for (undefined when missing). */
  private async peerConfigMap(peering: string, peer: ClusterClient, name: string) {
    const cached = this.peers.configMap(peering, name);
    if (cached.synced) return cached.value;
    try {
      return await peer.core.readNamespacedConfigMap({ name, namespace: this.options.namespace });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async peerPods(peering: string, peer: ClusterClient, namespace: string): Promise<V1Pod[]> {
    const cached = this.peers.pods(peering, namespace);
    if (cached.synced) return cached.value;
    return (await peer.core.listNamespacedPod({ namespace })).items;
  }

  private async ensureGateway(): Promise<void> {
    const { client, namespace, placement } = this.options;
    for (const object of gatewayObjects(namespace, placement)) await this.write(object);
    for (const store of gatewayStores(namespace)) {
      if (this.written.has(`created/${store.kind}`)) continue;
      await client.objects.create(store).catch((err) => {
        if ((err as { code?: number }).code !== 409) throw err;
      });
      this.written.set(`created/${store.kind}`, "");
    }
  }

  /** Server-side applies `object` unless this controller wrote the same already. */
  private async write(object: KubernetesObject): Promise<void> {
    const key = `${object.kind}/${object.metadata?.namespace}/${object.metadata?.name}`;
    const text = JSON.stringify(object);
    if (this.written.get(key) === text) return;
    await applyObject(this.options.client, object);
    this.written.set(key, text);
  }

  /** The gateway as peers must know it: its key and status from the agent, its load balancer's address. */
  private async ownGateway(): Promise<PublicGateway | undefined> {
    const status = readJson<GatewayStatus>(this.ownConfigMap(GATEWAY_OBJECTS.status), STATUS_KEY);
    if (!status?.publicKey) return undefined;
    const podCidr = await this.clusterPodCidr();
    if (!podCidr) return undefined;
    const service = this.options.services.get(this.options.namespace, GATEWAY_NAME);
    const address = service?.status?.loadBalancer?.ingress?.[0]?.ip;
    return {
      publicKey: status.publicKey,
      podCidr,
      ...(address ? { endpoint: `${address}:${GATEWAY_PORT}` } : {}),
    };
  }

  private gatewayPods(): V1Pod[] {
    return this.options.pods
      .inNamespace(this.options.namespace)
      .filter(
        (p) => p.metadata?.labels?.[GATEWAY_APP_LABEL] === GATEWAY_NAME && !p.metadata.deletionTimestamp,
      );
  }

  private async clusterPodCidr(): Promise<string | undefined> {
    this.podCidr ??= this.options.podCidr;
    if (this.podCidr) return this.podCidr;
    const nodeName = this.gatewayPods().find((p) => p.spec?.nodeName)?.spec?.nodeName;
    if (!nodeName) return undefined;
    const node = await this.options.client.core.readNode({ name: nodeName });
    this.podCidr = node.spec?.podCIDR;
    return this.podCidr;
  }

  /** Keeps the ranges of current peers only: a removed peering's range is free again. */
  private async saveRemaps(remaps: Map<string, string>, peers: GatewayPeerConfig[]): Promise<void> {
    const kept = Object.fromEntries(peers.map((p) => [p.cluster, p.remappedCidr]));
    await this.write({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: REMAPS_CONFIGMAP, namespace: this.options.namespace },
      data: kept,
    } as V1ConfigMap);
    for (const cluster of remaps.keys()) if (!(cluster in kept)) remaps.delete(cluster);
  }

  /** The range this cluster sees `cluster`'s pods in: kept, or the first free one of the pool. */
  private remapFor(
    cluster: string,
    peerPodCidr: string,
    own: PublicGateway,
    remaps: Map<string, string>,
  ): string {
    const bits = parsePrefix(peerPodCidr, "podCidr").bits;
    const kept = remaps.get(cluster);
    if (kept && parsePrefix(kept).bits === bits) return kept;
    const taken = [own.podCidr, ...[...remaps].filter(([c]) => c !== cluster).map(([, r]) => r)];
    const range = allocateRemapRange({ bits, taken });
    remaps.set(cluster, range);
    return range;
  }

  /** This cluster's running pods of `namespace` (not those on virtual nodes: they run in a peer). */
  private localPods(namespace: string, podCidr: string): string[] {
    const cidr = parsePrefix(podCidr);
    return this.options.pods
      .inNamespace(namespace)
      .filter((p) => p.status?.phase === "Running" && p.status.podIP && !p.spec?.hostNetwork)
      .filter((p) => !this.options.informers.virtualNodes.get(undefined, p.spec?.nodeName ?? ""))
      .map((p) => p.status!.podIP!)
      .filter((ip) => contains(cidr, parseAddress(ip)));
  }

  private async asConsumer(
    peering: Peering,
    own: PublicGateway,
    remaps: Map<string, string>,
    peers: GatewayPeerConfig[],
    namespaces: NamespacePods,
  ): Promise<void> {
    const { namespace, informers } = this.options;
    const peeringName = peering.metadata!.name!;
    const { client: peer, remoteClusterId } = informers.peerClients.clientFor(peeringName);
    const name = exchangeConfigMapName(this.identity!.name);
    const provider = readJson<PublicGateway>(
      await this.peerConfigMap(peeringName, peer, PUBLIC_GATEWAY_CONFIGMAP),
      PUBLIC_KEY,
    );
    const exchange = await this.peerConfigMap(peeringName, peer, name);
    // The provider runs no gateway, or the peering predates the network.
    if (!exchange) return;
    if (!provider?.podCidr || !provider.publicKey) return;
    const remapped = this.remapFor(remoteClusterId, provider.podCidr, own, remaps);
    const replicas: Record<string, string[]> = {};
    const map = informers.maps.get(namespace, peering.metadata!.name!);
    for (const [local, current] of Object.entries(map?.status?.currentMapping ?? {})) {
      if (current.phase !== "Accepted") continue;
      const localPods = this.localPods(local, own.podCidr);
      replicas[current.remoteNamespace] = localPods;
      const remotePods = await this.peerPods(peeringName, peer, current.remoteNamespace);
      const entry = namespaces.get(`local/${local}`) ?? emptyEntry(local);
      entry.peerRanges.add(remapped);
      for (const ip of localPods) entry.local.add(ip);
      for (const pod of remotePods) {
        const address = pod.status?.phase === "Running" && pod.status.podIP;
        const seen = address ? remapAddress(address, provider.podCidr, remapped) : undefined;
        if (seen) entry.remote.add(seen);
      }
      namespaces.set(`local/${local}`, entry);
    }
    const half: ConsumerHalf = { ...own, providerRemappedCidr: remapped, namespaces: replicas };
    if (exchange.data?.[CONSUMER_KEY] !== JSON.stringify(half)) {
      // An unreachable provider keeps its tunnel: what it last answered still holds.
      await peer.core
        .patchNamespacedConfigMap(
          { name, namespace, body: { data: { [CONSUMER_KEY]: JSON.stringify(half) } } },
          merge,
        )
        .catch((err: unknown) =>
          this.options.logger.warn(
            { peering: peeringName, error: describeError(err) },
            "network: the exchange not written",
          ),
        );
    }
    const theirs = readJson<ProviderHalf>(exchange, PROVIDER_KEY);
    if (!theirs?.consumerRemappedCidr) return;
    peers.push({
      cluster: remoteClusterId,
      name: peering.metadata!.name!,
      podCidr: provider.podCidr,
      publicKey: provider.publicKey,
      ...(provider.endpoint ? { endpoint: provider.endpoint } : {}),
      remappedCidr: remapped,
      seenAs: theirs.consumerRemappedCidr,
    });
  }

  private async asProvider(
    exchange: V1ConfigMap,
    own: PublicGateway,
    remaps: Map<string, string>,
    peers: GatewayPeerConfig[],
    namespaces: NamespacePods,
  ): Promise<void> {
    const consumerId = exchange.metadata?.labels?.[PEER_CLUSTER_ID_LABEL];
    const consumerName = exchange.metadata?.labels?.[PEER_CLUSTER_NAME_LABEL];
    const consumer = readJson<ConsumerHalf>(exchange, CONSUMER_KEY);
    if (!consumerId || !consumerName || !consumer?.publicKey) return;
    const remapped = this.remapFor(consumerId, consumer.podCidr, own, remaps);
    const half: ProviderHalf = { consumerRemappedCidr: remapped };
    if (exchange.data?.[PROVIDER_KEY] !== JSON.stringify(half))
      await this.options.client.core.patchNamespacedConfigMap(
        {
          name: exchange.metadata!.name!,
          namespace: this.options.namespace,
          body: { data: { [PROVIDER_KEY]: JSON.stringify(half) } },
        },
        merge,
      );
    peers.push({
      cluster: consumerId,
      name: consumerName,
      podCidr: consumer.podCidr,
      publicKey: consumer.publicKey,
      ...(consumer.endpoint ? { endpoint: consumer.endpoint } : {}),
      remappedCidr: remapped,
      seenAs: consumer.providerRemappedCidr,
    });
    const tenant = peerTenantName(consumerName);
    for (const [replica, addresses] of Object.entries(consumer.namespaces ?? {})) {
      // The consumer names namespaces: only its own tenant's replicas are ever opened to it.
      const ns = this.options.tenantNamespaces.get(undefined, replica);
      if (ns?.metadata?.labels?.[TENANT_LABEL] !== tenant) {
        this.options.logger.warn(
          { consumer: consumerName, namespace: replica },
          "network: not a replica of the peer's tenant, ignored",
        );
        continue;
      }
      const entry = namespaces.get(`replica/${replica}`) ?? emptyEntry(replica);
      entry.peerRanges.add(remapped);
      for (const ip of this.localPods(replica, own.podCidr)) entry.local.add(ip);
      for (const address of addresses) {
        const seen = remapAddress(address, consumer.podCidr, remapped);
        if (seen) entry.remote.add(seen);
      }
      namespaces.set(`replica/${replica}`, entry);
    }
  }

  /**
   * Lets the peers' pods in past the namespaces' own NetworkPolicies (a tenant's isolation admits
   * only its own namespaces): one more policy per offloaded namespace admitting the peers' ranges.
   * The gateway's filter already narrows them to the namespace's counterpart. Stale ones go.
   */
  private async admitPeers(namespaces: NamespacePods): Promise<void> {
    const { client } = this.options;
    const wanted = new Map<string, string[]>();
    for (const entry of namespaces.values()) {
      // A namespace no policy isolates admits everyone already; a policy of ours would isolate it.
      if (!this.isolated(entry.namespace)) continue;
      const ranges = new Set([...(wanted.get(entry.namespace) ?? []), ...entry.peerRanges]);
      wanted.set(entry.namespace, [...ranges].sort());
    }
    for (const [namespace, ranges] of wanted) {
      await this.write({
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { name: PEER_POLICY, namespace, labels: { [PEER_POLICY_LABEL]: "true" } },
        spec: {
          podSelector: {},
          policyTypes: ["Ingress"],
          ingress: [{ from: ranges.map((cidr) => ({ ipBlock: { cidr } })) }],
        },
      } as KubernetesObject);
    }
    const policy = { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy" };
    const existing = this.options.networkPolicies
      .list()
      .filter((p) => p.metadata?.name === PEER_POLICY && p.metadata.labels?.[PEER_POLICY_LABEL]);
    for (const item of existing) {
      const namespace = item.metadata!.namespace!;
      if (wanted.has(namespace)) continue;
      await client.objects
        .delete({ ...policy, metadata: { name: PEER_POLICY, namespace } })
        .catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
      this.written.delete(`NetworkPolicy/${namespace}/${PEER_POLICY}`);
    }
  }

  /** Whether a NetworkPolicy other than ours selects the namespace's pods for ingress. */
  private isolated(namespace: string): boolean {
    return this.options.networkPolicies
      .inNamespace(namespace)
      .some(
        (p) => p.metadata?.name !== PEER_POLICY && (p.spec?.policyTypes ?? ["Ingress"]).includes("Ingress"),
      );
  }

  /** The gateway's configuration, and the node's routes through it (the pod's annotation). */
  private async configure(
    podCidr: string,
    peers: GatewayPeerConfig[],
    namespaces: NamespacePods,
  ): Promise<void> {
    const { client, namespace } = this.options;
    const sorted = [...namespaces].sort(([a], [b]) => a.localeCompare(b));
    const config: GatewayConfig = {
      listenPort: GATEWAY_PORT,
      podCidr,
      // Two peerings, one each way, are one peer: the same key, the same range either side.
      peers: [...new Map(peers.map((p) => [p.cluster, p])).values()].sort((a, b) =>
        a.cluster.localeCompare(b.cluster),
      ),
      namespaces: sorted.map(([name, pods], i) => ({
        id: i + 1,
        name,
        local: [...pods.local].sort(),
        remote: [...pods.remote].sort(),
      })),
    };
    this.options.addresses.update(this.identity!, peerLinks(this.identity!, podCidr, config.peers));
    await this.write(gatewayConfigMap(namespace, JSON.stringify(config)));
    const routes = config.peers.map((p) => p.remappedCidr).join(",");
    for (const pod of this.gatewayPods()) {
      if ((pod.metadata?.annotations?.[POD_ROUTES_ANNOTATION] ?? "") === routes) continue;
      await client.core.patchNamespacedPod(
        {
          name: pod.metadata!.name!,
          namespace,
          body: { metadata: { annotations: { [POD_ROUTES_ANNOTATION]: routes } } },
        },
        merge,
      );
    }
  }
}
