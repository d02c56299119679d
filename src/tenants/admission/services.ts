import { type AdmissionCheck, allow, deny } from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { IN_TENANT_NAMESPACES } from "../controllers/labels.js";
import type { AdmissionContext, AnyObject } from "./context.js";

export interface Service extends AnyObject {
  spec?: { type?: string; externalIPs?: string[] };
}

/**
 * NodePort, LoadBalancer and ExternalName Services reach beyond the tenant's namespaces (node
 * ports on every node, external load balancers, arbitrary DNS names), as do externalIPs: each
 * only where spec.allowed says so. Only what a change introduces is judged, so a Service created
 * while its type was allowed keeps working after the tenant's rules tighten.
 */
export function serviceViolations(service: Service, before: Service | undefined, tenant: Tenant): string[] {
  const name = tenant.metadata!.name!;
  const allowedTypes = tenant.spec.allowed?.serviceTypes ?? ["ClusterIP"];
  const type = service.spec?.type ?? "ClusterIP";
  const violations: string[] = [];
  const typeChanged = !before || (before.spec?.type ?? "ClusterIP") !== type;
  if (type !== "ClusterIP" && typeChanged && !allowedTypes.includes(type as (typeof allowedTypes)[number])) {
    violations.push(
      `spec.type: ${type} services are not allowed in tenant "${name}" (spec.allowed.serviceTypes: ${allowedTypes.join(", ")})`,
    );
  }
  const previous = new Set(before?.spec?.externalIPs ?? []);
  const added = (service.spec?.externalIPs ?? []).filter((ip) => !previous.has(ip));
  if (added.length && !tenant.spec.allowed?.externalIPs) {
    violations.push(
      `spec.externalIPs: external IPs are not allowed in tenant "${name}" (spec.allowed.externalIPs is false)`,
    );
  }
  return violations;
}

export function serviceWebhook(context: AdmissionContext): AdmissionCheck {
  const { lookup } = context;
  return {
    name: "services.tenants.tenantry.dev",
    kind: "validating",
    path: "/validate/services",
    // Fail: a NodePort or an external IP let through would expose the tenant outside its network
    // isolation (or intercept other tenants' traffic to that IP).
    failurePolicy: "Fail",
    namespaceSelector: IN_TENANT_NAMESPACES,
    rules: [
      {
        apiGroups: [""],
        apiVersions: ["v1"],
        operations: ["CREATE", "UPDATE"],
        resources: ["services"],
        scope: "Namespaced",
      },
    ],
    async handle(request) {
      if (request.subResource || !request.namespace) return allow();
      const tenant = await lookup.tenantOfNamespace(request.namespace);
      if (!tenant) return allow();
      const violations = serviceViolations(
        request.object as Service,
        request.oldObject as Service | undefined,
        tenant,
      );
      return violations.length ? deny(violations.join("; ")) : allow();
    },
  };
}
