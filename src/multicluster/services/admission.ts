/**
 * What tenants may not write about multi-cluster services: ServiceImports, EndpointSlices with
 * the MCS service-name label, and the derived Services that give imports their clusterset IP.
 * They are the controller's; a forged one would answer `<svc>.<ns>.svc.clusterset.local` (CoreDNS
 * reads every ServiceImport and MCS-labelled EndpointSlice) or receive the clusterset IP's traffic
 * in place of the exported Service. Writers allowed: tenantry's controllers, a consumer cluster's
 * tenantry through its peering identity (only in its own tenant's namespaces: RBAC and the
 * authorizer keep it there), cluster administrators, and the garbage collector and namespace
 * controller carrying out deletions. ServiceExports stay open to anyone RBAC lets write them:
 * an export in a namespace that is not offloaded is reported (Valid=False) and goes nowhere.
 */
import {
  IN_TENANT_NAMESPACES,
  isCascadeDeleter,
  isClusterAdmin,
  type Requester,
} from "../../tenants/index.js";
import { type AdmissionCheck, type AdmissionRequest, allow, deny } from "../../webhooks/index.js";
import { MCS_GROUP, MCS_SERVICE_NAME_LABEL } from "../api/mcs.js";
import { PEER_USERNAME_PREFIX } from "../peer-certificates.js";
import { DERIVED_FROM_IMPORT_LABEL } from "./plan.js";

export function mayWriteMulticlusterServices(requester: Requester, controllerUsername: string): boolean {
  const username = requester.username ?? "";
  return (
    (controllerUsername !== "" && username === controllerUsername) ||
    username.startsWith(PEER_USERNAME_PREFIX) ||
    isClusterAdmin(requester) ||
    isCascadeDeleter(requester)
  );
}

function refusal(request: AdmissionRequest, field: string, what: string) {
  const name =
    request.name || (request.object as { metadata?: { name?: string } } | undefined)?.metadata?.name;
  return deny(
    `${field}: ${request.kind.kind} "${name ?? ""}" in namespace "${request.namespace}" ${what}; only tenantry's multi-cluster services controller writes it — export a Service with a ServiceExport instead`,
  );
}

const OPERATIONS = ["CREATE", "UPDATE", "DELETE"] as const;

/** The three checks; `controllerUsername` resolves to whom tenantry's controllers authenticate as. */
export function multiclusterServicesChecks(controllerUsername: () => Promise<string>): AdmissionCheck[] {
  const guard = (field: string, what: string) => async (request: AdmissionRequest) => {
    if (request.subResource) return allow();
    if (mayWriteMulticlusterServices(request.userInfo, await controllerUsername())) return allow();
    return refusal(request, field, what);
  };
  return [
    {
      name: "serviceimports.multicluster.tenantry.dev",
      kind: "validating",
      path: "/validate/service-imports",
      // Fail: a forged import while tenantry is away would answer the clusterset name.
      failurePolicy: "Fail",
      namespaceSelector: IN_TENANT_NAMESPACES,
      rules: [
        {
          apiGroups: [MCS_GROUP],
          apiVersions: ["*"],
          operations: [...OPERATIONS],
          resources: ["serviceimports"],
          scope: "Namespaced",
        },
      ],
      handle: guard("kind", "is a multi-cluster service's import"),
    },
    {
      name: "endpointslices.multicluster.tenantry.dev",
      kind: "validating",
      path: "/validate/multicluster-endpointslices",
      failurePolicy: "Fail",
      namespaceSelector: IN_TENANT_NAMESPACES,
      // Only slices carrying the label (before or after an update) are sent at all.
      objectSelector: { matchExpressions: [{ key: MCS_SERVICE_NAME_LABEL, operator: "Exists" }] },
      rules: [
        {
          apiGroups: ["discovery.k8s.io"],
          apiVersions: ["v1"],
          operations: [...OPERATIONS],
          resources: ["endpointslices"],
          scope: "Namespaced",
        },
      ],
      handle: guard(`metadata.labels[${MCS_SERVICE_NAME_LABEL}]`, "carries imported endpoints"),
    },
    {
      name: "derived-services.multicluster.tenantry.dev",
      kind: "validating",
      path: "/validate/multicluster-derived-services",
      failurePolicy: "Fail",
      namespaceSelector: IN_TENANT_NAMESPACES,
      objectSelector: { matchExpressions: [{ key: DERIVED_FROM_IMPORT_LABEL, operator: "Exists" }] },
      rules: [
        {
          apiGroups: [""],
          apiVersions: ["v1"],
          operations: [...OPERATIONS],
          resources: ["services"],
          scope: "Namespaced",
        },
      ],
      handle: guard(`metadata.labels[${DERIVED_FROM_IMPORT_LABEL}]`, "holds a clusterset IP"),
    },
  ];
}
