/**
 * What a cluster's gateway is told (the ConfigMap its controller writes and its agent reads): its
 * port, its own podCIDR, each peer's gateway and ranges, and which pods may talk across.
 */
export const TUNNEL_INTERFACE = "wg0";
export const GATEWAY_PORT = 51820;
/** Seconds between keepalives: the side that knows an endpoint keeps the path open for the other. */
export const KEEPALIVE_SECONDS = 10;

export interface GatewayPeerConfig {
  /** The peer's cluster id. */
  cluster: string;
  /** The peer's cluster name (the Peering's name on the consumer, the consumer's cluster name on the provider). */
  name: string;
  /** The peer's own pod range. */
  podCidr: string;
  publicKey: string;
  /** The peer gateway's `address:port`, when published. */
  endpoint?: string;
  /** Where this cluster reaches the peer's pods (routed into the tunnel, the peer's allowed IPs). */
  remappedCidr: string;
  /** Where the peer reaches this cluster's pods (what this side's addresses become in the tunnel). */
  seenAs: string;
}

/**
 * One offloaded namespace: this cluster's pods of it (their own addresses) and the pods of its
 * counterparts in peers (as this cluster reaches them, remapped). Only these pairs pass.
 */
export interface GatewayNamespace {
  /** A number naming the namespace in the filter (1…2^31). */
  id: number;
  name: string;
  local: string[];
  remote: string[];
}

export interface GatewayConfig {
  listenPort: number;
  podCidr: string;
  peers: GatewayPeerConfig[];
  namespaces: GatewayNamespace[];
}
