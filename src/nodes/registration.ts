/**
 * What a WorkerNode's Node carries, and what its kubelet may do to it. The owner of a WorkerNode
 * has root on the machine, hence its kubelet certificate (`system:node:<name>`): whatever the
 * kubelet may write about its Node, the owner may. kube-apiserver's NodeRestriction keeps a kubelet
 * from changing its taints and from setting `node-restriction.kubernetes.io/` labels; tenantry's
 * admission keeps it from registering without its taints or with labels tenantry did not give it
 * (another tenant's node pool selector, say), and from relabelling itself later. Pure functions.
 */
import type { V1Node, V1Taint } from "@kubernetes/client-node";
import type { Tenant } from "../tenants/index.js";
import { userLabelValue } from "../tenants/index.js";
import type { WorkerNode } from "./api/worker-node.js";
import {
  NODE_OWNER_LABEL,
  NODE_POLICY_LABEL,
  NODE_RESTRICTION_PREFIX,
  NODE_TENANT_LABEL,
  privateNodeTaint,
  WORKER_NODE_LABEL,
} from "./labels.js";

const HOSTNAME_LABEL = "kubernetes.io/hostname";

/** The labels a kubelet sets about its own machine (NodeRestriction's list, as kubelet 1.33 has it). */
const KUBELET_LABELS = new Set([
  HOSTNAME_LABEL,
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
  "node.kubernetes.io/instance-type",
  "beta.kubernetes.io/instance-type",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
]);
const KUBELET_LABEL_NAMESPACES = ["kubelet.kubernetes.io", "node.kubernetes.io"];

function labelNamespace(key: string): string {
  const slash = key.indexOf("/");
  return slash < 0 ? "" : key.slice(0, slash);
}

const inNamespace = (namespace: string, domain: string) =>
  namespace === domain || namespace.endsWith(`.${domain}`);

/** A label the kubelet sets about its machine itself (hostname, OS, architecture, zone, …). */
export function isKubeletLabel(key: string): boolean {
  const namespace = labelNamespace(key);
  return KUBELET_LABELS.has(key) || KUBELET_LABEL_NAMESPACES.some((n) => inNamespace(namespace, n));
}

/**
 * Whether NodeRestriction lets a kubelet set this label on its Node: nothing under
 * `node-restriction.kubernetes.io/`, and of the kubernetes.io and k8s.io namespaces only its own.
 */
export function kubeletMaySet(key: string): boolean {
  const namespace = labelNamespace(key);
  if (inNamespace(namespace, NODE_RESTRICTION_PREFIX.slice(0, -1))) return false;
  const kubernetes = inNamespace(namespace, "kubernetes.io") || inNamespace(namespace, "k8s.io");
  return !kubernetes || isKubeletLabel(key);
}

export interface NodeRegistration {
  /** What the kubelet registers its Node with (`--node-labels`). */
  kubeletLabels: Record<string, string>;
  /** What tenantry sets once the Node exists: labels no kubelet may set (owner, tenant, policy). */
  tenantryLabels: Record<string, string>;
  /** What the kubelet registers with (`--register-with-taints`) and tenantry keeps. */
  taints: V1Taint[];
}

/** The labels and taints of a WorkerNode's Node: its tenant's node pool, its name, and whose it is. */
export function nodeRegistration(node: WorkerNode, tenant: Tenant | undefined): NodeRegistration {
  const labels: Record<string, string> = {
    // The tenant's node pool selector first: its pods may then use the node too.
    ...(tenant?.spec.nodePool?.nodeSelector ?? {}),
    [WORKER_NODE_LABEL]: node.metadata!.name!,
    [NODE_POLICY_LABEL]: node.spec.policy,
    ...(node.spec.tenant ? { [NODE_TENANT_LABEL]: node.spec.tenant } : {}),
  };
  const taints: V1Taint[] = [];
  if (node.spec.policy === "private" && node.spec.owner) {
    const owner = userLabelValue(node.spec.owner);
    labels[NODE_OWNER_LABEL] = owner;
    taints.push(privateNodeTaint(owner));
  }
  const entries = Object.entries(labels);
  return {
    kubeletLabels: Object.fromEntries(entries.filter(([key]) => kubeletMaySet(key))),
    tenantryLabels: Object.fromEntries(entries.filter(([key]) => !kubeletMaySet(key))),
    taints,
  };
}

const sameTaint = (a: V1Taint, b: V1Taint) =>
  a.key === b.key && (a.value ?? "") === (b.value ?? "") && a.effect === b.effect;

const describeTaint = (t: V1Taint) => `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`;

/**
 * Why a WorkerNode's kubelet may not register its Node like this (naming the field), or undefined:
 * it carries its WorkerNode's name, every label is the kubelet's own (the hostname being the node's
 * name) or one tenantry gave it with that value, and every taint tenantry gave it is there.
 */
export function registrationViolation(node: V1Node, registration: NodeRegistration): string | undefined {
  const name = node.metadata?.name ?? "";
  // From registration on, this label keeps other users' pods off until tenantry labels the owner.
  if (node.metadata?.labels?.[WORKER_NODE_LABEL] !== name) {
    return `metadata.labels[${WORKER_NODE_LABEL}]: worker node "${name}" registers with its own name there`;
  }
  for (const [key, value] of Object.entries(node.metadata?.labels ?? {})) {
    if (key === HOSTNAME_LABEL) {
      if (value !== name)
        return `metadata.labels[${key}]: "${value}" is not the node's own name "${name}"; worker node "${name}" registers as itself`;
      continue;
    }
    if (isKubeletLabel(key) || registration.kubeletLabels[key] === value) continue;
    const given = Object.entries(registration.kubeletLabels).map(([k, v]) => `${k}=${v}`);
    return `metadata.labels[${key}]: worker node "${name}" registers only with the labels tenantry gave it (${given.join(", ") || "none"}) and the kubelet's own`;
  }
  const taints = node.spec?.taints ?? [];
  const missing = registration.taints.find((wanted) => !taints.some((t) => sameTaint(t, wanted)));
  if (missing) {
    return `spec.taints: worker node "${name}" registers with the taint ${describeTaint(missing)} tenantry gave it`;
  }
  return undefined;
}

/**
 * Why a WorkerNode's kubelet may not change its Node like this, or undefined: of its labels it may
 * change only the kubelet's own (not the hostname), and none of its taints.
 */
export function nodeUpdateViolation(before: V1Node, after: V1Node): string | undefined {
  const name = after.metadata?.name ?? "";
  const old = before.metadata?.labels ?? {};
  const now = after.metadata?.labels ?? {};
  const changed = [...new Set([...Object.keys(old), ...Object.keys(now)])].filter(
    (key) => old[key] !== now[key],
  );
  const forbidden = changed.find((key) => key === HOSTNAME_LABEL || !isKubeletLabel(key));
  if (forbidden) {
    return `metadata.labels[${forbidden}]: worker node "${name}" may not ${forbidden in now ? (forbidden in old ? "change" : "add") : "remove"} it; tenantry sets its labels`;
  }
  const oldTaints = before.spec?.taints ?? [];
  const newTaints = after.spec?.taints ?? [];
  const same =
    oldTaints.length === newTaints.length && oldTaints.every((t) => newTaints.some((n) => sameTaint(t, n)));
  if (!same) return `spec.taints: worker node "${name}" may not change its own taints`;
  return undefined;
}
