import type { KubernetesObject, V1Ingress, V1Namespace } from "@kubernetes/client-node";
import { CachedInformers, type ClusterClient, type Informer, type InformerCache } from "../kube/index.js";
import { type Requester, type TenantRole, tenantsOf } from "./admission/identity.js";
import { TENANTS_API_VERSION } from "./api/group.js";
import type { NamespaceTemplate } from "./api/namespace-template.js";
import type { Tenant } from "./api/tenant.js";
import type { TenantResourceQuota } from "./api/tenant-resource-quota.js";
import { TENANT_LABEL } from "./controllers/labels.js";
import { declaredNamespaceName } from "./controllers/render.js";

/**
 * Index of Tenants by who belongs to them: `user:<username>` (User and ServiceAccount owners,
 * listed users) or `group:<name>` (Group owners).
 */
const BY_MEMBER = "tenants/member";
/** Index of Tenants by the full names of the namespaces their spec.namespaces declare. */
const BY_DECLARED_NAMESPACE = "tenants/declared-namespace";
/** Index of tenant namespaces (by their tenant label) and of quotas (by spec.tenant). */
const BY_TENANT = "tenants/tenant";
/** Index of Ingresses by every hostname they route or serve TLS for. */
const BY_HOST = "tenants/host";

/** The hostnames an Ingress claims: its rules' hosts and its TLS hosts. */
export function ingressHosts(ingress: V1Ingress): string[] {
  const hosts = [
    ...(ingress.spec?.rules ?? []).map((rule) => rule.host),
    ...(ingress.spec?.tls ?? []).flatMap((tls) => tls.hosts ?? []),
  ];
  return [...new Set(hosts.filter((host): host is string => Boolean(host)))];
}

function memberKeys(tenant: Tenant): string[] {
  const owners = tenant.spec.owners.map((owner) =>
    owner.kind === "Group" ? `group:${owner.name}` : `user:${owner.name}`,
  );
  return [...new Set([...owners, ...(tenant.spec.users ?? []).map((user) => `user:${user.name}`)])];
}

/**
 * The caches the tenants capability shares between its controllers and admission webhooks: one
 * watch per resource, whoever reads it.
 */
export class TenantInformers extends CachedInformers {
  readonly tenants: Informer<Tenant>;
  readonly templates: Informer<NamespaceTemplate>;
  /** Namespaces that belong to a tenant (carry the tenant label). */
  readonly tenantNamespaces: Informer<V1Namespace>;
  readonly quotas: Informer<TenantResourceQuota>;
  /** Every Ingress of the cluster, tenant or not: a hostname belongs to one tenant. */
  readonly ingresses: Informer<V1Ingress>;

  /** With `shared`, the process's cache (indexes named after this reader); without, informers of its own. */
  constructor(client: ClusterClient, shared?: InformerCache) {
    super(client, shared);
    const { cache } = this;
    this.tenants = cache.informer<Tenant>({ apiVersion: TENANTS_API_VERSION, kind: "Tenant" });
    this.templates = cache.informer<NamespaceTemplate>({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceTemplate",
    });
    this.tenantNamespaces = cache.informer<V1Namespace>({
      apiVersion: "v1",
      kind: "Namespace",
      labelSelector: TENANT_LABEL,
    });
    this.tenants.addIndex(BY_MEMBER, memberKeys);
    this.tenants.addIndex(BY_DECLARED_NAMESPACE, (t) =>
      (t.spec.namespaces ?? []).map((d) => declaredNamespaceName(t.metadata!.name!, d.name)),
    );
    this.tenantNamespaces.addIndex(BY_TENANT, (n) => {
      const tenant = n.metadata?.labels?.[TENANT_LABEL];
      return tenant ? [tenant] : [];
    });
    this.quotas = cache.informer<TenantResourceQuota>({
      apiVersion: TENANTS_API_VERSION,
      kind: "TenantResourceQuota",
    });
    this.quotas.addIndex(BY_TENANT, (q) => [q.spec.tenant]);
    this.ingresses = cache.informer<V1Ingress>({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
    });
    this.ingresses.addIndex(BY_HOST, ingressHosts);
  }

  protected get all(): Informer<KubernetesObject>[] {
    return [
      this.tenants,
      this.templates,
      this.tenantNamespaces,
      this.quotas,
      this.ingresses,
    ] as unknown as Informer<KubernetesObject>[];
  }

  /** Tenants a requester belongs to (as owner or listed user), by name, with their role; from the cache. */
  membershipsOf(requester: Requester): { tenant: Tenant; role: TenantRole }[] {
    const found = new Map<string, Tenant>();
    const keys = [`user:${requester.username ?? ""}`, ...(requester.groups ?? []).map((g) => `group:${g}`)];
    for (const key of keys) {
      for (const tenant of this.tenants.byIndex(BY_MEMBER, key)) found.set(tenant.metadata!.name!, tenant);
    }
    return tenantsOf([...found.values()], requester);
  }

  /** Tenants a requester owns, directly or through one of their groups, by name; from the cache. */
  tenantsOwnedBy(requester: Requester): Tenant[] {
    return this.membershipsOf(requester)
      .filter((m) => m.role === "owner")
      .map((m) => m.tenant);
  }

  /** Tenants whose spec.namespaces declare `namespace` (normally at most one). */
  tenantsDeclaring(namespace: string): Tenant[] {
    return this.tenants.byIndex(BY_DECLARED_NAMESPACE, namespace);
  }

  /** The cached TenantResourceQuotas of a tenant. */
  quotasOf(tenant: string): TenantResourceQuota[] {
    return this.quotas.byIndex(BY_TENANT, tenant);
  }

  /** The cached namespaces of a tenant. */
  namespacesOf(tenant: string): V1Namespace[] {
    return this.tenantNamespaces.byIndex(BY_TENANT, tenant);
  }

  /** The cached Ingresses that route or serve TLS for a hostname. */
  ingressesWithHost(host: string): V1Ingress[] {
    return this.ingresses.byIndex(BY_HOST, host);
  }

  /** A cached Ingress by namespace and name. */
  ingress(namespace: string, name: string): V1Ingress | undefined {
    return this.ingresses.get(namespace, name);
  }

  /** The name of the tenant a namespace belongs to, from the cache. */
  tenantNameOfNamespace(namespace: string): string | undefined {
    return this.tenantNamespaces.get(undefined, namespace)?.metadata?.labels?.[TENANT_LABEL];
  }

  /** The tenant a namespace belongs to, from the cache. */
  tenantOfNamespace(namespace: string): Tenant | undefined {
    const name = this.tenantNamespaces.get(undefined, namespace)?.metadata?.labels?.[TENANT_LABEL];
    return name ? this.tenants.get(undefined, name) : undefined;
  }
}
