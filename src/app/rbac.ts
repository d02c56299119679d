/**
 * What tenantry may do in the cluster, capability by capability: the one place the chart's
 * ClusterRole and Role are generated from (`npx tsx scripts/generate-crds.ts` writes them into
 * deploy/helm/tenantry/rbac/). A rule is here because code of that capability makes the call.
 */
import { stringify } from "yaml";
import { ALL_CRDS } from "./crds.js";

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

const READ = ["get", "list", "watch"];
const MANAGE = [...READ, "create", "update", "patch", "delete"];
const TENANTRY_GROUP = "tenantry.dev";

/**
 * tenantry's own resources — every CRD it installs — each with its status (written by the
 * controllers) and finalizers (owner references). From the CRD list itself, so a new kind is
 * never left out of the chart's ClusterRole.
 */
const OWN_RESOURCES = [...new Set(ALL_CRDS.map((crd) => crd.spec.names.plural))].sort();

/** Cluster-wide rules, by the capability that needs them. */
export const CLUSTER_RULES: Record<string, PolicyRule[]> = {
  /** Installs and upgrades its CRDs at start (the chart installs them first; applying again is a no-op). */
  crds: [{ apiGroups: ["apiextensions.k8s.io"], resources: ["customresourcedefinitions"], verbs: MANAGE }],
  /** Every controller: its resources, their status, and owner references that block deletion. */
  resources: [
    {
      apiGroups: [TENANTRY_GROUP],
      resources: OWN_RESOURCES.flatMap((r) => [r, `${r}/status`, `${r}/finalizers`]),
      verbs: MANAGE,
    },
  ],
  /** Registers its webhooks (Service and CA bundle) at start. */
  webhooks: [
    {
      apiGroups: ["admissionregistration.k8s.io"],
      resources: ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"],
      verbs: MANAGE,
    },
  ],
  /**
   * Tenants: their namespaces and what the templates put in them (quotas, limits, network
   * policies, service accounts, config), and the admission webhooks' informers.
   */
  tenants: [
    { apiGroups: [""], resources: ["namespaces"], verbs: MANAGE },
    {
      apiGroups: [""],
      resources: [
        "configmaps",
        "secrets",
        "serviceaccounts",
        "services",
        "resourcequotas",
        "limitranges",
        "persistentvolumeclaims",
        "pods",
        "replicationcontrollers",
      ],
      verbs: MANAGE,
    },
    { apiGroups: ["networking.k8s.io"], resources: ["networkpolicies"], verbs: MANAGE },
    { apiGroups: ["networking.k8s.io"], resources: ["ingresses", "ingressclasses"], verbs: READ },
    { apiGroups: ["storage.k8s.io"], resources: ["storageclasses"], verbs: MANAGE },
    { apiGroups: ["scheduling.k8s.io"], resources: ["priorityclasses"], verbs: READ },
    { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
    { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
  ],
  /**
   * Access: tenant owners' roles and bindings. Binding a role the Tenant names, and writing the
   * roles tenantry defines, needs `bind` and `escalate`: the API server refuses both otherwise.
   */
  access: [
    {
      apiGroups: ["rbac.authorization.k8s.io"],
      resources: ["clusterroles", "clusterrolebindings", "roles", "rolebindings"],
      verbs: [...MANAGE, "bind", "escalate"],
    },
    { apiGroups: ["authorization.k8s.io"], resources: ["subjectaccessreviews"], verbs: ["create"] },
    { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
  ],
  /** The tenant gateway forwards each call as its caller. */
  gateway: [
    {
      apiGroups: [""],
      resources: ["users", "groups", "serviceaccounts"],
      verbs: ["impersonate"],
    },
    {
      apiGroups: ["authentication.k8s.io"],
      resources: ["uids", "userextras/scopes"],
      verbs: ["impersonate"],
    },
  ],
  /** Multi-cluster: offloaded namespaces, reflected pods and deployments, virtual nodes. */
  multicluster: [
    {
      apiGroups: ["apps"],
      resources: ["deployments", "replicasets", "statefulsets", "daemonsets"],
      verbs: MANAGE,
    },
    { apiGroups: [""], resources: ["nodes", "nodes/status", "pods/status"], verbs: MANAGE },
    { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: MANAGE },
    /** Multi-cluster services: the imported EndpointSlices of every ServiceImport. */
    { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: MANAGE },
    /** Multi-cluster services: exports read and their conditions written, imports made. */
    {
      apiGroups: ["multicluster.x-k8s.io"],
      resources: ["serviceexports", "serviceexports/status", "serviceimports", "serviceimports/status"],
      verbs: MANAGE,
    },
    /** Approves its peers' renewals of their client certificates (reading the requests is the nodes' rule). */
    {
      apiGroups: ["certificates.k8s.io"],
      resources: ["signers"],
      resourceNames: ["kubernetes.io/kube-apiserver-client"],
      verbs: ["approve"],
    },
  ],
  /** Worker nodes on demand: bootstrap tokens, node client certificates, draining. */
  nodes: [
    { apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] },
    { apiGroups: ["certificates.k8s.io"], resources: ["certificatesigningrequests"], verbs: READ },
    {
      apiGroups: ["certificates.k8s.io"],
      resources: ["certificatesigningrequests/approval"],
      verbs: ["update"],
    },
    {
      apiGroups: ["certificates.k8s.io"],
      resources: ["signers"],
      resourceNames: ["kubernetes.io/kube-apiserver-client-kubelet"],
      verbs: ["approve"],
    },
  ],
  /** Storage: pooled volumes bound to tenants' claims. */
  storage: [
    { apiGroups: [""], resources: ["persistentvolumes"], verbs: MANAGE },
    { apiGroups: ["snapshot.storage.k8s.io"], resources: ["volumesnapshots"], verbs: READ },
  ],
};

/** Rules in tenantry's own namespace only. */
export const NAMESPACE_RULES: Record<string, PolicyRule[]> = {
  /** Leader election of the controllers. */
  leaderElection: [{ apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: MANAGE }],
};

export function flatten(rules: Record<string, PolicyRule[]>): PolicyRule[] {
  return Object.values(rules).flat();
}

/** Files written into the chart: its ClusterRole's and Role's rules (the templates include them). */
export const RBAC_MANIFEST_DIR = "deploy/helm/tenantry/rbac";

export const RBAC_MANIFEST_HEADER =
  "# Generated from src/app/rbac.ts by `npx tsx scripts/generate-crds.ts`. Edit the rules there, not this file.\n";

export function rbacManifests(): { file: string; content: string }[] {
  return [
    {
      file: "cluster-rules.yaml",
      content: RBAC_MANIFEST_HEADER + stringify(flatten(CLUSTER_RULES), { aliasDuplicateObjects: false }),
    },
    {
      file: "namespace-rules.yaml",
      content: RBAC_MANIFEST_HEADER + stringify(flatten(NAMESPACE_RULES), { aliasDuplicateObjects: false }),
    },
  ];
}
