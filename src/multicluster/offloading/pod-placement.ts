/**
 * Where an offloaded namespace's pods may run (Liqo thesis, 6.2.1): the node affinity and
 * toleration the pod webhook forces for each pod offloading strategy. Pure functions.
 */
import type { V1Affinity, V1NodeSelector, V1NodeSelectorTerm, V1Toleration } from "@kubernetes/client-node";
import type { NamespaceOffloadingSpec, PodOffloadingStrategy } from "../api/offloading.js";
import { andTerms, intersectSelectors } from "../selectors.js";
import { NODE_TYPE_LABEL, VIRTUAL_NODE_TAINT, VIRTUAL_NODE_TYPE } from "../virtual-node.js";

/** Selects every virtual node: the clusterSelector when none is given. */
export const ALL_VIRTUAL_NODES: V1NodeSelector = {
  nodeSelectorTerms: [
    { matchExpressions: [{ key: NODE_TYPE_LABEL, operator: "In", values: [VIRTUAL_NODE_TYPE] }] },
  ],
};

const LOCAL_NODES_TERM: V1NodeSelectorTerm = {
  matchExpressions: [{ key: NODE_TYPE_LABEL, operator: "NotIn", values: [VIRTUAL_NODE_TYPE] }],
};
const VIRTUAL_NODES_TERM: V1NodeSelectorTerm = ALL_VIRTUAL_NODES.nodeSelectorTerms[0]!;

/** The spec's clusterSelector, or every virtual node. */
export function clusterSelectorOf(spec: NamespaceOffloadingSpec): V1NodeSelector {
  const terms = spec.clusterSelector?.nodeSelectorTerms ?? [];
  return terms.length ? (spec.clusterSelector as V1NodeSelector) : ALL_VIRTUAL_NODES;
}

/**
 * The node selector the strategy imposes: LocalAndRemote = the cluster selector's terms plus one
 * term for local nodes; Remote = every cluster-selector term also requires a virtual node; Local =
 * none (undefined).
 */
export function strategySelector(
  strategy: PodOffloadingStrategy,
  clusterSelector: V1NodeSelector,
): V1NodeSelector | undefined {
  switch (strategy) {
    case "Local":
      return undefined;
    case "LocalAndRemote":
      return { nodeSelectorTerms: [...clusterSelector.nodeSelectorTerms, LOCAL_NODES_TERM] };
    case "Remote":
      return {
        nodeSelectorTerms: clusterSelector.nodeSelectorTerms.flatMap((term) => {
          const strict = andTerms(term, VIRTUAL_NODES_TERM);
          return strict ? [strict] : [];
        }),
      };
  }
}

export interface PodPlacement {
  affinity?: V1Affinity;
  tolerations?: V1Toleration[];
}

export interface PlacementResult {
  placement: PodPlacement;
  /** Set when the pod's own terms leave no node the strategy allows: the pod would stay Pending. */
  conflict?: string;
}

function tolerates(tolerations: readonly V1Toleration[]): boolean {
  return tolerations.some(
    (t) =>
      (t.operator === "Exists" &&
        (t.key === undefined || t.key === "" || t.key === VIRTUAL_NODE_TAINT.key)) ||
      (t.key === VIRTUAL_NODE_TAINT.key && t.value === VIRTUAL_NODE_TAINT.value),
  );
}

/**
 * The pod's affinity and tolerations once the offloading's constraints are forced on them. The
 * pod's own required terms are kept: the result is their intersection with the strategy's terms,
 * so a pod can only narrow where it runs, never widen it.
 */
export function placePod(spec: NamespaceOffloadingSpec, pod: PodPlacement): PlacementResult {
  const strategy = spec.podOffloadingStrategy ?? "LocalAndRemote";
  const imposed = strategySelector(strategy, clusterSelectorOf(spec));
  if (!imposed) return { placement: pod };
  const nodeAffinity = pod.affinity?.nodeAffinity;
  const own = nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const required = own?.nodeSelectorTerms?.length ? intersectSelectors(own, imposed) : imposed;
  const tolerations = [...(pod.tolerations ?? [])];
  if (!tolerates(tolerations)) {
    tolerations.push({
      key: VIRTUAL_NODE_TAINT.key,
      operator: "Equal",
      value: VIRTUAL_NODE_TAINT.value,
      effect: VIRTUAL_NODE_TAINT.effect,
    });
  }
  const placement: PodPlacement = {
    affinity: {
      ...(pod.affinity ?? {}),
      nodeAffinity: { ...(nodeAffinity ?? {}), requiredDuringSchedulingIgnoredDuringExecution: required },
    },
    tolerations,
  };
  if (required.nodeSelectorTerms.length === 0) {
    return {
      placement,
      conflict: `the pod's required node affinity leaves no node that podOffloadingStrategy ${strategy} and the namespace's clusterSelector allow`,
    };
  }
  return { placement };
}
