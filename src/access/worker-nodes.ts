/**
 * Tenant users and the cluster-scoped kinds of worker nodes on demand. RBAC grants users nothing
 * on them; tenantry's authorizer decides, from its caches:
 *
 * - WorkerNodes: a user may ask for one (create) when one of their tenants has `spec.workerNodes`;
 *   read, change and delete their own, and, as a tenant's owner, the tenant's; list and watch only
 *   with a label selector naming themselves (`tenantry.dev/user=<their label value>`) or a tenant
 *   they own (`tenantry.dev/tenant=<t>`), or a field selector naming WorkerNodes they may read.
 *   The tenant gateway adds nothing: it reads as itself and shows each caller only theirs.
 * - NodeProviders: readable by the users of tenants that may ask for worker nodes; named, only the
 *   providers their tenants allow.
 *
 * Everything else about them — users in no tenant, administrators — is RBAC's call.
 */
import type { Requester, Tenant, TenantRole } from "../tenants/index.js";
import { TENANT_LABEL, USER_LABEL, userLabelValue } from "../tenants/index.js";
import { pinnedValues, type SelectorAttributes } from "./selectors.js";

export const WORKER_NODES_GROUP = "tenantry.dev";
const READ_VERBS = new Set(["get", "list", "watch"]);
const NAMED_VERBS = new Set(["get", "update", "patch", "delete"]);
const COLLECTION_VERBS = new Set(["list", "watch", "deletecollection"]);

export interface ClusterScopedAttributes {
  verb?: string;
  group?: string;
  resource?: string;
  subresource?: string;
  name?: string;
  labelSelector?: SelectorAttributes;
  fieldSelector?: SelectorAttributes;
}

/** What the authorizer knows of a WorkerNode: who it belongs to. */
export interface WorkerNodeOwnership {
  owner?: string;
  tenant?: string;
}

export interface WorkerNodeAccessOptions {
  /** A WorkerNode by name: from the cache, else read once (created a moment ago); undefined if none. */
  workerNode(name: string): Promise<WorkerNodeOwnership | undefined>;
}

export type ClusterScopedDecision = { decision: "allow" | "deny"; reason: string } | undefined;

interface Memberships {
  requester: Requester;
  tenants: { tenant: Tenant; role: TenantRole }[];
}

/** Whether this request is one {@link WorkerNodeAccess} decides. */
export function isWorkerNodeKind(attrs: ClusterScopedAttributes): boolean {
  return (
    attrs.group === WORKER_NODES_GROUP &&
    (attrs.resource === "workernodes" || attrs.resource === "nodeproviders")
  );
}

function mayHaveNodes(tenant: Tenant): boolean {
  return (tenant.spec.workerNodes?.maxNodes ?? 0) > 0;
}

export class WorkerNodeAccess {
  constructor(private readonly options: WorkerNodeAccessOptions) {}

  /** The decision for a tenant user's request about WorkerNodes or NodeProviders; undefined: RBAC's call. */
  async decide(attrs: ClusterScopedAttributes, who: Memberships): Promise<ClusterScopedDecision> {
    if (attrs.subresource) return undefined;
    const allowing = who.tenants.filter((m) => mayHaveNodes(m.tenant)).map((m) => m.tenant);
    if (allowing.length === 0) {
      const names = who.tenants.map((m) => `"${m.tenant.metadata!.name}"`).join(", ");
      return deny(
        `${attrs.resource}.${WORKER_NODES_GROUP}: none of your tenants (${names}) may ask for worker nodes (their spec.workerNodes allows none)`,
      );
    }
    if (attrs.resource === "nodeproviders") return this.providers(attrs, allowing);
    return this.workerNodes(attrs, who);
  }

  private providers(attrs: ClusterScopedAttributes, allowing: Tenant[]): ClusterScopedDecision {
    if (!READ_VERBS.has(attrs.verb ?? "")) return undefined;
    if (attrs.verb === "get" && attrs.name !== undefined) {
      const usable = allowing.some((t) => {
        const providers = t.spec.workerNodes?.providers;
        return !providers || providers.includes(attrs.name!);
      });
      if (!usable) return deny(`NodeProvider "${attrs.name}" is not one your tenants may use`);
    }
    return allow("your tenant may ask for worker nodes: NodeProviders list what it may ask for");
  }

  private async workerNodes(
    attrs: ClusterScopedAttributes,
    who: Memberships,
  ): Promise<ClusterScopedDecision> {
    const verb = attrs.verb ?? "";
    if (verb === "create") return allow("a tenant of yours may ask for worker nodes (admission counts them)");
    if (NAMED_VERBS.has(verb)) {
      if (attrs.name === undefined) return deny(`${verb} workernodes: name a WorkerNode of yours`);
      return this.named(verb, [attrs.name], who);
    }
    if (COLLECTION_VERBS.has(verb)) return this.collection(verb, attrs, who);
    return undefined;
  }

  /**
   * Named WorkerNodes: theirs, or of a tenant they own. One that does not exist is the API
   * server's 404 — except for a watch by name, which would show whoever creates it later.
   */
  private async named(
    verb: string,
    names: string[],
    who: Memberships,
    mustExist = false,
  ): Promise<ClusterScopedDecision> {
    const owned = ownedTenants(who);
    for (const name of names) {
      const node = await this.options.workerNode(name);
      if (!node && mustExist)
        return deny(`${verb} of WorkerNode "${name}": there is none of yours by that name`);
      if (!node) continue;
      if (node.owner === who.requester.username || (node.tenant && owned.has(node.tenant))) continue;
      return deny(
        `WorkerNode "${name}" belongs to another user: you may ${verb} only your own (and, as a tenant's owner, the tenant's)`,
      );
    }
    return allow(
      `WorkerNode${names.length > 1 ? "s" : ""} ${names.map((n) => `"${n}"`).join(", ")} of yours`,
    );
  }

  private async collection(
    verb: string,
    attrs: ClusterScopedAttributes,
    who: Memberships,
  ): Promise<ClusterScopedDecision> {
    const me = userLabelValue(who.requester.username ?? "");
    const users = pinnedValues(attrs.labelSelector, USER_LABEL);
    if (users && [...users].every((u) => u === me)) return allow(`${verb} of your own WorkerNodes`);
    const tenants = pinnedValues(attrs.labelSelector, TENANT_LABEL);
    const owned = ownedTenants(who);
    if (tenants && [...tenants].every((t) => owned.has(t))) {
      return allow(`${verb} of the WorkerNodes of tenants you own`);
    }
    const names = pinnedValues(attrs.fieldSelector, "metadata.name");
    if (names && verb !== "deletecollection") return this.named(verb, [...names], who, true);
    return deny(
      `${verb} workernodes only with a selector naming yourself (-l ${USER_LABEL}=${me}) or a tenant you own (-l ${TENANT_LABEL}=<tenant>); the tenant gateway shows you yours`,
    );
  }
}

function ownedTenants(who: Memberships): Set<string> {
  return new Set(who.tenants.filter((m) => m.role === "owner").map((m) => m.tenant.metadata!.name!));
}

function allow(reason: string): ClusterScopedDecision {
  return { decision: "allow", reason };
}

function deny(reason: string): ClusterScopedDecision {
  return { decision: "deny", reason };
}
