/** Labels, annotations, taints and names the nodes capability writes and reads. */
import { TENANTRY_LABEL_PREFIX } from "../tenants/index.js";

/**
 * Labels no kubelet may set, add, change or remove on its own Node: kube-apiserver's NodeRestriction
 * admission plugin refuses it. What a Node says about who owns it goes here, set by tenantry once
 * the Node is registered, so a node's root (its owner) cannot relabel it.
 */
export const NODE_RESTRICTION_PREFIX = "node-restriction.kubernetes.io/";

/**
 * On a WorkerNode's Node (registered with it by the kubelet; tenantry's admission refuses a node
 * changing it) and bootstrap token Secret: the WorkerNode's name.
 */
export const WORKER_NODE_LABEL = `${TENANTRY_LABEL_PREFIX}worker-node`;
/** On a bootstrap token Secret: the uid of the WorkerNode it was made for. */
export const WORKER_NODE_UID_LABEL = `${TENANTRY_LABEL_PREFIX}worker-node-uid`;
/** On a WorkerNode's Node: `private` or `shared`. */
export const NODE_POLICY_LABEL = `${NODE_RESTRICTION_PREFIX}tenantry-node-policy`;
/** On a WorkerNode's Node: the tenant it counts against. */
export const NODE_TENANT_LABEL = `${NODE_RESTRICTION_PREFIX}tenantry-tenant`;
/** On a private node: its owner's user label value (pods' node affinity keeps others off by it). */
export const NODE_OWNER_LABEL = `${NODE_RESTRICTION_PREFIX}tenantry-node-owner`;
/**
 * The NoSchedule taint of a private node (value: its owner's user label value); its owner's pods
 * get the matching toleration. NodeRestriction refuses a kubelet changing its Node's taints.
 */
export const NODE_OWNER_TAINT = `${TENANTRY_LABEL_PREFIX}node-owner`;
/**
 * Where earlier versions put the owner, policy and tenant on Nodes, where a kubelet could change
 * them: tenantry removes them from its WorkerNodes' Nodes.
 */
export const LEGACY_NODE_LABELS = [
  `${TENANTRY_LABEL_PREFIX}node-owner`,
  `${TENANTRY_LABEL_PREFIX}node-policy`,
  `${TENANTRY_LABEL_PREFIX}tenant`,
] as const;
/** Finalizer: the machine, the Node and the token go before the WorkerNode does. */
export const WORKER_NODE_FINALIZER = `${TENANTRY_LABEL_PREFIX}worker-node`;

/** The group every bootstrap token tenantry issues adds (kube-apiserver requires the prefix). */
export const BOOTSTRAP_GROUP = "system:bootstrappers:tenantry:worker-nodes";
export const BOOTSTRAP_USER_PREFIX = "system:bootstrap:";
/** The signer of kubelet client certificates, which kube-controller-manager approves for bootstrappers. */
export const KUBELET_CLIENT_SIGNER = "kubernetes.io/kube-apiserver-client-kubelet";
export const BOOTSTRAP_TOKEN_SECRET_TYPE = "bootstrap.kubernetes.io/token";
export const BOOTSTRAP_TOKEN_PREFIX = "bootstrap-token-";
export const BOOTSTRAP_NAMESPACE = "kube-system";

/** The taint on a private node: only pods tolerating it, its owner's, are scheduled there. */
export function privateNodeTaint(owner: string): { key: string; value: string; effect: "NoSchedule" } {
  return { key: NODE_OWNER_TAINT, value: owner, effect: "NoSchedule" };
}
