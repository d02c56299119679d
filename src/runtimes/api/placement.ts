/**
 * Where a runtime's objects live, decided from its user, service, instance and the service's
 * namespace mode alone, so that every Admin API replica and the controller agree without asking
 * anyone (idempotent starts: the same request always names the same object).
 */
import { createHash } from "node:crypto";
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  NAMESPACE_ISOLATION,
  NETWORK_ISOLATION_LABEL,
  RUNTIME_USER_ANNOTATION,
  TENANT_LABEL,
} from "../../tenants/index.js";
import { DEFAULT_RUNTIMES_NAMESPACE, type NamespaceMode } from "./runtime-service.js";

export interface RuntimeKey {
  user: string;
  service: string;
  instance: string;
}

export interface RuntimePlacement {
  /** Namespace of the Runtime object and of everything its plugin deploys. */
  namespace: string;
  /** Name of the Runtime object, and the prefix of the objects its plugin deploys. */
  name: string;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_LABEL = 63;

function digest(text: string, length: number): string {
  return createHash("sha256").update(text).digest("hex").slice(0, length);
}

/**
 * A DNS-label form of a user name, distinct for distinct names: a name that is already a short
 * DNS label stays as it is; any other gets a readable stem and a digest of the whole name.
 */
export function userSlug(user: string, maxLength = 24): string {
  if (DNS_LABEL.test(user) && user.length <= maxLength && !/^u-.*-[0-9a-f]{8}$/.test(user)) return user;
  const stem = user
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, maxLength - 11)
    .replace(/-+$/g, "");
  return `u-${stem ? `${stem}-` : ""}${digest(user, 8)}`.replace(/^u--/, "u-");
}

/** `text` as a DNS label of at most `max` characters: cut, with a digest where it was cut. */
export function fitLabel(text: string, max = MAX_LABEL): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max - 9).replace(/-+$/g, "")}-${digest(text, 8)}`;
}

/**
 * Segregated: namespace `<tenant>-rt-<user>` per user, objects `<service>-<instance>` (DNS
 * `service-instance.namespace`). Combined: one runtimes namespace, objects
 * `<user>-<service>-<instance>`.
 */
export function runtimePlacement(
  key: RuntimeKey & { tenant: string },
  mode: NamespaceMode = "Segregated",
  runtimesNamespace: string = DEFAULT_RUNTIMES_NAMESPACE,
): RuntimePlacement {
  if (mode === "Combined") {
    return {
      namespace: runtimesNamespace,
      name: fitLabel(`${userSlug(key.user)}-${key.service}-${key.instance}`),
    };
  }
  return {
    namespace: fitLabel(`${key.tenant}-rt-${userSlug(key.user)}`),
    name: fitLabel(`${key.service}-${key.instance}`),
  };
}

/**
 * Annotations of a user's (segregated) runtimes namespace: whose it is. The tenants capability
 * makes it theirs (their RBAC only, the owners' per the tenant's spec.runtimeAccess) and tenantry's
 * authorizer keeps the tenant's other members out unless an AccessGrant lets them in.
 */
export function runtimeNamespaceAnnotations(user: string): Record<string, string> {
  return { [RUNTIME_USER_ANNOTATION]: user };
}

/**
 * Labels of a runtimes namespace: a user's (segregated) one belongs to their tenant — its quota,
 * admission policies and isolation apply — and is isolated on its own (only itself and the
 * runtimes proxy reach it); the combined one belongs to no tenant, and enforces the baseline Pod
 * Security Standard itself.
 */
export function runtimeNamespaceLabels(tenant: string | undefined): Record<string, string> {
  return {
    [MANAGED_BY_LABEL]: MANAGED_BY,
    ...(tenant
      ? { [TENANT_LABEL]: tenant, [NETWORK_ISOLATION_LABEL]: NAMESPACE_ISOLATION }
      : { "pod-security.kubernetes.io/enforce": "baseline" }),
  };
}
