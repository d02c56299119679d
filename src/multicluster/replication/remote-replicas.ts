/**
 * Replicas kept by the providers (`podManagement: Provider`): for each virtual node of a
 * combination, an apps/v1 ReplicaSet in that provider's replica namespace, made from the replica
 * Deployment this cluster would run. The provider's kube-controller-manager then replaces the pods
 * itself, so a provider cut off from this cluster keeps the declared number. Pure functions.
 */
import type { V1Deployment, V1Node, V1ReplicaSet } from "@kubernetes/client-node";
import type { NamespaceMap } from "../api/offloading.js";
import { REPLICA_LABEL, REPLICATED_DEPLOYMENT_LABEL } from "../api/replicated-deployment.js";
import { acceptedReplica } from "../offloading/replicas.js";
import { originLabels } from "../reflection/labels.js";
import { remotePodSpec } from "../reflection/pod-translation.js";
import { PEERING_LABEL } from "../virtual-node.js";
import { type Combination, shortHash } from "./combinations.js";
import { canonicalJson } from "./status.js";

/** On a remote ReplicaSet, in its selector and on its pods: the hash of its pod template. */
export const TEMPLATE_HASH_LABEL = "tenantry.dev/replica-template";
/** On a ReplicatedDeployment with provider-kept replicas: its ReplicaSets are deleted before it goes. */
export const REMOTE_REPLICAS_FINALIZER = "tenantry.dev/remote-replicas";

/** Where one virtual node's share of a replica runs. */
export interface Placement {
  peering: string;
  node: V1Node;
  remoteNamespace: string;
  replicas: number;
}

/**
 * One placement per virtual node of the combination, the declared count split evenly (the first
 * nodes in name order take the remainder). An error when a node has no Peering behind it or the
 * namespace has no accepted replica in its provider yet.
 */
export function placementsOf(
  combination: Combination,
  nodes: ReadonlyMap<string, V1Node>,
  maps: readonly NamespaceMap[],
  namespace: string,
  declared: number,
): { placements: Placement[]; error?: undefined } | { placements?: undefined; error: string } {
  const placements: Placement[] = [];
  const count = combination.nodes.length;
  for (const [index, name] of combination.nodes.entries()) {
    const node = nodes.get(name);
    const peering = node?.metadata?.labels?.[PEERING_LABEL];
    if (!node || !peering) {
      return { error: `virtual node ${name} has no Peering behind it: no provider can keep its pods` };
    }
    const replica = acceptedReplica(maps, namespace, peering);
    if (!replica) {
      return { error: `namespace ${namespace} has no accepted replica in cluster ${peering} yet` };
    }
    const replicas = Math.floor(declared / count) + (index < declared % count ? 1 : 0);
    placements.push({ peering, node, remoteNamespace: replica.remoteNamespace, replicas });
  }
  return { placements };
}

/**
 * The ReplicaSet a provider keeps for `deployment` (the replica Deployment of one combination):
 * its labels, annotations and pod template as the reflected pods would carry them (the spec made
 * runnable there by reflection's own translation), the template's hash in its name and selector so
 * a changed template is a new ReplicaSet. No owner reference: its owner lives in another cluster.
 */
export function remoteReplicaSet(
  deployment: V1Deployment,
  placement: Placement,
  originClusterId: string,
  serviceAccountExists: boolean,
): V1ReplicaSet {
  const { metadata, spec } = deployment;
  const template = spec!.template;
  const podSpec = remotePodSpec(template.spec!, placement.node, serviceAccountExists);
  const templateHash = shortHash(canonicalJson({ metadata: template.metadata, spec: podSpec }));
  const hashLabel = { [TEMPLATE_HASH_LABEL]: templateHash };
  return {
    apiVersion: "apps/v1",
    kind: "ReplicaSet",
    metadata: {
      name: `${metadata!.name}-${templateHash}`,
      namespace: placement.remoteNamespace,
      labels: {
        ...(metadata?.labels ?? {}),
        ...originLabels(originClusterId, metadata!.namespace!),
        ...hashLabel,
      },
      annotations: { ...(metadata?.annotations ?? {}) },
    },
    spec: {
      replicas: placement.replicas,
      ...(spec!.minReadySeconds !== undefined ? { minReadySeconds: spec!.minReadySeconds } : {}),
      selector: { ...spec!.selector, matchLabels: { ...(spec!.selector.matchLabels ?? {}), ...hashLabel } },
      template: {
        metadata: { ...template.metadata, labels: { ...(template.metadata?.labels ?? {}), ...hashLabel } },
        spec: podSpec,
      },
    },
  };
}

/** Label selector of a ReplicatedDeployment's ReplicaSets in a provider (all its replicas). */
export function remoteSelector(replicatedDeployment: string): string {
  return `${REPLICATED_DEPLOYMENT_LABEL}=${replicatedDeployment}`;
}

/** Whether the ReplicaSet has seen its spec and has as many available pods as it wants. */
export function replicaSetAvailable(set: V1ReplicaSet | undefined): boolean {
  if (!set) return false;
  if ((set.status?.observedGeneration ?? -1) < (set.metadata?.generation ?? 0)) return false;
  return (set.status?.availableReplicas ?? 0) >= (set.spec?.replicas ?? 1);
}

/** One placement as found or written: its current ReplicaSet, or why it could not be. */
export interface PlacementState {
  placement: Placement;
  current?: V1ReplicaSet;
  error?: string;
}

/**
 * The replica's state across its providers, in the shape the status reads off a Deployment:
 * `spec.replicas` the declared count, `readyReplicas` the sum over the current ReplicaSets, and one
 * Available condition, True when every provider's ReplicaSet is.
 */
export function replicaSetsSummary(name: string, states: readonly PlacementState[]): V1Deployment {
  const lagging = states
    .filter((s) => !replicaSetAvailable(s.current))
    .map((s) => {
      const available = s.current?.status?.availableReplicas ?? 0;
      return `cluster ${s.placement.peering}: ${available} of ${s.placement.replicas} pod(s) available`;
    });
  const available = lagging.length === 0;
  return {
    metadata: { name, generation: 1 },
    spec: {
      replicas: states.reduce((n, s) => n + s.placement.replicas, 0),
      selector: {},
      template: {},
    },
    status: {
      observedGeneration: 1,
      readyReplicas: states.reduce((n, s) => n + (s.current?.status?.readyReplicas ?? 0), 0),
      conditions: [
        {
          type: "Available",
          status: available ? "True" : "False",
          reason: available ? "ProviderReplicaSetsAvailable" : "ProviderReplicaSetsNotAvailable",
          message: available
            ? `ReplicaSets available in ${states.map((s) => s.placement.peering).join(", ")}`
            : lagging.join("; "),
        },
      ],
    },
  };
}

/** Which replica and provider a remote ReplicaSet belongs to, as `<peering>/<replica hash>`. */
export function placementKey(peering: string, replicaHash: string | undefined): string {
  return `${peering}/${replicaHash ?? ""}`;
}

export function replicaHashOf(set: V1ReplicaSet): string | undefined {
  return set.metadata?.labels?.[REPLICA_LABEL];
}
