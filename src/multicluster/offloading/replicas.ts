/**
 * Reading the NamespaceMaps, the source of truth about remote namespaces: which peers hold a
 * replica of a local namespace, and under which name.
 */
import type { NamespaceMap } from "../api/offloading.js";
import { PEERING_LABEL } from "../virtual-node.js";

export interface NamespaceReplica {
  /** The Peering (the provider's cluster name). */
  peering: string;
  localNamespace: string;
  remoteNamespace: string;
}

/** The Peering a NamespaceMap belongs to (its label, else its name). */
export function peeringOfMap(map: NamespaceMap): string {
  return map.metadata?.labels?.[PEERING_LABEL] ?? map.metadata!.name!;
}

/** Replicas of `localNamespace` that exist and are healthy (phase Accepted), one per peer. */
export function acceptedReplicas(maps: readonly NamespaceMap[], localNamespace: string): NamespaceReplica[] {
  const replicas: NamespaceReplica[] = [];
  for (const map of maps) {
    const current = map.status?.currentMapping?.[localNamespace];
    if (current?.phase !== "Accepted") continue;
    replicas.push({ peering: peeringOfMap(map), localNamespace, remoteNamespace: current.remoteNamespace });
  }
  return replicas;
}

/** The accepted replica of `localNamespace` in one peer, if any. */
export function acceptedReplica(
  maps: readonly NamespaceMap[],
  localNamespace: string,
  peering: string,
): NamespaceReplica | undefined {
  return acceptedReplicas(maps, localNamespace).find((r) => r.peering === peering);
}

/** Every local namespace a map mentions, requested or held. */
export function namespacesOfMap(map: NamespaceMap): string[] {
  return [
    ...new Set([
      ...Object.keys(map.spec?.desiredMapping ?? {}),
      ...Object.keys(map.status?.currentMapping ?? {}),
    ]),
  ];
}
