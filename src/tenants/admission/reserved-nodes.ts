import {
  type AdmissionDecision,
  type AdmissionRequest,
  type AdmissionWebhook,
  allow,
  deny,
} from "../../webhooks/index.js";
import { IN_TENANT_NAMESPACES } from "../controllers/labels.js";
import type { AdmissionContext, AnyObject } from "./context.js";
import { isClusterAdmin, isTenantry, type Requester, type TenantryIdentity } from "./identity.js";

/**
 * Nodes reserved for runtimes carry this taint (effect NoSchedule): only the pods of workloads
 * tenantry itself applies — a RuntimeService's pods, placed by its `spec.pods` — may tolerate it.
 * A tenant's own pod, Deployment, Job or any other pod template that tolerates it is refused, so a
 * tenant cannot put its code on a node meant to run only what a RuntimeService defines.
 */
export const RUNTIMES_NODE_TAINT_KEY = "runtimes.tenantry.dev/reserved";

interface Toleration {
  key?: string;
  operator?: string;
}

interface PodSpecLike {
  tolerations?: Toleration[];
}

/** Where each kind keeps its pod spec, as a JSON path for messages and a getter. */
const POD_SPECS: Record<string, { path: string; of: (object: AnyObject) => PodSpecLike | undefined }> = {
  Pod: { path: "spec", of: (o) => spec(o) },
  PodTemplate: {
    path: "template.spec",
    of: (o) => (o as { template?: { spec?: PodSpecLike } }).template?.spec,
  },
  CronJob: {
    path: "spec.jobTemplate.spec.template.spec",
    of: (o) => templateSpec((spec(o) as { jobTemplate?: AnyObject } | undefined)?.jobTemplate),
  },
};
const TEMPLATE = { path: "spec.template.spec", of: templateSpec };

function spec(object: AnyObject | undefined): PodSpecLike | undefined {
  return (object as { spec?: PodSpecLike } | undefined)?.spec;
}

function templateSpec(object: AnyObject | undefined): PodSpecLike | undefined {
  return (spec(object) as { template?: { spec?: PodSpecLike } } | undefined)?.template?.spec;
}

/** A toleration that tolerates the reserved taint: its key, or no key with Exists (every taint). */
export function toleratesReservedTaint(toleration: Toleration): boolean {
  if (toleration.key === RUNTIMES_NODE_TAINT_KEY) return true;
  return !toleration.key && toleration.operator === "Exists";
}

/**
 * Who may write pod templates that tolerate the taint: tenantry, cluster administrators, and the
 * cluster's own controllers (kube-controller-manager, in kube-system), which only copy templates
 * that were admitted here.
 */
function mayTolerate(requester: Requester, identity: TenantryIdentity): boolean {
  const username = requester.username ?? "";
  return (
    isTenantry(requester, identity) ||
    isClusterAdmin(requester) ||
    username === "system:kube-controller-manager" ||
    username.startsWith("system:serviceaccount:kube-system:")
  );
}

export function checkReservedTolerations(
  request: AdmissionRequest,
  identity: TenantryIdentity,
): AdmissionDecision {
  if (mayTolerate(request.userInfo, identity)) return allow();
  const object = request.object as AnyObject | undefined;
  const kind = request.kind.kind;
  const where = POD_SPECS[kind] ?? TEMPLATE;
  const tolerations = where.of(object as AnyObject)?.tolerations ?? [];
  const index = tolerations.findIndex(toleratesReservedTaint);
  if (index < 0) return allow();
  return deny(
    `${where.path}.tolerations[${index}]: only workloads tenantry applies for a RuntimeService may tolerate the taint ${RUNTIMES_NODE_TAINT_KEY} (nodes reserved for runtimes); ${kind} "${object?.metadata?.name ?? request.name ?? ""}" in namespace "${request.namespace}" is refused`,
  );
}

export function reservedNodesWebhook(context: AdmissionContext): AdmissionWebhook {
  const rule = (apiGroup: string, resources: string[]) => ({
    apiGroups: [apiGroup],
    apiVersions: ["*"],
    operations: ["CREATE" as const, "UPDATE" as const],
    resources,
    scope: "Namespaced" as const,
  });
  return {
    name: "reserved-nodes.tenants.tenantry.dev",
    kind: "validating",
    path: "/validate/reserved-nodes",
    // Fail: a tenant pod let through while tenantry is away would run on a node reserved for runtimes.
    failurePolicy: "Fail",
    namespaceSelector: IN_TENANT_NAMESPACES,
    rules: [
      rule("", ["pods", "pods/ephemeralcontainers", "podtemplates", "replicationcontrollers"]),
      rule("apps", ["deployments", "statefulsets", "replicasets", "daemonsets"]),
      rule("batch", ["jobs", "cronjobs"]),
    ],
    handle: async (request) => {
      if (request.subResource && request.subResource !== "ephemeralcontainers") return allow();
      return checkReservedTolerations(request, await context.identity());
    },
  };
}
