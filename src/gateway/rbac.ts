import type { KubernetesObject } from "@kubernetes/client-node";
import { CLIENT_CA_CONFIGMAP } from "./authentication.js";

export const GATEWAY_CLUSTER_ROLE = "tenantry:gateway";

/**
 * What the gateway's own identity needs: impersonate any caller (users, groups, uids, extras and
 * service accounts), read the kinds it filters for tenant users, review tokens that no tenantry
 * identity provider issued, and read the client CA the API server trusts.
 */
export const gatewayClusterRole: KubernetesObject = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRole",
  metadata: { name: GATEWAY_CLUSTER_ROLE, labels: { "app.kubernetes.io/managed-by": "tenantry" } },
  rules: [
    { apiGroups: [""], resources: ["users", "groups", "serviceaccounts"], verbs: ["impersonate"] },
    { apiGroups: ["authentication.k8s.io"], resources: ["uids", "userextras"], verbs: ["impersonate"] },
    { apiGroups: [""], resources: ["namespaces", "nodes"], verbs: ["get", "list", "watch"] },
    { apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: ["get", "list", "watch"] },
    { apiGroups: ["networking.k8s.io"], resources: ["ingressclasses"], verbs: ["get", "list", "watch"] },
    { apiGroups: ["scheduling.k8s.io"], resources: ["priorityclasses"], verbs: ["get", "list", "watch"] },
    { apiGroups: ["node.k8s.io"], resources: ["runtimeclasses"], verbs: ["get", "list", "watch"] },
    {
      apiGroups: ["tenantry.dev"],
      resources: ["workernodes", "nodeproviders"],
      verbs: ["get", "list", "watch"],
    },
    { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
    {
      apiGroups: [""],
      resources: ["configmaps"],
      resourceNames: [CLIENT_CA_CONFIGMAP.name],
      verbs: ["get"],
    },
  ],
} as KubernetesObject;
