/** Labels, annotations, taints and names the nodes capability writes and reads. */
import { TENANTRY_LABEL_PREFIX } from "../tenants/index.js";

/** On a WorkerNode's Node and bootstrap token Secret: the WorkerNode's name. */
export const WORKER_NODE_LABEL = `${TENANTRY_LABEL_PREFIX}worker-node`;
/** On a bootstrap token Secret: the uid of the WorkerNode it was made for. */
export const WORKER_NODE_UID_LABEL = `${TENANTRY_LABEL_PREFIX}worker-node-uid`;
/** On a WorkerNode's Node: `private` or `shared`. */
export const NODE_POLICY_LABEL = `${TENANTRY_LABEL_PREFIX}node-policy`;
/**
 * On a private node: its owner's user label value. The same key taints it (NoSchedule), and its
 * owner's pods get the matching toleration.
 */
export const NODE_OWNER_LABEL = `${TENANTRY_LABEL_PREFIX}node-owner`;
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
  return { key: NODE_OWNER_LABEL, value: owner, effect: "NoSchedule" };
}
