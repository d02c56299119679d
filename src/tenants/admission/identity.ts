import { createHash } from "node:crypto";
import { EXEMPT_NAMESPACES } from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";

/** The requester as the API server authenticated it (AdmissionRequest.userInfo). */
export interface Requester {
  username?: string;
  groups?: string[];
}

/** Members of this group bypass authorization in every Kubernetes cluster: cluster administrators. */
export const CLUSTER_ADMIN_GROUP = "system:masters";

/**
 * Identities that delete (and strip finalizers and owner references from) objects on the
 * cluster's behalf: the garbage collector and the namespace controller, under their own service
 * accounts, or as kube-controller-manager itself when it runs without per-controller credentials.
 */
export const CASCADE_DELETERS: readonly string[] = [
  "system:serviceaccount:kube-system:generic-garbage-collector",
  "system:serviceaccount:kube-system:namespace-controller",
  "system:kube-controller-manager",
];

/** Groups that contain every (or every unauthenticated) user: never a sensible tenant owner. */
export const UNIVERSAL_GROUPS: readonly string[] = ["system:authenticated", "system:unauthenticated"];

export interface TenantryIdentity {
  /** The username tenantry's controllers authenticate as; only it may change what they manage. */
  controllerUsername: string;
  /** Namespaces of the cluster and of tenantry itself: never part of a tenant. */
  systemNamespaces: ReadonlySet<string>;
}

export function tenantryIdentity(controllerUsername: string, ownNamespace: string): TenantryIdentity {
  return {
    controllerUsername,
    systemNamespaces: new Set([...EXEMPT_NAMESPACES, ownNamespace]),
  };
}

export function isTenantry(requester: Requester, identity: TenantryIdentity): boolean {
  return requester.username === identity.controllerUsername;
}

export function isClusterAdmin(requester: Requester): boolean {
  return requester.groups?.includes(CLUSTER_ADMIN_GROUP) ?? false;
}

/** tenantry itself or a cluster administrator: may place namespaces in tenants and change what tenantry manages. */
export function isPrivileged(requester: Requester, identity: TenantryIdentity): boolean {
  return isTenantry(requester, identity) || isClusterAdmin(requester);
}

export function isCascadeDeleter(requester: Requester): boolean {
  return CASCADE_DELETERS.includes(requester.username ?? "");
}

const SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:";

/**
 * A component of the cluster rather than a person or a tenant workload: every `system:` user
 * (nodes, scheduler, controller-manager, API server) except service accounts, which count as
 * components only in the system namespaces (where the controllers' accounts live).
 */
export function isSystemComponent(requester: Requester, identity: TenantryIdentity): boolean {
  const username = requester.username ?? "";
  if (!username.startsWith("system:")) return false;
  if (!username.startsWith(SERVICE_ACCOUNT_PREFIX)) return true;
  const namespace = username.slice(SERVICE_ACCOUNT_PREFIX.length).split(":")[0] ?? "";
  return identity.systemNamespaces.has(namespace);
}

export function ownsTenant(tenant: Tenant, requester: Requester): boolean {
  return tenant.spec.owners.some((owner) => {
    switch (owner.kind) {
      case "Group":
        return requester.groups?.includes(owner.name) ?? false;
      default:
        // User and ServiceAccount owners are both matched by username (a ServiceAccount's is
        // `system:serviceaccount:<namespace>:<name>`).
        return owner.name === requester.username;
    }
  });
}

export function ownedTenants(tenants: Tenant[], requester: Requester): Tenant[] {
  return tenants
    .filter((tenant) => ownsTenant(tenant, requester))
    .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
}

const LABEL_VALUE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** The shape of a rewritten value: a readable part and a hash, or the hash alone. */
const REWRITTEN = /(^|-)[0-9a-f]{10}$/;

/**
 * A username as a label value (CloudVeneto CaaS, step 10: every object carries its creator). A name
 * that already is a valid label value is kept as is; any other is made readable (`@` becomes
 * `-at-`, as in `zangrand-at-infn.it`; other characters `_`), cut to fit the 63 characters of a
 * label value, and suffixed with a hash of the full name, so two different names never share a
 * value by being rewritten alike, and a kept name never looks like a rewritten one.
 */
export function userLabelValue(username: string): string {
  // A name shaped like a rewritten one (ending in a 10-hex-digit hash) is rewritten too, so that
  // no user can take the label value another user's name was rewritten to.
  if (LABEL_VALUE.test(username) && !REWRITTEN.test(username)) return username;
  const hash = createHash("sha256").update(username).digest("hex").slice(0, 10);
  const readable = username
    .replace(/@/g, "-at-")
    .replace(/[^A-Za-z0-9_.-]+/g, "_")
    .slice(0, 63 - hash.length - 1)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, "");
  return readable ? `${readable}-${hash}` : hash;
}

/** `"a", "b"` for messages. */
export function quoted(names: readonly string[]): string {
  return names.map((n) => `"${n}"`).join(", ");
}

/** How a requester belongs to a tenant: an owner administers it, a member is listed in spec.users. */
export type TenantRole = "owner" | "member";

export function tenantRole(tenant: Tenant, requester: Requester): TenantRole | undefined {
  if (ownsTenant(tenant, requester)) return "owner";
  if (requester.username && tenant.spec.users?.some((u) => u.name === requester.username)) return "member";
  return undefined;
}

/** Every tenant the requester belongs to, by name, with their role in it. */
export function tenantsOf(tenants: Tenant[], requester: Requester): { tenant: Tenant; role: TenantRole }[] {
  const found: { tenant: Tenant; role: TenantRole }[] = [];
  for (const tenant of tenants) {
    const role = tenantRole(tenant, requester);
    if (role) found.push({ tenant, role });
  }
  return found.sort((a, b) => a.tenant.metadata!.name!.localeCompare(b.tenant.metadata!.name!));
}
