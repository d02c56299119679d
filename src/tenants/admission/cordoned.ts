import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
} from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { CORDONED_LABEL, TENANT_LABEL } from "../controllers/labels.js";
import type { AdmissionContext } from "./context.js";
import { isCascadeDeleter, isPrivileged, isSystemComponent, type TenantryIdentity } from "./identity.js";

export function cordonedMessage(tenant: string): string {
  return `metadata.namespace: tenant "${tenant}" is cordoned (spec.cordoned): nothing new may be created in its namespaces`;
}

export function cordonedChangeMessage(tenant: string, operation: string): string {
  const verb = operation === "DELETE" ? "deleted" : operation === "CREATE" ? "created" : "changed";
  return `metadata.namespace: tenant "${tenant}" is cordoned (spec.cordoned): nothing in its namespaces may be ${verb} by its users until it is uncordoned`;
}

/** Requests a cordon never holds back: records the cluster writes constantly, and reviews nothing stores. */
function alwaysLetThrough(request: AdmissionRequest): boolean {
  const { group, resource } = request.resource;
  return (
    resource === "events" ||
    (group === "events.k8s.io" && resource === "events") ||
    group === "authorization.k8s.io" ||
    group === "authentication.k8s.io"
  );
}

/**
 * A cordoned tenant is frozen for its users (Capsule's spec.cordoned): creating, changing and
 * deleting anything in its namespaces is refused, subresources included. tenantry, cluster
 * administrators and the cluster's own components (controllers, the scheduler, kubelets, the
 * garbage collector) go on, so what runs keeps running.
 */
export function checkCordoned(
  request: AdmissionRequest,
  tenant: Tenant | undefined,
  identity: TenantryIdentity,
): AdmissionDecision {
  const requester = request.userInfo;
  if (!tenant?.spec.cordoned || alwaysLetThrough(request)) return allow();
  if (
    isPrivileged(requester, identity) ||
    isSystemComponent(requester, identity) ||
    isCascadeDeleter(requester)
  )
    return allow();
  return deny(cordonedChangeMessage(tenant.metadata!.name!, request.operation));
}

/**
 * Called only for the namespaces of cordoned tenants: the tenant controller labels them, so that
 * the requests of every other tenant never wait on this webhook. The tenant itself is read again,
 * so uncordoning takes effect before the label is gone.
 */
export function cordonedWebhook(context: AdmissionContext): AdmissionCheck {
  const { lookup } = context;
  return {
    name: "cordoned.tenants.tenantry.dev",
    kind: "validating",
    path: "/validate/cordoned",
    // Fail: a cordon is what an administrator relies on while investigating a tenant.
    failurePolicy: "Fail",
    ownEntry: "only the namespaces of cordoned tenants are selected, and only for tenants' users",
    namespaceSelector: {
      matchExpressions: [
        { key: TENANT_LABEL, operator: "Exists" },
        { key: CORDONED_LABEL, operator: "In", values: ["true"] },
      ],
    },
    // Whom a cordon never holds back, decided by the API server: the cluster's components and its
    // administrators go on even while tenantry is away.
    matchConditions: [
      {
        name: "not-a-cluster-component",
        expression:
          "!(request.userInfo.username.startsWith('system:') && !request.userInfo.username.startsWith('system:serviceaccount:')) && !request.userInfo.username.startsWith('system:serviceaccount:kube-system:')",
      },
      {
        name: "not-a-cluster-administrator",
        expression: "!has(request.userInfo.groups) || !('system:masters' in request.userInfo.groups)",
      },
    ],
    rules: [
      {
        apiGroups: ["*"],
        apiVersions: ["*"],
        operations: ["CREATE", "UPDATE", "DELETE"],
        resources: ["*/*"],
        scope: "Namespaced",
      },
    ],
    async handle(request) {
      if (!request.namespace) return allow();
      const identity = await context.identity();
      if (isPrivileged(request.userInfo, identity) || isSystemComponent(request.userInfo, identity))
        return allow();
      return checkCordoned(request, await lookup.tenantOfNamespace(request.namespace), identity);
    },
  };
}
