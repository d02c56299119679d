import { type AdmissionCheck, type AdmissionRequest, allow, deny } from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import { IN_TENANT_NAMESPACES } from "../controllers/labels.js";
import type { AdmissionContext, AnyObject } from "./context.js";
import { quoted } from "./identity.js";

/** Tenant.spec.allowed.{storage,ingress,priority}Classes. */
export interface AllowedClasses {
  names?: string[];
  regex?: string;
}

/** Unset allows every class; set allows the listed names and names matching regex. */
export function classAllowed(rule: AllowedClasses | undefined, name: string): boolean {
  if (!rule) return true;
  if (rule.names?.includes(name)) return true;
  if (!rule.regex) return false;
  try {
    return new RegExp(rule.regex).test(name);
  } catch {
    // Tenant validation refuses regexes that do not compile; one that slipped in matches nothing.
    return false;
  }
}

export function describeAllowedClasses(rule: AllowedClasses): string {
  const parts: string[] = [];
  if (rule.names?.length) parts.push(`names ${quoted(rule.names)}`);
  if (rule.regex) parts.push(`names matching ${rule.regex}`);
  return parts.length ? parts.join(" or ") : "none";
}

/**
 * The message for a class the tenant may not use, or undefined. With a restriction in place a
 * class must be named: an empty one would bind whatever the cluster defaults to, or nothing.
 */
export function classViolation(
  field: string,
  what: string,
  ruleField: string,
  rule: AllowedClasses | undefined,
  name: string | undefined,
  tenant: string,
): string | undefined {
  if (!rule) return;
  if (!name) {
    return `${field}: a ${what} is required in tenant "${tenant}" (${ruleField}: ${describeAllowedClasses(rule)})`;
  }
  if (classAllowed(rule, name)) return;
  return `${field}: ${what} "${name}" is not allowed in tenant "${tenant}" (${ruleField}: ${describeAllowedClasses(rule)})`;
}

export function storageClassViolation(
  field: string,
  name: string | undefined,
  tenant: Tenant,
): string | undefined {
  return classViolation(
    field,
    "storage class",
    "spec.allowed.storageClasses",
    tenant.spec.allowed?.storageClasses,
    name,
    tenant.metadata!.name!,
  );
}

const INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class";

interface PersistentVolumeClaim extends AnyObject {
  spec?: { storageClassName?: string };
}

interface Ingress extends AnyObject {
  spec?: { ingressClassName?: string };
}

/** Storage class of a PersistentVolumeClaim, ingress class of an Ingress, on creation and when changed. */
export function checkClasses(request: AdmissionRequest, tenant: Tenant): string | undefined {
  const tenantName = tenant.metadata!.name!;
  if (request.resource.resource === "persistentvolumeclaims") {
    const claim = request.object as PersistentVolumeClaim;
    const before = request.oldObject as PersistentVolumeClaim | undefined;
    const name = claim.spec?.storageClassName;
    if (before && before.spec?.storageClassName === name) return;
    return storageClassViolation("spec.storageClassName", name, tenant);
  }
  if (request.resource.resource === "ingresses") {
    const classOf = (ingress: Ingress | undefined) =>
      ingress?.spec?.ingressClassName ?? ingress?.metadata?.annotations?.[INGRESS_CLASS_ANNOTATION];
    const ingress = request.object as Ingress;
    const name = classOf(ingress);
    if (request.oldObject && classOf(request.oldObject as Ingress) === name) return;
    const field = ingress.spec?.ingressClassName
      ? "spec.ingressClassName"
      : ingress.metadata?.annotations?.[INGRESS_CLASS_ANNOTATION]
        ? `metadata.annotations[${INGRESS_CLASS_ANNOTATION}]`
        : "spec.ingressClassName";
    return classViolation(
      field,
      "ingress class",
      "spec.allowed.ingressClasses",
      tenant.spec.allowed?.ingressClasses,
      name,
      tenantName,
    );
  }
  return;
}

export function classWebhook(context: AdmissionContext): AdmissionCheck {
  const { lookup, ingressHosts } = context;
  return {
    name: "classes.tenants.tenantry.dev",
    kind: "validating",
    path: "/validate/classes",
    // Fail: storage and ingress classes decide which storage backends and which ingress
    // controllers (and so which networks) a tenant reaches; an Ingress's hosts, whose traffic.
    failurePolicy: "Fail",
    namespaceSelector: IN_TENANT_NAMESPACES,
    rules: [
      {
        apiGroups: [""],
        apiVersions: ["v1"],
        operations: ["CREATE", "UPDATE"],
        resources: ["persistentvolumeclaims"],
        scope: "Namespaced",
      },
      {
        apiGroups: ["networking.k8s.io"],
        apiVersions: ["v1"],
        operations: ["CREATE", "UPDATE"],
        resources: ["ingresses"],
        scope: "Namespaced",
      },
    ],
    async handle(request) {
      if (request.subResource || !request.namespace) return allow();
      const tenant = await lookup.tenantOfNamespace(request.namespace);
      if (!tenant) return allow();
      const message =
        checkClasses(request, tenant) ??
        (request.resource.resource === "ingresses"
          ? await ingressHosts.check(request, tenant.metadata!.name!)
          : undefined);
      return message ? deny(message) : allow();
    },
  };
}
