import { isDeepStrictEqual } from "node:util";
import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
  setLabelsPatch,
} from "../../webhooks/index.js";
import { TENANTRY_LABEL_PREFIX } from "../api/group.js";
import type { Tenant } from "../api/tenant.js";
import {
  MANAGED_BY_LABEL,
  NAMESPACE_ORIGIN_LABEL,
  POD_SECURITY_ENFORCE_LABEL,
  RUNTIME_USER_ANNOTATION,
  TENANT_LABEL,
} from "../controllers/labels.js";
import { declaredNamespaceName } from "../controllers/render.js";
import type { AdmissionContext, AnyObject } from "./context.js";
import {
  isCascadeDeleter,
  isPrivileged,
  ownedTenants,
  ownsTenant,
  quoted,
  type Requester,
  type TenantryIdentity,
} from "./identity.js";

const POD_SECURITY_PREFIX = "pod-security.kubernetes.io/";
const ADMINS = "tenantry and cluster administrators (system:masters)";

const labelField = (key: string) => `metadata.labels[${key}]`;

function podSecurityLevel(tenant: Tenant): string {
  return tenant.spec.podSecurity?.level ?? "baseline";
}

/** Requests on these namespaces are never judged: the cluster's own and tenantry's own. */
function exempt(name: string | undefined, identity: TenantryIdentity): boolean {
  return name !== undefined && identity.systemNamespaces.has(name);
}

/**
 * The labels an owner's new namespace gets: the tenant it joins (the one they own, or the one
 * they named with the tenant label when they own several), origin `owner`, and the tenant's
 * pod-security level from the first moment. Anyone else's namespace is left alone.
 */
export function mutateNamespaceCreate(
  namespace: AnyObject,
  requester: Requester,
  tenants: Tenant[],
  identity: TenantryIdentity,
): AdmissionDecision {
  const name = namespace.metadata?.name;
  if (exempt(name, identity) || isPrivileged(requester, identity)) return allow();
  const owned = ownedTenants(tenants, requester);
  if (owned.length === 0) return allow();
  const requested = namespace.metadata?.labels?.[TENANT_LABEL];
  const ownedNames = owned.map((t) => t.metadata!.name!);
  let tenant: Tenant | undefined;
  if (requested) {
    tenant = owned.find((t) => t.metadata!.name === requested);
    if (!tenant) {
      return deny(
        `${labelField(TENANT_LABEL)}: "${requested}" is not a tenant you own (you own ${quoted(ownedNames)})`,
      );
    }
  } else if (owned.length === 1) {
    tenant = owned[0]!;
  } else {
    return deny(
      `${labelField(TENANT_LABEL)}: you own tenants ${quoted(ownedNames)}: set this label to the one namespace "${name}" joins`,
    );
  }
  return allow(
    setLabelsPatch(namespace, {
      [TENANT_LABEL]: tenant.metadata!.name!,
      [NAMESPACE_ORIGIN_LABEL]: "owner",
      [POD_SECURITY_ENFORCE_LABEL]: podSecurityLevel(tenant),
    }),
  );
}

export type NamespaceCreateCheck =
  | { allowed: false; message: string }
  /** `tenant` when an owner's namespace joins it and counts against its namespaceQuota. */
  | { allowed: true; tenant?: Tenant };

/**
 * Everything about a new namespace except the quota: who may put it in a tenant, with which
 * labels, under which name. Runs on the final object, after every mutation.
 */
export function checkNamespaceCreate(
  namespace: AnyObject,
  requester: Requester,
  tenants: Tenant[],
  identity: TenantryIdentity,
): NamespaceCreateCheck {
  const name = namespace.metadata?.name ?? "";
  if (exempt(name, identity) || isPrivileged(requester, identity)) return { allowed: true };
  const refuse = (message: string): NamespaceCreateCheck => ({ allowed: false, message });
  const labels = namespace.metadata?.labels ?? {};
  for (const t of tenants) {
    const declared = (t.spec.namespaces ?? []).some(
      (d) => declaredNamespaceName(t.metadata!.name!, d.name) === name,
    );
    if (declared) {
      return refuse(
        `metadata.name: "${name}" is reserved for spec.namespaces of tenant "${t.metadata!.name}"`,
      );
    }
  }
  const owned = ownedTenants(tenants, requester);
  const requested = labels[TENANT_LABEL];
  if (!requested) {
    if (owned.length) {
      return refuse(
        `${labelField(TENANT_LABEL)}: a namespace created by an owner of ${quoted(owned.map((t) => t.metadata!.name!))} joins one of those tenants`,
      );
    }
    const reserved = Object.keys(labels).find((key) => key.startsWith(TENANTRY_LABEL_PREFIX));
    if (reserved) {
      return refuse(
        `${labelField(reserved)}: only tenant owners, ${ADMINS} may set labels under tenantry.dev/`,
      );
    }
    return { allowed: true };
  }
  const tenant = tenants.find((t) => t.metadata!.name === requested);
  if (!tenant) return refuse(`${labelField(TENANT_LABEL)}: tenant "${requested}" does not exist`);
  if (!ownsTenant(tenant, requester)) {
    return refuse(
      `${labelField(TENANT_LABEL)}: only owners of tenant "${requested}", ${ADMINS} may put a namespace into it`,
    );
  }
  if (labels[NAMESPACE_ORIGIN_LABEL] !== "owner") {
    return refuse(
      `${labelField(NAMESPACE_ORIGIN_LABEL)}: a namespace created by an owner has origin "owner", not "${labels[NAMESPACE_ORIGIN_LABEL] ?? ""}"`,
    );
  }
  const level = podSecurityLevel(tenant);
  if (labels[POD_SECURITY_ENFORCE_LABEL] !== level) {
    return refuse(
      `${labelField(POD_SECURITY_ENFORCE_LABEL)}: tenant "${requested}" enforces "${level}" (spec.podSecurity.level)`,
    );
  }
  if (tenant.spec.cordoned) {
    return refuse(
      `${labelField(TENANT_LABEL)}: tenant "${requested}" is cordoned (spec.cordoned): no new namespaces`,
    );
  }
  if ((namespace.metadata?.ownerReferences ?? []).length > 0) {
    // Any other owner would keep the namespace alive after its tenant is deleted (garbage
    // collection waits for every owner); tenantry makes the tenant its one owner.
    return refuse(
      `metadata.ownerReferences: a namespace of tenant "${requested}" is owned by that tenant alone (tenantry sets it); remove ownerReferences`,
    );
  }
  const prefix = tenant.spec.namespacePrefix;
  if (prefix && !name.startsWith(prefix)) {
    return refuse(
      `metadata.name: "${name}" must start with "${prefix}" (spec.namespacePrefix of tenant "${requested}")`,
    );
  }
  // A runtimes namespace is one user's: an owner who made it first would have set it up for themselves.
  if (name.startsWith(`${requested}-rt-`)) {
    return refuse(
      `metadata.name: names "${requested}-rt-…" are kept for the runtimes namespaces of tenant "${requested}"'s users, which tenantry creates`,
    );
  }
  if (namespace.metadata?.annotations?.[RUNTIME_USER_ANNOTATION] !== undefined) {
    return refuse(
      `metadata.annotations[${RUNTIME_USER_ANNOTATION}]: only tenantry marks a namespace as a user's runtimes namespace`,
    );
  }
  return { allowed: true, tenant };
}

export function namespaceQuotaMessage(tenant: string, used: number, quota: number): string {
  return `${labelField(TENANT_LABEL)}: tenant "${tenant}" has no namespace quota left: its owners created ${used} namespaces and spec.namespaceQuota is ${quota}`;
}

function changedKeys(
  before: Record<string, string> | undefined,
  after: Record<string, string> | undefined,
  relevant: (key: string) => boolean,
): string[] {
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  return [...keys].filter((key) => relevant(key) && before?.[key] !== after?.[key]).sort();
}

/**
 * Changes to an existing namespace. A namespace outside every tenant cannot be put into one
 * (nor given any tenantry.dev/ label); a tenant namespace cannot be moved, and only its owners
 * may change it, never the labels, annotations and owner references tenantry set on it. Users
 * who own no tenant and touch no tenantry label are left to RBAC.
 */
export function checkNamespaceUpdate(
  before: AnyObject,
  after: AnyObject,
  requester: Requester,
  tenant: Tenant | undefined,
  identity: TenantryIdentity,
): string | undefined {
  const name = before.metadata?.name;
  if (exempt(name, identity) || isPrivileged(requester, identity) || isCascadeDeleter(requester)) return;
  const oldLabels = before.metadata?.labels;
  const newLabels = after.metadata?.labels;
  const tenantName = oldLabels?.[TENANT_LABEL];
  if (!tenantName) {
    const reserved = changedKeys(oldLabels, newLabels, (key) => key.startsWith(TENANTRY_LABEL_PREFIX));
    if (reserved.includes(TENANT_LABEL)) {
      return `${labelField(TENANT_LABEL)}: namespace "${name}" belongs to no tenant; only ${ADMINS} may put it into one`;
    }
    if (reserved.length) {
      return `${labelField(reserved[0]!)}: only ${ADMINS} may set labels under tenantry.dev/ on namespace "${name}"`;
    }
    return;
  }
  if (newLabels?.[TENANT_LABEL] !== tenantName) {
    return `${labelField(TENANT_LABEL)}: namespace "${name}" belongs to tenant "${tenantName}"; only ${ADMINS} may move it`;
  }
  if (!tenant || !ownsTenant(tenant, requester)) {
    return `${labelField(TENANT_LABEL)}: namespace "${name}" belongs to tenant "${tenantName}"; only its owners, ${ADMINS} may change it`;
  }
  if (tenant.spec.cordoned) {
    return `${labelField(TENANT_LABEL)}: tenant "${tenantName}" is cordoned (spec.cordoned): its namespaces may not be changed by its owners until it is uncordoned`;
  }
  const managed = (key: string) =>
    key.startsWith(TENANTRY_LABEL_PREFIX) || key.startsWith(POD_SECURITY_PREFIX) || key === MANAGED_BY_LABEL;
  const label = changedKeys(oldLabels, newLabels, managed)[0];
  if (label) {
    return `${labelField(label)}: set by tenantry on the namespaces of tenant "${tenantName}"; only ${ADMINS} may change it`;
  }
  const annotation = changedKeys(before.metadata?.annotations, after.metadata?.annotations, (key) =>
    key.startsWith(TENANTRY_LABEL_PREFIX),
  )[0];
  if (annotation) {
    return `metadata.annotations[${annotation}]: set by tenantry on the namespaces of tenant "${tenantName}"; only ${ADMINS} may change it`;
  }
  if (!isDeepStrictEqual(before.metadata?.ownerReferences ?? [], after.metadata?.ownerReferences ?? [])) {
    return `metadata.ownerReferences: set by tenantry on the namespaces of tenant "${tenantName}"; only ${ADMINS} may change them`;
  }
  return;
}

/**
 * Deleting a namespace: a tenant namespace goes only through its owners (and only if they created
 * it: declared namespaces go when removed from the Tenant), tenantry, cluster administrators and
 * the garbage collector and namespace controller that carry out cascades.
 */
export function checkNamespaceDelete(
  before: AnyObject,
  requester: Requester,
  tenant: Tenant | undefined,
  identity: TenantryIdentity,
): string | undefined {
  const name = before.metadata?.name;
  if (exempt(name, identity) || isPrivileged(requester, identity) || isCascadeDeleter(requester)) return;
  const tenantName = before.metadata?.labels?.[TENANT_LABEL];
  if (!tenantName) return;
  if (!tenant || !ownsTenant(tenant, requester)) {
    return `${labelField(TENANT_LABEL)}: namespace "${name}" belongs to tenant "${tenantName}"; only its owners, ${ADMINS} may delete it`;
  }
  if (tenant.spec.cordoned) {
    return `${labelField(TENANT_LABEL)}: tenant "${tenantName}" is cordoned (spec.cordoned): its namespaces may not be deleted by its owners until it is uncordoned`;
  }
  if (before.metadata?.labels?.[NAMESPACE_ORIGIN_LABEL] !== "owner") {
    return `${labelField(NAMESPACE_ORIGIN_LABEL)}: namespace "${name}" is declared in spec.namespaces of tenant "${tenantName}"; remove it there to delete it`;
  }
  return;
}

const namespaceRule = (operations: string[]) => ({
  apiGroups: [""],
  apiVersions: ["v1"],
  operations,
  resources: ["namespaces"],
  scope: "Cluster",
});

export function namespaceWebhooks(context: AdmissionContext): AdmissionCheck[] {
  const { lookup, namespaceQuota } = context;
  const mutating: AdmissionCheck = {
    name: "namespace-owners.tenants.tenantry.dev",
    kind: "mutating",
    path: "/mutate/namespaces",
    // Fail: an owner's namespace that slipped through unlabelled would escape its tenant's
    // isolation, quota and policies.
    failurePolicy: "Fail",
    rules: [namespaceRule(["CREATE"])],
    async handle(request: AdmissionRequest) {
      const namespace = request.object as AnyObject;
      const identity = await context.identity();
      if (exempt(namespace.metadata?.name, identity) || isPrivileged(request.userInfo, identity))
        return allow();
      const candidates = await lookup.candidateTenants(
        namespace.metadata?.name ?? "",
        request.userInfo,
        namespace.metadata?.labels?.[TENANT_LABEL],
      );
      return mutateNamespaceCreate(namespace, request.userInfo, candidates, identity);
    },
  };
  const validating: AdmissionCheck = {
    name: "namespaces.tenants.tenantry.dev",
    kind: "validating",
    path: "/validate/namespaces",
    // Fail: this is what keeps namespaces from being moved between tenants, system namespaces
    // from being taken over and the namespace quota from being exceeded.
    failurePolicy: "Fail",
    // Reserving a slot reads and writes the Tenant, with retries under contention.
    timeoutSeconds: 10,
    sideEffects: "NoneOnDryRun",
    // It takes a slot of the tenant's namespace quota: only once every other check allowed.
    reserves: true,
    rules: [namespaceRule(["CREATE", "UPDATE", "DELETE"])],
    async handle(request: AdmissionRequest) {
      const requester = request.userInfo;
      const identity = await context.identity();
      if (exempt(request.name, identity) || isPrivileged(requester, identity)) return allow();
      if (request.operation === "CREATE") {
        const namespace = request.object as AnyObject;
        const candidates = await lookup.candidateTenants(
          namespace.metadata?.name ?? "",
          requester,
          namespace.metadata?.labels?.[TENANT_LABEL],
        );
        const check = checkNamespaceCreate(namespace, requester, candidates, identity);
        if (!check.allowed) return deny(check.message);
        if (!check.tenant) return allow();
        const tenantName = check.tenant.metadata!.name!;
        const outcome = await namespaceQuota.reserve(tenantName, namespace.metadata!.name!, request.dryRun);
        if (!outcome.admitted) return deny(namespaceQuotaMessage(tenantName, outcome.used, outcome.quota));
        return allow();
      }
      const before = request.oldObject as AnyObject;
      const tenantName = before.metadata?.labels?.[TENANT_LABEL];
      const tenant = tenantName ? await lookup.tenant(tenantName) : undefined;
      const message =
        request.operation === "DELETE"
          ? checkNamespaceDelete(before, requester, tenant, identity)
          : checkNamespaceUpdate(before, request.object as AnyObject, requester, tenant, identity);
      return message ? deny(message) : allow();
    },
  };
  return [mutating, validating];
}
