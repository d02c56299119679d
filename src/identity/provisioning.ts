import type { Logger } from "pino";
import { type ClusterClient, isAlreadyExists, isConflict, isNotFound, silentLogger } from "../kube/index.js";
import { TENANTS_API_VERSION, type Tenant, type TenantInformers, tenantRole } from "../tenants/index.js";
import { BUILTIN_PROVIDER } from "./builtin/builtin-identity.js";
import { tenantAdminsGroup } from "./kubernetes-user.js";
import type { Identity } from "./providers/provider.js";

export interface TenantProvisionerOptions {
  client: ClusterClient;
  informers: TenantInformers;
  /** Create a tenant that does not exist yet (CloudVeneto CaaS, step 4). Members are added either way. */
  createTenants: boolean;
  /** Declared namespace of a created tenant: `<tenant>-<name>`. Default `default`. */
  namespaceName?: string;
  /** ClusterRole a member added at first login gets in the tenant's namespaces. Default `edit`. */
  memberRole?: string;
  logger?: Logger;
}

/** The label first-login provisioning puts on the tenants it creates: which provider's user made it. */
export const PROVISIONED_BY_LABEL = "tenantry.dev/provisioned-by";

/**
 * Whether an external provider's user may join an existing tenant at first login: the tenant was created by
 * that provider's first logins, or its spec admits one of the user's groups. A tenant an
 * administrator made is never taken over because an identity provider names it.
 */
export function admitsFirstLogin(tenant: Tenant, identity: Identity): boolean {
  // A built-in user's tenant was chosen by the administrator who created the user.
  if (identity.provider === BUILTIN_PROVIDER) return true;
  if (tenant.metadata?.labels?.[PROVISIONED_BY_LABEL] === identity.provider) return true;
  const admitted = tenant.spec.firstLoginGroups ?? [];
  return identity.groups.some((group) => admitted.includes(group));
}

/**
 * At a user's first login, puts them where their identity provider says they belong: creates the
 * tenant (with its namespace) if allowed, and adds the user as owner (tenant admins) or member.
 * Answers are remembered for a minute so a busy user costs one cache lookup per token review.
 */
export class TenantProvisioner {
  private readonly done = new Map<string, number>();
  private readonly logger: Logger;

  constructor(private readonly options: TenantProvisionerOptions) {
    this.logger = (options.logger ?? silentLogger).child({ component: "tenant-provisioner" });
  }

  async ensure(identity: Identity): Promise<void> {
    const tenantName = identity.tenant;
    if (!tenantName) return;
    const key = `${identity.username}\u0000${tenantName}\u0000${identity.tenantAdmin}`;
    if ((this.done.get(key) ?? 0) > Date.now()) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      const tenant =
        this.options.informers.tenants.get(undefined, tenantName) ?? (await this.read(tenantName));
      if (!tenant) {
        if (!this.options.createTenants) break;
        if (await this.create(tenantName, identity)) break;
        continue;
      }
      const role = tenantRole(tenant, { username: identity.username, groups: this.groupsOf(identity) });
      if (role === "owner" || (role === "member" && !identity.tenantAdmin)) break;
      if (!admitsFirstLogin(tenant, identity)) {
        this.logger.warn(
          { tenant: tenantName, user: identity.username, provider: identity.provider },
          "first login names a tenant this provider did not create and that admits none of the user's groups: not joined",
        );
        break;
      }
      if (await this.addUser(tenant, identity)) break;
    }
    this.done.set(key, Date.now() + 60_000);
    if (this.done.size > 50_000) this.done.clear();
  }

  private groupsOf(identity: Identity): string[] {
    return identity.tenant && identity.tenantAdmin
      ? [...identity.groups, tenantAdminsGroup(identity.tenant)]
      : identity.groups;
  }

  private async read(name: string): Promise<Tenant | undefined> {
    try {
      return (await this.options.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name },
      })) as Tenant;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** True when created; false when someone else created it first (the caller then adds the user). */
  private async create(name: string, identity: Identity): Promise<boolean> {
    const tenant = {
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name, labels: { [PROVISIONED_BY_LABEL]: identity.provider } },
      spec: {
        owners: [{ kind: "Group", name: tenantAdminsGroup(name) }],
        namespaces: [{ name: this.options.namespaceName ?? "default" }],
        ...(identity.tenantAdmin ? {} : { users: [this.member(identity)] }),
      },
    } as Tenant;
    try {
      await this.options.client.objects.create(tenant);
      this.logger.info(
        { tenant: name, user: identity.username, provider: identity.provider },
        "tenant created at first login",
      );
      return true;
    } catch (err) {
      if (isAlreadyExists(err)) return false;
      throw err;
    }
  }

  private member(identity: Identity) {
    return { name: identity.username, role: this.options.memberRole ?? "edit" };
  }

  /** Adds the user with a JSON patch guarded by resourceVersion: a concurrent change makes it retry. */
  private async addUser(tenant: Tenant, identity: Identity): Promise<boolean> {
    const patch = [
      { op: "test", path: "/metadata/resourceVersion", value: tenant.metadata!.resourceVersion },
      ...(identity.tenantAdmin
        ? [{ op: "add", path: "/spec/owners/-", value: { kind: "User", name: identity.username } }]
        : tenant.spec.users
          ? [{ op: "add", path: "/spec/users/-", value: this.member(identity) }]
          : [{ op: "add", path: "/spec/users", value: [this.member(identity)] }]),
    ];
    try {
      await this.options.client.objects.jsonPatch(
        { apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name: tenant.metadata!.name! } },
        patch,
      );
      this.logger.info(
        { tenant: tenant.metadata!.name, user: identity.username, owner: identity.tenantAdmin },
        "user added to tenant at first login",
      );
      return true;
    } catch (err) {
      // 422 from a failed `test` or 409: the tenant changed meanwhile; read it again.
      if (isConflict(err) || (err as { code?: number }).code === 422) return false;
      throw err;
    }
  }
}
