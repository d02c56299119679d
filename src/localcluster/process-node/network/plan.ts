import { Cidr } from "./cidr.js";

/**
 * The addresses and names of one local cluster's pod network, all derived from its network index
 * `k` (1–250), claimed machine-wide (claims.ts) so that clusters of different harnesses never share
 * a name or a host route:
 *
 * - the process node's "host" is a network namespace `tnr<k>-node` holding the bridge `br0`, whose
 *   address is the first of the node's spec.podCIDR (default `10.200.<k>.0/24`); every pod has a
 *   network namespace `tnr<k>-<id>` with `eth0` on that bridge and the route through it;
 * - the machine reaches the node namespace over a veth pair, `tnr<k>h` (198.19.<k>.1/30) ↔ `host0`
 *   (198.19.<k>.2/30), and routes the pod network over it. Two clusters may be given the same
 *   podCIDR, as real clusters often are: only the first gets the direct route, and every cluster's
 *   pods are also reachable from the machine at `198.18.<k>.<n>`, mapped 1:1 onto its podCIDR in
 *   the node namespace (the per-cluster address that tells identical pod IPs apart);
 * - pods reach services of the machine that listen on 127.0.0.1 (the cluster's API server, the
 *   object store, its DNS server, tenantry's runtimes Admin API in the embedded default) at 127.0.0.1:<port> as before, translated to 198.19.<k>.1 and back
 *   to 127.0.0.1 on the machine, only for the ports listed (hostPorts).
 *
 * 198.18.0.0/15 is the range set aside for benchmarking interconnects (RFC 2544), so nothing real on
 * the machine is shadowed; nothing routes beyond these namespaces.
 */
export const FIRST_NETWORK = 1;
export const LAST_NETWORK = 250;

/** Service ClusterIPs of every local cluster (kube-apiserver's --service-cluster-ip-range). */
export const SERVICE_CIDR = "10.96.0.0/16";
/** The ClusterIP of kube-system/kube-dns, as kubeadm gives it. */
export const DNS_SERVICE_IP = "10.96.0.10";
export const CLUSTER_DOMAIN = "cluster.local";

export const NODE_LINK = "host0";
export const BRIDGE = "br0";
export const POD_LINK = "eth0";

export interface NetworkPlan {
  index: number;
  podCidr: string;
  /** The bridge's address: every pod's default route. */
  gateway: string;
  /** 198.18.<k>.0/24: the pods as the machine reaches them whatever the podCIDR. */
  mappedCidr: string;
  /** The machine's end of the link (pods' traffic to the machine's services arrives here). */
  hostAddress: string;
  nodeAddress: string;
  nodeNamespace: string;
  hostLink: string;
  /** The machine's nftables table of this network (ip family). */
  hostTable: string;
}

export function defaultPodCidr(index: number): string {
  return `10.200.${index}.0/24`;
}

/** The pod network of network `index`; `podCidr` must be a /24 (default 10.200.<index>.0/24). */
export function networkPlan(index: number, podCidr = defaultPodCidr(index)): NetworkPlan {
  if (!Number.isInteger(index) || index < FIRST_NETWORK || index > LAST_NETWORK)
    throw new Error(`network index ${index} is not from ${FIRST_NETWORK} to ${LAST_NETWORK}`);
  const pods = Cidr.parse(podCidr);
  if (pods.bits !== 24)
    throw new Error(`podCIDR ${podCidr} must be a /24 (it is mapped 1:1 onto 198.18.${index}.0/24)`);
  return {
    index,
    podCidr: pods.toString(),
    gateway: pods.at(1),
    mappedCidr: `198.18.${index}.0/24`,
    hostAddress: `198.19.${index}.1`,
    nodeAddress: `198.19.${index}.2`,
    nodeNamespace: `tnr${index}-node`,
    hostLink: `tnr${index}h`,
    hostTable: `tenantry-net-${index}`,
  };
}

/** The short id naming a pod's network namespace and its bridge port (from its UID). */
export function podNetworkId(uid: string): string {
  return uid.replace(/-/g, "").slice(0, 8);
}

export function podNamespace(plan: NetworkPlan, id: string): string {
  return `tnr${plan.index}-${id}`;
}

/** The bridge port of a pod in the node namespace (interface names are at most 15 bytes). */
export function podBridgePort(id: string): string {
  return `v${id}`;
}

/** Every network namespace name of network `index` starts so (for clean-up after a crash). */
export function namespacePrefix(index: number): string {
  return `tnr${index}-`;
}

/** A pod address as the machine reaches it through the mapped prefix. */
export function mappedAddress(plan: NetworkPlan, podIP: string): string | undefined {
  const n = Cidr.parse(plan.podCidr).indexOf(podIP);
  return n < 0 ? undefined : Cidr.parse(plan.mappedCidr).at(n);
}
