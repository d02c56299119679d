import { defaultControllerRateLimiter } from "../../kube/index.js";
import type { NamespaceMap } from "../api/offloading.js";
import { type NamespaceReplica, peeringOfMap } from "../offloading/replicas.js";

/** Every accepted replica a peer holds (all local namespaces), from its NamespaceMaps. */
export function acceptedReplicasOfPeer(maps: readonly NamespaceMap[], peering: string): NamespaceReplica[] {
  return maps.filter((map) => peeringOfMap(map) === peering).flatMap((map) => acceptedIn(map));
}

/** Replicas accepted in `current` that were not (or not under that name) in `previous`. */
export function newlyAccepted(previous: NamespaceMap | undefined, current: NamespaceMap): NamespaceReplica[] {
  const before = new Map(
    (previous ? acceptedIn(previous) : []).map((r) => [r.localNamespace, r.remoteNamespace]),
  );
  return acceptedIn(current).filter((r) => before.get(r.localNamespace) !== r.remoteNamespace);
}

function acceptedIn(map: NamespaceMap): NamespaceReplica[] {
  const peering = peeringOfMap(map);
  return Object.entries(map.status?.currentMapping ?? {})
    .filter(([, current]) => current.phase === "Accepted")
    .map(([localNamespace, current]) => ({
      peering,
      localNamespace,
      remoteNamespace: current.remoteNamespace,
    }));
}

/**
 * Backoff for work in the providers: a replica namespace is usable a moment after it is Accepted
 * (the provider grants access), and a peer may be down; retrying from 5 ms would flood it, and
 * waiting up to 1000 s would leave pods Pending long after it recovered.
 */
export const REMOTE_RATE_LIMITER = () =>
  defaultControllerRateLimiter({ baseDelayMs: 200, maxDelayMs: 60_000, qps: 100, burst: 500 });
