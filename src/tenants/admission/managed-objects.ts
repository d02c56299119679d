import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
} from "../../webhooks/index.js";
import { IN_TENANT_NAMESPACES, MANAGED_BY, MANAGED_BY_LABEL } from "../controllers/labels.js";
import type { AdmissionContext, AnyObject } from "./context.js";
import { isCascadeDeleter, isPrivileged, type TenantryIdentity } from "./identity.js";

const MANAGED_FIELD = `metadata.labels[${MANAGED_BY_LABEL}]`;

/**
 * What tenantry keeps in tenant namespaces (owner and user RBAC, the isolation policy, limit
 * ranges, quotas, template objects) changes only through tenantry: the Tenant is the one place
 * to change it. Cluster administrators may still intervene, and the garbage collector and the
 * namespace controller must be able to carry out deletion cascades. Removing the managed-by label
 * is a change like any other, so it cannot be used to take an object out of tenantry's hands.
 */
export function checkManagedObject(request: AdmissionRequest, identity: TenantryIdentity): AdmissionDecision {
  const requester = request.userInfo;
  if (isPrivileged(requester, identity) || isCascadeDeleter(requester)) return allow();
  const before = request.oldObject as AnyObject | undefined;
  if (before?.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) return allow();
  const what = `${request.kind.kind} "${before.metadata?.name ?? request.name}" in namespace "${request.namespace}"`;
  if (request.operation === "DELETE") {
    return deny(`${MANAGED_FIELD}: ${what} is managed by tenantry; only tenantry may delete it`);
  }
  const after = request.object as AnyObject | undefined;
  if (after?.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) {
    return deny(`${MANAGED_FIELD}: ${what} is managed by tenantry; the label cannot be removed or changed`);
  }
  return deny(`${MANAGED_FIELD}: ${what} is managed by tenantry; only tenantry may change it`);
}

export function managedObjectsWebhook(context: AdmissionContext): AdmissionCheck {
  return {
    name: "managed-objects.tenants.tenantry.dev",
    kind: "validating",
    path: "/validate/managed-objects",
    // Fail: deleting or editing tenantry-isolation or tenantry-owners while tenantry is away would
    // open the tenant to other tenants or hand out rights until the controller puts them back.
    failurePolicy: "Fail",
    namespaceSelector: IN_TENANT_NAMESPACES,
    // For UPDATE the API server matches the old object as well as the new one, so removing the
    // label does not take the request out of this webhook's sight.
    objectSelector: { matchLabels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
    rules: [
      {
        apiGroups: ["*"],
        apiVersions: ["*"],
        operations: ["UPDATE", "DELETE"],
        resources: ["*"],
        scope: "Namespaced",
      },
    ],
    handle: async (request) =>
      request.subResource ? allow() : checkManagedObject(request, await context.identity()),
  };
}
