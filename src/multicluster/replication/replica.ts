/**
 * The Deployment for one combination: the user's template, its selector and pods narrowed to the
 * replica's own label, its pods pinned by required node affinity to the combination's virtual nodes.
 */
import type {
  V1Deployment,
  V1NodeSelector,
  V1NodeSelectorTerm,
  V1OwnerReference,
  V1PodTemplateSpec,
} from "@kubernetes/client-node";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import {
  REPLICA_LABEL,
  REPLICATED_DEPLOYMENT_LABEL,
  type ReplicatedDeployment,
} from "../api/replicated-deployment.js";
import { intersectSelectors, labelSelectorMatches } from "../selectors.js";
import { NODE_TYPE_LABEL, VIRTUAL_NODE_TYPE } from "../virtual-node.js";
import { type Combination, combinationIdentity, replicaName } from "./combinations.js";

/** On every replica Deployment: its combination (see combinationIdentity), for people and for status. */
export const COMBINATION_ANNOTATION = "tenantry.dev/combination";

/** Why a replica cannot be built; the controller reports it for that replica. */
export class ReplicaError extends Error {}

/** The term that pins pods to the combination's nodes: virtual nodes with its label values (or its node). */
export function pinningTerm(combination: Combination): V1NodeSelectorTerm {
  const virtual = { key: NODE_TYPE_LABEL, operator: "In", values: [VIRTUAL_NODE_TYPE] };
  if (combination.node !== undefined) {
    return {
      matchExpressions: [virtual],
      matchFields: [{ key: "metadata.name", operator: "In", values: [combination.node] }],
    };
  }
  return {
    matchExpressions: [
      virtual,
      ...Object.entries(combination.values).map(([key, value]) => ({ key, operator: "In", values: [value] })),
    ],
  };
}

/** Terms with requirements only: an empty term matches no node, so it must not widen an intersection. */
function meaningfulTerms(selector: V1NodeSelector): V1NodeSelector {
  return {
    nodeSelectorTerms: selector.nodeSelectorTerms.filter(
      (t) => (t.matchExpressions?.length ?? 0) + (t.matchFields?.length ?? 0) > 0,
    ),
  };
}

/**
 * The replica pods' required node affinity: every term of the template's own required affinity
 * (absent: one empty term) ANDed with every term of selectedClusters (absent: one empty term),
 * each ANDed with the pinning term. May come out with no terms, when they contradict each other.
 */
export function replicaNodeSelector(
  own: V1NodeSelector | undefined,
  selectedClusters: V1NodeSelector | undefined,
  pin: V1NodeSelectorTerm,
): V1NodeSelector {
  const anyNode: V1NodeSelector = { nodeSelectorTerms: [{}] };
  const pinned = intersectSelectors(selectedClusters ? meaningfulTerms(selectedClusters) : anyNode, {
    nodeSelectorTerms: [pin],
  });
  return intersectSelectors(own ? meaningfulTerms(own) : anyNode, pinned);
}

export function ownerReference(rd: ReplicatedDeployment): V1OwnerReference {
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "ReplicatedDeployment",
    name: rd.metadata!.name!,
    uid: rd.metadata!.uid!,
    controller: true,
    // Foreground deletion of the ReplicatedDeployment waits for its replicas.
    blockOwnerDeletion: true,
  };
}

export interface SpecProblem {
  field: string;
  message: string;
}

/**
 * What the API server's schema cannot check (or what an older schema let through): the selector
 * present, not empty, free of tenantry's own label, and matching the pod template's labels.
 */
export function checkSpec(rd: ReplicatedDeployment): SpecProblem[] {
  const spec = rd.spec?.template?.spec;
  const problems: SpecProblem[] = [];
  const selector = spec?.selector;
  if (!selector) {
    problems.push({ field: "spec.template.spec.selector", message: "Required value" });
  } else {
    const keys = [
      ...Object.keys(selector.matchLabels ?? {}),
      ...(selector.matchExpressions ?? []).map((r) => r.key),
    ];
    if (keys.length === 0) {
      problems.push({
        field: "spec.template.spec.selector",
        message: "must not be empty: give matchLabels or matchExpressions",
      });
    }
    if (keys.includes(REPLICA_LABEL)) {
      problems.push({
        field: "spec.template.spec.selector",
        message: `must not use ${REPLICA_LABEL}: tenantry sets it on each replica`,
      });
    }
  }
  const template = spec?.template;
  if (!template) {
    problems.push({ field: "spec.template.spec.template", message: "Required value" });
  } else if (selector && !labelSelectorMatches(selector, template.metadata?.labels ?? {})) {
    problems.push({
      field: "spec.template.spec.template.metadata.labels",
      message: "must match spec.template.spec.selector",
    });
  }
  return problems;
}

/** The replica Deployment of one combination, as applied (server-side apply owns every field here). */
export function replicaDeployment(rd: ReplicatedDeployment, combination: Combination): V1Deployment {
  const rdName = rd.metadata!.name!;
  const name = replicaName(rdName, combination.hash);
  const { metadata: meta, spec } = rd.spec.template;
  const ownLabels = { [REPLICATED_DEPLOYMENT_LABEL]: rdName, [REPLICA_LABEL]: combination.hash };
  const podTemplate = spec.template as V1PodTemplateSpec;
  const podSpec = podTemplate.spec ?? { containers: [] };
  const nodeAffinity = podSpec.affinity?.nodeAffinity;
  const required = replicaNodeSelector(
    nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
    rd.spec.selectedClusters as V1NodeSelector | undefined,
    pinningTerm(combination),
  );
  if (required.nodeSelectorTerms.length === 0) {
    throw new ReplicaError(
      `the template's own required node affinity and selectedClusters exclude every node of ${combinationIdentity(combination.values, combination.node)}`,
    );
  }
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: {
      name,
      namespace: rd.metadata!.namespace!,
      labels: { ...(meta?.labels ?? {}), ...ownLabels },
      annotations: {
        ...(meta?.annotations ?? {}),
        [COMBINATION_ANNOTATION]: combinationIdentity(combination.values, combination.node),
      },
      ownerReferences: [ownerReference(rd)],
    },
    spec: {
      ...spec,
      selector: {
        ...spec.selector,
        matchLabels: { ...(spec.selector.matchLabels ?? {}), [REPLICA_LABEL]: combination.hash },
      },
      template: {
        ...podTemplate,
        metadata: {
          ...podTemplate.metadata,
          labels: { ...(podTemplate.metadata?.labels ?? {}), ...ownLabels },
        },
        spec: {
          ...podSpec,
          affinity: {
            ...podSpec.affinity,
            nodeAffinity: { ...nodeAffinity, requiredDuringSchedulingIgnoredDuringExecution: required },
          },
        },
      },
    },
  };
}

/** The combination recorded on a replica Deployment, or undefined if the annotation is missing or garbled. */
export function recordedCombination(
  deployment: V1Deployment,
): { values: Record<string, string>; node?: string } | undefined {
  const text = deployment.metadata?.annotations?.[COMBINATION_ANNOTATION];
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as { node?: unknown; labels?: unknown };
    if (typeof parsed.node === "string") return { values: {}, node: parsed.node };
    if (Array.isArray(parsed.labels)) {
      return {
        values: Object.fromEntries(
          parsed.labels.filter(
            (p): p is [string, string] =>
              Array.isArray(p) && p.length === 2 && p.every((s) => typeof s === "string"),
          ),
        ),
      };
    }
  } catch {
    // Garbled: the status simply shows no combination for it.
  }
  return undefined;
}
