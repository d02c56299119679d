/**
 * The RBAC tenantry installs for worker nodes. The bootstrap bindings are kubeadm's, for
 * tenantry's own bootstrappers group only: its tokens may ask for kubelet client certificates,
 * which kube-controller-manager then approves; Nodes may renew theirs. Tenant users get nothing
 * here: tenantry's authorizer decides what they may do with WorkerNodes and NodeProviders (only
 * their own nodes, only in tenants with `spec.workerNodes`), and admission how many they may have.
 * The requester ClusterRole is for administrators to bind to identities outside any tenant.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import { BOOTSTRAP_GROUP } from "./labels.js";

const managed = { "app.kubernetes.io/managed-by": "tenantry" };

export const WORKER_NODE_REQUESTER_CLUSTER_ROLE = "tenantry:worker-node-requester";

function binding(name: string, role: string, group: string): KubernetesObject {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name, labels: managed },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: group }],
  } as KubernetesObject;
}

export const nodesRbac: readonly KubernetesObject[] = [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: { name: WORKER_NODE_REQUESTER_CLUSTER_ROLE, labels: managed },
    rules: [
      {
        apiGroups: ["tenantry.dev"],
        resources: ["workernodes"],
        verbs: ["get", "list", "watch", "create", "delete", "patch", "update"],
      },
      { apiGroups: ["tenantry.dev"], resources: ["nodeproviders"], verbs: ["get", "list", "watch"] },
    ],
  } as KubernetesObject,
  // Bound nobody: it bound every authenticated user, who could then list everyone's WorkerNodes
  // (owner, tenant, flavor, address). Applied empty so that an older installation's is emptied.
  {
    ...binding("tenantry:worker-node-requesters", WORKER_NODE_REQUESTER_CLUSTER_ROLE, ""),
    subjects: [],
  } as KubernetesObject,
  // kubeadm's kubeadm:kubelet-bootstrap: create and read CSRs.
  binding("tenantry:worker-node-bootstrap", "system:node-bootstrapper", BOOTSTRAP_GROUP),
  // kubeadm's kubeadm:node-autoapprove-bootstrap: kube-controller-manager approves their kubelet client CSRs.
  binding(
    "tenantry:worker-node-autoapprove-bootstrap",
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    BOOTSTRAP_GROUP,
  ),
  // kubeadm's kubeadm:node-autoapprove-certificate-rotation: kubelets renew their own certificates.
  binding(
    "tenantry:worker-node-autoapprove-renewal",
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    "system:nodes",
  ),
];
