import { NODE_OWNER_LABEL } from "../nodes/index.js";
import {
  type AllowedClasses,
  classAllowed,
  isClusterAdmin,
  TENANT_LABEL,
  type Tenant,
  type TenantInformers,
  tenantRole,
  USER_LABEL,
  userLabelValue,
} from "../tenants/index.js";
import type { ResourceRequest } from "./request-info.js";

/** Who is calling, as the gateway authenticated them. */
export interface Caller {
  username: string;
  uid?: string;
  groups: string[];
  /** The tenant an identity provider put the caller in. */
  tenant?: string;
  /** Extra attributes the API server gets with the user (identity provider, tenant). */
  extra: Record<string, string[]>;
  /** How the caller proved who they are. */
  via: "certificate" | "token";
}

export function callerIsClusterAdmin(caller: Caller): boolean {
  return isClusterAdmin({ username: caller.username, groups: caller.groups });
}

/**
 * The tenants a caller belongs to: as an owner or listed user of the Tenant, or because their
 * identity provider put them in it (Keystone project, OIDC claim, built-in user's tenant). What the
 * gateway shows a tenant's users; the dashboard shows the same.
 */
export function callerTenants(
  informers: TenantInformers,
  caller: Pick<Caller, "username" | "groups" | "tenant">,
): Tenant[] {
  const found = informers
    .membershipsOf({ username: caller.username, groups: caller.groups })
    .map((t) => t.tenant);
  if (caller.tenant && !found.some((t) => t.metadata?.name === caller.tenant)) {
    const vouched = informers.tenants.get(undefined, caller.tenant);
    if (vouched) found.push(vouched);
  }
  return found;
}

const MEMBERSHIP_CACHE_SIZE = 10_000;

/**
 * {@link callerTenants} for every request would scan every Tenant each time; the answer only
 * changes when a Tenant does, so it is kept per identity until then.
 */
export class Memberships {
  private readonly cache = new Map<string, Tenant[]>();
  private readonly unsubscribe: () => void;

  constructor(private readonly informers: TenantInformers) {
    const forget = () => this.cache.clear();
    this.unsubscribe = informers.tenants.addHandler({ onAdd: forget, onUpdate: forget, onDelete: forget });
  }

  of(caller: Caller): Tenant[] {
    const key = [caller.username, caller.tenant ?? "", ...caller.groups].join("\u0000");
    let tenants = this.cache.get(key);
    if (!tenants) {
      tenants = callerTenants(this.informers, caller);
      if (this.cache.size >= MEMBERSHIP_CACHE_SIZE) this.cache.clear();
      this.cache.set(key, tenants);
    }
    return tenants;
  }

  stop(): void {
    this.unsubscribe();
    this.cache.clear();
  }
}

export interface ObjectLike {
  metadata?: { name?: string; labels?: Record<string, string> };
}

/** Cluster-scoped kinds a tenant user sees only in part, each with the objects they may see. */
export interface FilteredKind {
  group: string;
  resource: string;
  /** What `caller` sees, in the scope of `tenants` (theirs, or the one of a `/tenants/{t}/` path). */
  visible(tenants: Tenant[], caller: Pick<Caller, "username" | "groups">): (object: ObjectLike) => boolean;
}

function byClass(rule: (tenant: Tenant) => AllowedClasses | undefined): FilteredKind["visible"] {
  return (tenants) => (object) => {
    const name = object.metadata?.name ?? "";
    return tenants.some((tenant) => classAllowed(rule(tenant), name));
  };
}

function labelsMatch(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector).every(([key, value]) => labels?.[key] === value);
}

export const NAMESPACES: FilteredKind = {
  group: "",
  resource: "namespaces",
  visible: (tenants) => {
    const names = new Set(tenants.map((t) => t.metadata!.name!));
    return (object) => names.has(object.metadata?.labels?.[TENANT_LABEL] ?? "");
  },
};

/**
 * Nodes a caller may use: those of one of their tenants' node pools (any node, for a tenant without
 * a pool), and of the private nodes only their own.
 */
const NODES: FilteredKind = {
  group: "",
  resource: "nodes",
  visible: (tenants, caller) => {
    const me = userLabelValue(caller.username);
    return (object) => {
      const labels = object.metadata?.labels;
      const owner = labels?.[NODE_OWNER_LABEL];
      if (owner !== undefined && owner !== me) return false;
      return tenants.some((tenant) => {
        const selector = tenant.spec.nodePool?.nodeSelector;
        return !selector || Object.keys(selector).length === 0 || labelsMatch(selector, labels);
      });
    };
  },
};

/** A caller's own WorkerNodes, and every WorkerNode of the tenants they own. */
const WORKER_NODES: FilteredKind = {
  group: "tenantry.dev",
  resource: "workernodes",
  visible: (tenants, caller) => {
    const me = userLabelValue(caller.username);
    const owned = new Set(
      tenants.filter((t) => tenantRole(t, caller) === "owner").map((t) => t.metadata!.name!),
    );
    const inScope = new Set(tenants.map((t) => t.metadata!.name!));
    return (object) => {
      const tenant = object.metadata?.labels?.[TENANT_LABEL] ?? "";
      return inScope.has(tenant) && (owned.has(tenant) || object.metadata?.labels?.[USER_LABEL] === me);
    };
  },
};

/** The NodeProviders a caller's tenants may ask for worker nodes from (none, for tenants that may not). */
const NODE_PROVIDERS: FilteredKind = {
  group: "tenantry.dev",
  resource: "nodeproviders",
  visible: (tenants) => (object) =>
    tenants.some((tenant) => {
      const allowed = tenant.spec.workerNodes;
      if (!allowed || allowed.maxNodes === 0) return false;
      return !allowed.providers || allowed.providers.includes(object.metadata?.name ?? "");
    }),
};

export const FILTERED_KINDS: readonly FilteredKind[] = [
  NAMESPACES,
  NODES,
  WORKER_NODES,
  NODE_PROVIDERS,
  {
    group: "storage.k8s.io",
    resource: "storageclasses",
    visible: byClass((t) => t.spec.allowed?.storageClasses),
  },
  {
    group: "networking.k8s.io",
    resource: "ingressclasses",
    visible: byClass((t) => t.spec.allowed?.ingressClasses),
  },
  {
    group: "scheduling.k8s.io",
    resource: "priorityclasses",
    visible: byClass((t) => t.spec.allowed?.priorityClasses),
  },
  // Tenants have no runtime class restriction: they see them all, to choose one for their pods.
  { group: "node.k8s.io", resource: "runtimeclasses", visible: () => () => true },
];

/** The filtered kind a request is about, when it is about one (cluster-scoped, any version). */
export function filteredKind(info: ResourceRequest): FilteredKind | undefined {
  if (info.namespace !== undefined && info.resource !== "namespaces") return undefined;
  return FILTERED_KINDS.find((k) => k.group === info.apiGroup && k.resource === info.resource);
}

/** Label selector restricting namespaces to these tenants; it comes first so nothing after it can undo it. */
export function namespaceSelector(tenants: Tenant[], callerSelector: string | null): string {
  const own = `${TENANT_LABEL} in (${tenants.map((t) => t.metadata!.name!).join(",")})`;
  return callerSelector ? `${own},${callerSelector}` : own;
}
