/**
 * Pods across the peering: the spec a provider can run for a local pod bound to a virtual node,
 * and the local status that shows what the remote pod does (tenantry is the virtual node's
 * kubelet). Pure functions.
 */
import type {
  V1Container,
  V1Node,
  V1NodeAffinity,
  V1NodeSelectorTerm,
  V1Pod,
  V1PodCondition,
  V1PodSpec,
  V1PodStatus,
  V1PreferredSchedulingTerm,
} from "@kubernetes/client-node";
import { termMatches } from "../selectors.js";
import { VIRTUAL_NODE_TAINT } from "../virtual-node.js";
import {
  ORIGIN_UID_ANNOTATION,
  originLabels,
  REFLECTED_CONDITION,
  withoutLocalAnnotations,
} from "./labels.js";

/** Labels every node has, the provider's too: requirements on them still mean something there. */
const UNIVERSAL_NODE_LABELS = new Set(["kubernetes.io/os", "kubernetes.io/arch"]);
/** The service-account token volume the consumer's admission added; the provider adds its own. */
const TOKEN_VOLUME_PREFIX = "kube-api-access-";

export interface RemotePodOptions {
  /** The virtual node the pod is bound to. */
  node: V1Node;
  remoteNamespace: string;
  originClusterId: string;
  /** Whether the remote namespace has the pod's service account (irrelevant for `default`). */
  serviceAccountExists: boolean;
}

/** The pod to create in the provider for `local`: same name, origin labels, spec it can run. */
export function remotePod(local: V1Pod, options: RemotePodOptions): V1Pod {
  const metadata = local.metadata!;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: metadata.name!,
      namespace: options.remoteNamespace,
      labels: { ...(metadata.labels ?? {}), ...originLabels(options.originClusterId, metadata.namespace!) },
      annotations: {
        ...withoutLocalAnnotations(metadata.annotations),
        [ORIGIN_UID_ANNOTATION]: metadata.uid!,
      },
    },
    spec: remotePodSpec(local.spec!, options.node, options.serviceAccountExists),
  };
}

/**
 * The spec without what ties it to the consumer: the binding to the virtual node and what led the
 * scheduler there (toleration, node-selector entries and affinity requirements on the virtual
 * node's labels), the consumer's service-account token volume, a service account the provider
 * lacks, and fields the consumer's admission computed (priority, overhead) that the provider's
 * admission recomputes and would refuse if they differ.
 */
export function remotePodSpec(spec: V1PodSpec, node: V1Node, serviceAccountExists: boolean): V1PodSpec {
  const {
    nodeName: _nodeName,
    priority: _priority,
    overhead: _overhead,
    serviceAccount: _serviceAccount,
    ephemeralContainers: _ephemeralContainers,
    ...rest
  } = spec;
  const localKeys = virtualNodeLabelKeys(node);
  const tokenVolumes = new Set(
    (spec.volumes ?? [])
      .filter((v) => v.projected && v.name.startsWith(TOKEN_VOLUME_PREFIX))
      .map((v) => v.name),
  );
  const result: V1PodSpec = {
    ...rest,
    containers: spec.containers.map((c) => withoutMounts(c, tokenVolumes)),
  };
  if (spec.initContainers)
    result.initContainers = spec.initContainers.map((c) => withoutMounts(c, tokenVolumes));
  const volumes = (spec.volumes ?? []).filter((v) => !tokenVolumes.has(v.name));
  if (volumes.length) result.volumes = volumes;
  else delete result.volumes;
  const tolerations = (spec.tolerations ?? []).filter((t) => t.key !== VIRTUAL_NODE_TAINT.key);
  if (tolerations.length) result.tolerations = tolerations;
  else delete result.tolerations;
  const nodeSelector = Object.fromEntries(
    Object.entries(spec.nodeSelector ?? {}).filter(([key]) => !localKeys.has(key)),
  );
  if (Object.keys(nodeSelector).length) result.nodeSelector = nodeSelector;
  else delete result.nodeSelector;
  const nodeAffinity = spec.affinity?.nodeAffinity && remoteNodeAffinity(spec.affinity.nodeAffinity, node);
  if (spec.affinity) {
    const { nodeAffinity: _local, ...otherAffinity } = spec.affinity;
    const affinity = nodeAffinity ? { ...otherAffinity, nodeAffinity } : otherAffinity;
    if (Object.keys(affinity).length) result.affinity = affinity;
    else delete result.affinity;
  }
  if (spec.serviceAccountName && spec.serviceAccountName !== "default" && !serviceAccountExists) {
    delete result.serviceAccountName;
  }
  return result;
}

/** Label keys that describe the virtual node (the provider's cluster), not the provider's nodes. */
export function virtualNodeLabelKeys(node: V1Node): Set<string> {
  return new Set(Object.keys(node.metadata?.labels ?? {}).filter((key) => !UNIVERSAL_NODE_LABELS.has(key)));
}

function withoutMounts(container: V1Container, volumes: Set<string>): V1Container {
  if (!container.volumeMounts) return container;
  const volumeMounts = container.volumeMounts.filter((m) => !volumes.has(m.name));
  const { volumeMounts: _all, ...rest } = container;
  return volumeMounts.length ? { ...rest, volumeMounts } : rest;
}

/**
 * Node affinity for the provider. Of the required terms (ORed) only those the virtual node
 * matches brought the pod here; each keeps its requirements on other labels (they still hold on
 * the provider's nodes). A term left with no requirement means "anywhere", so the whole required
 * part goes. Preferences lose their requirements on the virtual node's labels. `matchFields`
 * name consumer nodes and go too. Undefined when nothing is left.
 */
export function remoteNodeAffinity(affinity: V1NodeAffinity, node: V1Node): V1NodeAffinity | undefined {
  const localKeys = virtualNodeLabelKeys(node);
  const strip = (term: V1NodeSelectorTerm): V1NodeSelectorTerm | undefined => {
    const matchExpressions = (term.matchExpressions ?? []).filter((r) => !localKeys.has(r.key));
    return matchExpressions.length ? { matchExpressions } : undefined;
  };
  const result: V1NodeAffinity = {};
  const required = affinity.requiredDuringSchedulingIgnoredDuringExecution;
  if (required) {
    const terms = required.nodeSelectorTerms.filter((term) => termMatches(term, node)).map(strip);
    if (terms.length && terms.every((t) => t !== undefined)) {
      result.requiredDuringSchedulingIgnoredDuringExecution = {
        nodeSelectorTerms: terms as V1NodeSelectorTerm[],
      };
    }
  }
  const preferred = (affinity.preferredDuringSchedulingIgnoredDuringExecution ?? []).flatMap(
    (p): V1PreferredSchedulingTerm[] => {
      const preference = strip(p.preference);
      return preference ? [{ weight: p.weight, preference }] : [];
    },
  );
  if (preferred.length) result.preferredDuringSchedulingIgnoredDuringExecution = preferred;
  return Object.keys(result).length ? result : undefined;
}

/** The part of a local pod's status tenantry owns (and compares before writing). */
export type OwnedPodStatus = Pick<
  V1PodStatus,
  | "phase"
  | "conditions"
  | "reason"
  | "message"
  | "hostIP"
  | "hostIPs"
  | "podIP"
  | "podIPs"
  | "startTime"
  | "containerStatuses"
  | "initContainerStatuses"
>;

const REMOTE_STATUS_FIELDS = [
  "phase",
  "reason",
  "message",
  "hostIP",
  "hostIPs",
  "podIP",
  "podIPs",
  "startTime",
  "containerStatuses",
  "initContainerStatuses",
] as const;

/**
 * The local status showing the remote pod: phase, conditions, IPs, start time and container
 * statuses (restarts, readiness, state) as the provider reports them, plus the Reflected
 * condition naming where the pod runs.
 */
export function reflectedStatus(
  remote: V1Pod,
  local: V1Pod,
  where: { peering: string; remoteNamespace: string },
  now: Date,
): OwnedPodStatus {
  const status: OwnedPodStatus = {};
  const source = withoutNulls(remote.status ?? {}) as V1PodStatus;
  for (const field of REMOTE_STATUS_FIELDS) {
    if (source[field] !== undefined) (status as Record<string, unknown>)[field] = source[field];
  }
  status.phase ??= "Pending";
  const reflected = ownCondition(
    local,
    {
      type: REFLECTED_CONDITION,
      status: "True",
      reason: "RemotePodCreated",
      message: `runs in cluster ${where.peering} as ${where.remoteNamespace}/${remote.metadata!.name}`,
    },
    now,
  );
  status.conditions = [...(source.conditions ?? []).filter((c) => c.type !== REFLECTED_CONDITION), reflected];
  return status;
}

/**
 * The local status of a reflected pod whose provider does not answer: what was last reflected,
 * but not Ready, as Kubernetes marks the pods of a node that stopped reporting, so that Services
 * stop sending traffic to it until the provider is back.
 */
export function unreachableStatus(local: V1Pod, message: string, now: Date): OwnedPodStatus {
  const status: OwnedPodStatus = {};
  const source = withoutNulls(local.status ?? {}) as V1PodStatus;
  // Every field tenantry owns is sent again: an apply that left one out would remove it.
  for (const field of REMOTE_STATUS_FIELDS) {
    if (source[field] !== undefined) (status as Record<string, unknown>)[field] = source[field];
  }
  status.conditions = [
    ...(source.conditions ?? []).filter((c) => c.type !== "Ready"),
    ownCondition(local, { type: "Ready", status: "False", reason: "NodeNotReady", message }, now),
  ];
  return status;
}

/**
 * The local status of a pod that does not run in the provider yet: Pending, Ready False with the
 * reason (e.g. the provider refused it: its message, so `kubectl describe` tells the user why).
 */
export function pendingStatus(local: V1Pod, reason: string, message: string, now: Date): OwnedPodStatus {
  return {
    phase: "Pending",
    reason,
    message,
    conditions: [
      ownCondition(local, { type: "Ready", status: "False", reason, message }, now),
      ownCondition(local, { type: "ContainersReady", status: "False", reason, message }, now),
    ],
  };
}

/** A condition whose transition time moves only when its status does. */
function ownCondition(
  local: V1Pod,
  condition: Pick<V1PodCondition, "type" | "status" | "reason" | "message">,
  now: Date,
): V1PodCondition {
  const previous = local.status?.conditions?.find((c) => c.type === condition.type);
  const since =
    previous?.status === condition.status && previous.lastTransitionTime
      ? String(previous.lastTransitionTime)
      : kubeTime(now);
  return { ...condition, lastTransitionTime: since as unknown as Date };
}

/**
 * Whether the local pod's status already shows `desired` (so writing it would change nothing).
 * Timestamps are compared as the API server prints them.
 */
export function statusShows(local: V1Pod, desired: OwnedPodStatus): boolean {
  const current = (local.status ?? {}) as Record<string, unknown>;
  const wanted = desired as Record<string, unknown>;
  for (const field of REMOTE_STATUS_FIELDS) {
    if (!sameJson(current[field], wanted[field])) return false;
  }
  const conditions = local.status?.conditions ?? [];
  return (desired.conditions ?? []).every((wanted) => {
    const found = conditions.find((c) => c.type === wanted.type);
    return found !== undefined && sameJson(withoutNulls(found), withoutNulls(wanted));
  });
}

/** Whether tenantry recorded that the remote pod was created (see {@link REFLECTED_CONDITION}). */
export function wasReflected(local: V1Pod): boolean {
  return (local.status?.conditions ?? []).some((c) => c.type === REFLECTED_CONDITION && c.status === "True");
}

/** Labels and images the remote pod should have but does not (the only parts of a pod that can change). */
export function remotePodDrift(remote: V1Pod, desired: V1Pod): V1Pod | undefined {
  const labels = Object.fromEntries(
    Object.entries(desired.metadata?.labels ?? {}).filter(
      ([key, value]) => remote.metadata?.labels?.[key] !== value,
    ),
  );
  const images = (desired.spec?.containers ?? []).filter(
    (c) => remote.spec?.containers.find((r) => r.name === c.name)?.image !== c.image,
  );
  if (!Object.keys(labels).length && !images.length) return undefined;
  const patch: V1Pod = { metadata: {} };
  if (Object.keys(labels).length) patch.metadata!.labels = labels;
  if (images.length) patch.spec = { containers: images.map((c) => ({ name: c.name, image: c.image })) };
  return patch;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(normalize(a)) === JSON.stringify(normalize(b));
}

/** Dates as the API server prints them, keys sorted, nulls dropped: comparable JSON. */
function normalize(value: unknown): unknown {
  if (value instanceof Date) return kubeTime(value);
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== null && v !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, normalize(v)]),
    );
  }
  return value;
}

/** Server-side apply reads `null` as "remove": status copied from the provider must not carry any. */
function withoutNulls<T>(value: T): T {
  return normalize(value) as T;
}

function kubeTime(time: Date): string {
  return time.toISOString().replace(/\.\d+Z$/, "Z");
}
