/**
 * The virtual node that stands for a provider cluster in the consumer: its labels, taint,
 * capacity and Ready condition, and the Lease that tells kube-controller-manager it is alive.
 * Pure functions; the peering controller writes what they return.
 */
import type { V1Node, V1NodeCondition, V1OwnerReference, V1Taint } from "@kubernetes/client-node";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { Peering } from "./api/peering.js";

/** Every virtual node carries `tenantry.dev/type=virtual-node`. */
export const NODE_TYPE_LABEL = "tenantry.dev/type";
export const VIRTUAL_NODE_TYPE = "virtual-node";
/** The provider's cluster id, on the virtual node. */
export const REMOTE_CLUSTER_ID_LABEL = "tenantry.dev/remote-cluster-id";
/** The Peering a virtual node or credentials Secret belongs to. */
export const PEERING_LABEL = "tenantry.dev/peering";
/** Only pods that tolerate this taint (offloaded pods) may run on a virtual node. */
export const VIRTUAL_NODE_TAINT: V1Taint = {
  key: "virtual-node.tenantry.dev/not-allowed",
  value: "true",
  effect: "NoExecute",
};
export const NODE_LEASE_NAMESPACE = "kube-node-lease";
export const NODE_LEASE_DURATION_SECONDS = 40;

/** Labels of every node that the provider's labels must not override. */
const HOSTNAME_LABEL = "kubernetes.io/hostname";

export function virtualNodeName(remoteClusterName: string): string {
  return `tenantry-${remoteClusterName}`;
}

export function peeringOwnerReference(peering: Peering): V1OwnerReference {
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "Peering",
    name: peering.metadata!.name!,
    uid: peering.metadata!.uid!,
    controller: true,
  };
}

export function virtualNodeLabels(peering: Peering): Record<string, string> {
  const name = virtualNodeName(peering.spec.remoteClusterName);
  return {
    ...(peering.spec.labels ?? {}),
    [HOSTNAME_LABEL]: name,
    "kubernetes.io/os": "linux",
    [NODE_TYPE_LABEL]: VIRTUAL_NODE_TYPE,
    [REMOTE_CLUSTER_ID_LABEL]: peering.spec.remoteClusterId,
    [PEERING_LABEL]: peering.metadata!.name!,
  };
}

/**
 * The node as first created: taint included, so no pod that does not tolerate it is ever
 * scheduled there, even for a moment. Labels and owner follow by server-side apply.
 */
export function newVirtualNode(peering: Peering): V1Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: virtualNodeName(peering.spec.remoteClusterName),
      labels: virtualNodeLabels(peering),
      ownerReferences: [peeringOwnerReference(peering)],
    },
    spec: { taints: [VIRTUAL_NODE_TAINT] },
  };
}

/** The fields of the node's metadata the controller owns (server-side apply). */
export function virtualNodeMetadata(peering: Peering): V1Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: virtualNodeName(peering.spec.remoteClusterName),
      labels: virtualNodeLabels(peering),
      annotations: { "tenantry.dev/remote-cluster-name": peering.spec.remoteClusterName },
      ownerReferences: [peeringOwnerReference(peering)],
    },
  };
}

export function hasVirtualNodeTaint(node: V1Node): boolean {
  return (node.spec?.taints ?? []).some(
    (t) =>
      t.key === VIRTUAL_NODE_TAINT.key &&
      t.effect === VIRTUAL_NODE_TAINT.effect &&
      t.value === VIRTUAL_NODE_TAINT.value,
  );
}

/**
 * JSON patch that adds the virtual-node taint without touching the others (node taints are an
 * atomic list: applying ours would drop the ones kube-controller-manager sets, such as not-ready).
 */
export function addTaintPatch(node: V1Node): { op: string; path: string; value?: unknown }[] {
  const taints = node.spec?.taints;
  const others = (taints ?? []).filter((t) => t.key !== VIRTUAL_NODE_TAINT.key);
  return [
    { op: "test", path: "/metadata/resourceVersion", value: node.metadata!.resourceVersion },
    taints
      ? { op: "replace", path: "/spec/taints", value: [...others, VIRTUAL_NODE_TAINT] }
      : { op: "add", path: "/spec/taints", value: [VIRTUAL_NODE_TAINT] },
  ];
}

/**
 * What a node's capacity can show of a quota: `cpu`, `memory`, `pods`, extended resources;
 * `requests.x` counts as `x`; limits and object counts have no node equivalent.
 */
export function nodeCapacity(resources: Record<string, string | number>): Record<string, string> {
  const capacity: Record<string, string> = {};
  for (const [name, amount] of Object.entries(resources)) {
    if (name.startsWith("limits.") || name.startsWith("count/")) continue;
    const resource = name.startsWith("requests.") ? name.slice("requests.".length) : name;
    if (resource === "storage" || resource === "persistentvolumeclaims" || resource === "services") continue;
    capacity[resource] = String(amount);
  }
  return capacity;
}

export interface NodeReadiness {
  ready: boolean;
  reason: string;
  message: string;
}

/** The node's Ready condition; the transition time moves only when the status changes. */
export function readyCondition(
  readiness: NodeReadiness,
  previous: V1NodeCondition | undefined,
  now: Date,
): V1NodeCondition {
  const status = readiness.ready ? "True" : "False";
  return {
    type: "Ready",
    status,
    reason: readiness.reason,
    message: readiness.message,
    lastHeartbeatTime: now,
    lastTransitionTime:
      previous && previous.status === status && previous.lastTransitionTime
        ? new Date(previous.lastTransitionTime)
        : now,
  };
}

/** A node's Ready condition: what the virtual node says of its provider's health. */
export function nodeReadyCondition(node: V1Node | undefined): V1NodeCondition | undefined {
  return node?.status?.conditions?.find((c) => c.type === "Ready");
}

/** Status fields the controller owns: capacity, allocatable and the Ready condition. */
export function virtualNodeStatus(
  peering: Peering,
  readiness: NodeReadiness,
  previous: V1Node | undefined,
  now: Date,
): V1Node {
  const capacity = nodeCapacity(peering.spec.resources);
  const previousReady = nodeReadyCondition(previous);
  const ready = readyCondition(readiness, previousReady, now);
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: virtualNodeName(peering.spec.remoteClusterName) },
    status: {
      capacity,
      allocatable: capacity,
      conditions: [
        {
          ...ready,
          lastHeartbeatTime: kubeTime(ready.lastHeartbeatTime!),
          lastTransitionTime: kubeTime(ready.lastTransitionTime!),
        } as unknown as V1NodeCondition,
      ],
    },
  };
}

/**
 * Whether the node's status says something other than what it should (someone else wrote it,
 * or the peering changed), or its heartbeat is older than `heartbeatMs`.
 */
export function nodeStatusStale(
  node: V1Node,
  peering: Peering,
  readiness: NodeReadiness,
  now: Date,
  heartbeatMs: number,
): boolean {
  const ready = nodeReadyCondition(node);
  if (!ready) return true;
  if (ready.status !== (readiness.ready ? "True" : "False")) return true;
  if (ready.reason !== readiness.reason || ready.message !== readiness.message) return true;
  const capacity = nodeCapacity(peering.spec.resources);
  if (!sameMap(node.status?.capacity, capacity) || !sameMap(node.status?.allocatable, capacity)) return true;
  const beat = ready.lastHeartbeatTime ? new Date(ready.lastHeartbeatTime).getTime() : 0;
  return now.getTime() - beat >= heartbeatMs;
}

function sameMap(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const keys = Object.keys(b);
  return Object.keys(a ?? {}).length === keys.length && keys.every((k) => String(a?.[k]) === b[k]);
}

/** The node's Lease in kube-node-lease, renewed at `now` (MicroTime wants six fractional digits). */
export function nodeLease(node: V1Node, now: Date) {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name: node.metadata!.name!,
      namespace: NODE_LEASE_NAMESPACE,
      ownerReferences: [
        { apiVersion: "v1", kind: "Node", name: node.metadata!.name!, uid: node.metadata!.uid! },
      ],
    },
    spec: {
      holderIdentity: node.metadata!.name!,
      leaseDurationSeconds: NODE_LEASE_DURATION_SECONDS,
      renewTime: microTime(now),
    },
  };
}

export function microTime(now: Date): string {
  return now.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

function kubeTime(time: Date | string): string {
  return new Date(time).toISOString().replace(/\.\d+Z$/, "Z");
}
