/**
 * Where pods may run once some nodes are private (document 001, step 11). A private node carries
 * its owner in a label and a NoSchedule taint of the same key; its owner's pods get the matching
 * toleration and a preference for it. A pod that would tolerate someone else's private node
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
import { NODE_OWNER_LABEL, privateNodeTaint } from "./labels.js";

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
  if (t.operator === "Exists") return !t.key || t.key === NODE_OWNER_LABEL;
  return t.key === NODE_OWNER_LABEL && (t.value ?? "") === owner;
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
    if (t.operator === "Exists") return !t.key || t.key === NODE_OWNER_LABEL;
    return t.key === NODE_OWNER_LABEL && (t.value ?? "") !== user;
  });
}

/** The alternatives a pod of `user` may be placed on: nodes with no owner, or owned by `user`. */
export function allowedOwnerRequirements(user?: string): V1NodeSelectorRequirement[] {
  return [
    { key: NODE_OWNER_LABEL, operator: "DoesNotExist" },
    ...(user ? [{ key: NODE_OWNER_LABEL, operator: "In", values: [user] }] : []),
  ];
}

function isAllowedOwnerRequirement(r: V1NodeSelectorRequirement, user?: string): boolean {
  if (r.key !== NODE_OWNER_LABEL) return false;
  if (r.operator === "DoesNotExist") return true;
  return r.operator === "In" && (r.values?.length ?? 0) > 0 && (r.values ?? []).every((v) => v === user);
}

/** Whether the pod's required node affinity already keeps it off other users' private nodes. */
export function excludesOthersPrivateNodes(affinity: V1Affinity | undefined, user?: string): boolean {
  const terms = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms?.length) return false;
  return terms.every((term) => (term.matchExpressions ?? []).some((r) => isAllowedOwnerRequirement(r, user)));
}

/**
 * `affinity` with its required terms narrowed to nodes with no owner or owned by `user`: each of
 * the pod's own terms (ORed) is combined with each allowed alternative, so the pod can only run
 * where it asked to and where it may.
 */
export function withOwnerExclusion(affinity: V1Affinity | undefined, user?: string): V1Affinity {
  const required = affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const own: V1NodeSelectorTerm[] = required?.nodeSelectorTerms?.length ? required.nodeSelectorTerms : [{}];
  const terms = own.flatMap((term) =>
    allowedOwnerRequirements(user).map((requirement) => ({
      ...term,
      matchExpressions: [...(term.matchExpressions ?? []), requirement],
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
    return `spec.tolerations[${index}]: tolerates the taint ${NODE_OWNER_LABEL} of other users' private worker nodes, and the pod's required node affinity does not keep it off them (tenantry adds "${NODE_OWNER_LABEL} DoesNotExist" or "In [${user ?? ""}]" to every term when it can)`;
  }
  return undefined;
}
