import type { V1ConfigMap, V1PolicyRule } from "@kubernetes/client-node";

/**
 * What two peered clusters tell each other about their gateways, with the peering's least
 * privilege: the consumer's peer user may read the provider's public gateway facts and read and
 * write one ConfigMap of the provider's namespace made for it — nothing else. The provider's
 * tenantry writes its half of that ConfigMap with its own rights. Private keys never cross.
 */
export const PUBLIC_GATEWAY_CONFIGMAP = "tenantry-network-public";
/** On the provider's exchange ConfigMaps. */
export const EXCHANGE_LABEL = "network.tenantry.dev/exchange";
export const CONSUMER_KEY = "consumer.json";
export const PROVIDER_KEY = "provider.json";
export const PUBLIC_KEY = "gateway.json";

export function exchangeConfigMapName(consumerName: string): string {
  return `tenantry-network-peer-${consumerName}`;
}

/** A cluster's gateway as every peer may know it. */
export interface PublicGateway {
  publicKey: string;
  /** `address:port` where peers' gateways reach it; absent until its load balancer has an address. */
  endpoint?: string;
  podCidr: string;
}

/** The consumer's half: its gateway, where it sees the provider's pods, and its pods of each replica. */
export interface ConsumerHalf extends PublicGateway {
  /** Where the consumer reaches the provider's pods. */
  providerRemappedCidr: string;
  /** Replica namespace in the provider → the consumer's pods of its local namespace (their own addresses). */
  namespaces: Record<string, string[]>;
}

/** The provider's half: where it sees the consumer's pods. */
export interface ProviderHalf {
  consumerRemappedCidr: string;
}

/**
 * The peer user's rights in the provider's namespace for the network (added to its Role). It may
 * list and watch those two ConfigMaps by name alone (a `metadata.name` field selector), so the
 * consumer's controller follows them instead of polling.
 */
export function peerNetworkRules(consumerName: string): V1PolicyRule[] {
  return [
    {
      apiGroups: [""],
      resources: ["configmaps"],
      verbs: ["get", "list", "watch"],
      resourceNames: [PUBLIC_GATEWAY_CONFIGMAP],
    },
    {
      apiGroups: [""],
      resources: ["configmaps"],
      verbs: ["get", "list", "watch", "patch"],
      resourceNames: [exchangeConfigMapName(consumerName)],
    },
  ];
}

/** The exchange ConfigMap the peering makes in the provider, empty. */
export function exchangeConfigMap(
  consumerName: string,
  namespace: string,
  labels: Record<string, string>,
): V1ConfigMap {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: exchangeConfigMapName(consumerName),
      namespace,
      labels: { ...labels, [EXCHANGE_LABEL]: "true" },
    },
    data: {},
  };
}

/** A JSON value of a ConfigMap, or undefined when missing or not JSON. */
export function readJson<T>(map: V1ConfigMap | undefined, key: string): T | undefined {
  const text = map?.data?.[key];
  if (!text) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}
