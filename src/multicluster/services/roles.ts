/**
 * Kubernetes' namespace roles extended to the MCS API (ClusterRole aggregation): whoever may edit
 * a namespace may export its Services; whoever may view it sees exports and imports. Writing
 * ServiceImports is nobody's through these roles (see admission.ts).
 */
import type { V1ClusterRole } from "@kubernetes/client-node";
import { MCS_GROUP } from "../api/mcs.js";

const READ = ["get", "list", "watch"];

export const MCS_CLUSTER_ROLES: readonly V1ClusterRole[] = [
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: "tenantry:multicluster-services:edit",
      labels: {
        "rbac.authorization.k8s.io/aggregate-to-admin": "true",
        "rbac.authorization.k8s.io/aggregate-to-edit": "true",
        "app.kubernetes.io/part-of": "tenantry",
      },
    },
    rules: [
      {
        apiGroups: [MCS_GROUP],
        resources: ["serviceexports"],
        verbs: [...READ, "create", "update", "patch", "delete"],
      },
      { apiGroups: [MCS_GROUP], resources: ["serviceimports"], verbs: READ },
    ],
  },
  {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    metadata: {
      name: "tenantry:multicluster-services:view",
      labels: {
        "rbac.authorization.k8s.io/aggregate-to-view": "true",
        "app.kubernetes.io/part-of": "tenantry",
      },
    },
    rules: [{ apiGroups: [MCS_GROUP], resources: ["serviceexports", "serviceimports"], verbs: READ }],
  },
];
