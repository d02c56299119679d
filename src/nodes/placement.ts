/**
 * Where pods may run once some nodes are private (CloudVeneto CaaS, step 11). A private node carries
 * its owner in a label (NODE_OWNER_LABEL, which its kubelet cannot change) and a NoSchedule taint
 * (NODE_OWNER_TAINT); its owner's pods get the matching toleration and a preference for it. A pod that would tolerate someone else's private node
 * (`operator: Exists` without a key, say) gets required node affinity keeping it to nodes with no
 * owner or with its own, so nobody else's pods ever land there. Pure functions.
 */
import type {
  V1Affinity,
  V1NodeSelectorRequirement,
  V1NodeSelectorTerm,
  V1PreferredSchedulingTerm,
  V1Toleration,
} from "@kubernetes/client-node";
import {
  NODE_OWNER_LABEL,
  NODE_OWNER_TAINT,
  NODE_POLICY_LABEL,
  privateNodeTaint,
  WORKER_NODE_LABEL,
} from "./labels.js";

export interface PodScheduling {
  tolerations?: V1Toleration[];
  affinity?: V1Affinity;
  nodeName?: string;
}

function appliesToNoSchedule(t: V1Toleration): boolean {
  return !t.effect || t.effect === "NoSchedule";
}

/** Whether the toleration lets a pod onto the private nodes of `owner`. */
export function toleratesPrivateNodeOf(t: V1Toleration, owner: string): boolean {
  if (!appliesToNoSchedule(t)) return false;
  if (t.operator === "Exists") return !t.key || t.key === NODE_OWNER_TAINT;
  return t.key === NODE_OWNER_TAINT && (t.value ?? "") === owner;
}

/**
 * The index of the first toleration that would let the pod onto a private node of anyone but
 * `user` (undefined: a pod of nobody in particular), or -1.
 */
export function othersPrivateNodesTolerated(
  tolerations: readonly V1Toleration[] | undefined,
  user?: string,
): number {
  return (tolerations ?? []).findIndex((t) => {
    if (!appliesToNoSchedule(t)) return false;
    if (t.operator === "Exists") return !t.key || t.key === NODE_OWNER_TAINT;
    return t.key === NODE_OWNER_TAINT && (t.value ?? "") !== user;
  });
}

/**
 * The alternatives a pod of `user` may be placed on: nodes that are no worker node, shared worker
 * nodes (once tenantry has labelled them so), and `user`'s own. A private node is kept off from the
 * moment it registers: its kubelet sets WORKER_NODE_LABEL, tenantry the owner and policy labels
 * (which kubelets cannot set) a moment later.
 */
export function allowedOwnerAlternatives(user?: string): V1NodeSelectorRequirement[][] {
  const unowned: V1NodeSelectorRequirement = { key: NODE_OWNER_LABEL, operator: "DoesNotExist" };
  return [
    [unowned, { key: WORKER_NODE_LABEL, operator: "DoesNotExist" }],
    [unowned, { key: NODE_POLICY_LABEL, operator: "In", values: ["shared"] }],
    ...(user ? [[{ key: NODE_OWNER_LABEL, operator: "In", values: [user] }]] : []),
  ];
}

const only = (r: V1NodeSelectorRequirement, key: string, value: string | undefined) =>
  r.key === key &&
  r.operator === "In" &&
  (r.values?.length ?? 0) > 0 &&
  (r.values ?? []).every((v) => v === value);

/** Whether a term of required node affinity keeps its pod to the nodes `user` may use. */
function termKeepsToAllowed(requirements: V1NodeSelectorRequirement[], user?: string): boolean {
  if (requirements.some((r) => only(r, NODE_OWNER_LABEL, user))) return true;
  const unowned = requirements.some((r) => r.key === NODE_OWNER_LABEL && r.operator === "DoesNotExist");
  const noWorkerNode = requirements.some((r) => r.key === WORKER_NODE_LABEL && r.operator === "DoesNotExist");
  return unowned && (noWorkerNode || requirements.some((r) => only(r, NODE_POLICY_LABEL, "shared")));
}

/** Whether the pod's required node affinity already keeps it off other users' private nodes. */
export function excludesOthersPrivateNodes(affinity: V1Affinity | undefined, user?: string): boolean {
  const terms = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms?.length) return false;
  return terms.every((term) => termKeepsToAllowed(term.matchExpressions ?? [], user));
}

/**
 * `affinity` with its required terms narrowed to the nodes `user` may use: each of
 * the pod's own terms (ORed) is combined with each allowed alternative, so the pod can only run
 * where it asked to and where it may.
 */
export function withOwnerExclusion(affinity: V1Affinity | undefined, user?: string): V1Affinity {
  const required = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const own: V1NodeSelectorTerm[] = required?.nodeSelectorTerms?.length ? required.nodeSelectorTerms : [{}];
  const terms = own.flatMap((term) =>
    allowedOwnerAlternatives(user).map((requirements) => ({
      ...term,
      matchExpressions: [...(term.matchExpressions ?? []), ...requirements],
    })),
  );
  return {
    ...(affinity ?? {}),
    nodeAffinity: {
      ...(affinity?.nodeAffinity ?? {}),
      requiredDuringSchedulingIgnoredDuringExecution: { ...(required ?? {}), nodeSelectorTerms: terms },
    },
  };
}

const PREFERENCE_WEIGHT = 100;

function ownerPreference(user: string): V1PreferredSchedulingTerm {
  return {
    weight: PREFERENCE_WEIGHT,
    preference: { matchExpressions: [{ key: NODE_OWNER_LABEL, operator: "In", values: [user] }] },
  };
}

/**
 * What a pod of `user` looks like once placed: the toleration of their own private nodes and a
 * preference for them when they have any, and the owner exclusion when its tolerations would
 * reach other users' private nodes. Returns undefined when nothing changes.
 */
export function placePod(
  pod: PodScheduling,
  user: string | undefined,
  ownsPrivateNodes: boolean,
): { tolerations?: V1Toleration[]; affinity?: V1Affinity } | undefined {
  let tolerations = pod.tolerations;
  let affinity = pod.affinity;
  let changed = false;
  if (user && ownsPrivateNodes) {
    if (!(tolerations ?? []).some((t) => toleratesPrivateNodeOf(t, user))) {
      const taint = privateNodeTaint(user);
      tolerations = [
        ...(tolerations ?? []),
        { key: taint.key, operator: "Equal", value: taint.value, effect: taint.effect },
      ];
      changed = true;
    }
    const preferred = affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
    const prefersOwn = preferred.some((p) =>
      (p.preference.matchExpressions ?? []).some(
        (r) => r.key === NODE_OWNER_LABEL && r.operator === "In" && (r.values ?? []).includes(user),
      ),
    );
    if (!prefersOwn) {
      affinity = {
        ...(affinity ?? {}),
        nodeAffinity: {
          ...(affinity?.nodeAffinity ?? {}),
          preferredDuringSchedulingIgnoredDuringExecution: [...preferred, ownerPreference(user)],
        },
      };
      changed = true;
    }
  }
  if (othersPrivateNodesTolerated(tolerations, user) >= 0 && !excludesOthersPrivateNodes(affinity, user)) {
    affinity = withOwnerExclusion(affinity, user);
    changed = true;
  }
  if (!changed) return undefined;
  return { ...(tolerations ? { tolerations } : {}), ...(affinity ? { affinity } : {}) };
}

/**
 * Why the pod may not be admitted as it is (with the field), or undefined: it tolerates other
 * users' private nodes without the exclusion, or names one in spec.nodeName.
 */
export function placementViolation(
  pod: PodScheduling,
  user: string | undefined,
  ownerOfNode: (name: string) => string | undefined,
): string | undefined {
  if (pod.nodeName) {
    const owner = ownerOfNode(pod.nodeName);
    if (owner !== undefined && owner !== user) {
      return `spec.nodeName: node "${pod.nodeName}" is a private worker node of another user; only its owner's pods run there`;
    }
  }
  const index = othersPrivateNodesTolerated(pod.tolerations, user);
  if (index >= 0 && !pod.nodeName && !excludesOthersPrivateNodes(pod.affinity, user)) {
    return `spec.tolerations[${index}]: tolerates the taint ${NODE_OWNER_TAINT} of other users' private worker nodes, and the pod's required node affinity does not keep it off them (tenantry adds to every term, when it can, that the node is no worker node, a shared one, or ${user ? `"${user}"'s own` : "nobody's"})`;
  }
  return undefined;
}
