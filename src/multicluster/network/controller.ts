import {
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
  type V1Namespace,
  type V1NetworkPolicy,
  type V1Pod,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  type ClusterClient,
  describeError,
  type Informer,
  isNotFound,
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
  placement: GatewayPlacement;
  /** Where the mappings to peers' pods are published (the multi-cluster services read them). */
  addresses: PeerAddresses;
  /** The cluster's pod range; default: the gateway node's podCIDR. */
  podCidr?: string;
  logger: Logger;
  intervalMs?: number;
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
 * peers, and the pods of each offloaded namespace and of its replica that may talk across — from
 * the informers, level-based, every couple of seconds.
 */
export class NetworkController {
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private identity?: ClusterRef;
  private podCidr?: string;
  /** What was last written, so unchanged objects cost no request. */
  private readonly written = new Map<string, string>();

  constructor(private readonly options: NetworkControllerOptions) {}

  async start(): Promise<void> {
    await Promise.all([this.options.pods.waitForSync(), this.options.networkPolicies.waitForSync()]);
    const tick = async () => {
      try {
        await this.reconcile();
      } catch (err) {
        this.options.logger.warn({ error: describeError(err) }, "network: reconcile failed");
      }
      if (!this.stopped) this.timer = setTimeout(tick, this.options.intervalMs ?? 2000);
    };
    this.timer = setTimeout(tick, 0);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  async reconcile(): Promise<void> {
    const { client, namespace } = this.options;
    if (!this.identity) {
      const { clusterName, clusterId } = await readClusterIdentity(client, namespace, "this cluster");
      this.identity = { name: clusterName, id: clusterId };
    }
    await this.ensureGateway();
    const own = await this.ownGateway();
    if (!own) return;
    await this.write({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: PUBLIC_GATEWAY_CONFIGMAP, namespace },
      data: { [PUBLIC_KEY]: JSON.stringify(own) },
    } as V1ConfigMap);
    const remaps = await this.readRemaps();
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
    const exchanges = await client.core.listNamespacedConfigMap({ namespace, labelSelector: EXCHANGE_LABEL });
    for (const exchange of exchanges.items) {
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
    const { client, namespace } = this.options;
    const status = readJson<GatewayStatus>(
      await client.core.readNamespacedConfigMap({ name: GATEWAY_OBJECTS.status, namespace }),
      STATUS_KEY,
    );
    if (!status?.publicKey) return undefined;
    const podCidr = await this.clusterPodCidr();
    if (!podCidr) return undefined;
    const service = await client.core.readNamespacedService({ name: GATEWAY_NAME, namespace });
    const address = service.status?.loadBalancer?.ingress?.[0]?.ip;
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

  private async readRemaps(): Promise<Map<string, string>> {
    const { client, namespace } = this.options;
    try {
      const map = await client.core.readNamespacedConfigMap({ name: REMAPS_CONFIGMAP, namespace });
      return new Map(Object.entries(map.data ?? {}));
    } catch (err) {
      if (isNotFound(err)) return new Map();
      throw err;
    }
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
    const { client: peer, remoteClusterId } = informers.peerClients.clientFor(peering.metadata!.name!);
    const name = exchangeConfigMapName(this.identity!.name);
    let provider: PublicGateway | undefined;
    let exchange: V1ConfigMap;
    try {
      provider = readJson(
        await peer.core.readNamespacedConfigMap({ name: PUBLIC_GATEWAY_CONFIGMAP, namespace }),
        PUBLIC_KEY,
      );
      exchange = await peer.core.readNamespacedConfigMap({ name, namespace });
    } catch (err) {
      if (isNotFound(err)) return; // the provider runs no gateway, or the peering predates the network
      throw err;
    }
    if (!provider?.podCidr || !provider.publicKey) return;
    const remapped = this.remapFor(remoteClusterId, provider.podCidr, own, remaps);
    const replicas: Record<string, string[]> = {};
    const map = informers.maps.get(namespace, peering.metadata!.name!);
    for (const [local, current] of Object.entries(map?.status?.currentMapping ?? {})) {
      if (current.phase !== "Accepted") continue;
      const localPods = this.localPods(local, own.podCidr);
      replicas[current.remoteNamespace] = localPods;
      const remotePods = await peer.core.listNamespacedPod({ namespace: current.remoteNamespace });
      const entry = namespaces.get(`local/${local}`) ?? emptyEntry(local);
      entry.peerRanges.add(remapped);
      for (const ip of localPods) entry.local.add(ip);
      for (const pod of remotePods.items) {
        const address = pod.status?.phase === "Running" && pod.status.podIP;
        const seen = address ? remapAddress(address, provider.podCidr, remapped) : undefined;
        if (seen) entry.remote.add(seen);
      }
      namespaces.set(`local/${local}`, entry);
    }
    const half: ConsumerHalf = { ...own, providerRemappedCidr: remapped, namespaces: replicas };
    if (exchange.data?.[CONSUMER_KEY] !== JSON.stringify(half))
      await peer.core.patchNamespacedConfigMap(
        { name, namespace, body: { data: { [CONSUMER_KEY]: JSON.stringify(half) } } },
        merge,
      );
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
    const existing = await client.objects.list(
      policy.apiVersion,
      policy.kind,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      PEER_POLICY_LABEL,
    );
    for (const item of existing.items) {
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
