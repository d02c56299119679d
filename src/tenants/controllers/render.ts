import type {
  KubernetesObject,
  RbacV1Subject,
  V1LimitRange,
  V1Namespace,
  V1Role,
  V1RoleBinding,
} from "@kubernetes/client-node";
import type { NamespaceTemplate } from "../api/namespace-template.js";
import type { RuntimeOwnerAccess, Tenant, TenantOwner, TenantUser } from "../api/tenant.js";
import {
  CORDONED_LABEL,
  managedMetadata,
  NAMESPACE_ORIGIN_LABEL,
  POD_SECURITY_ENFORCE_LABEL,
  TENANT_LABEL,
  type TenantRef,
} from "./labels.js";

/** The ClusterRole bound to owners in each tenant namespace: Kubernetes' own namespace admin. */
export const TENANT_ADMIN_CLUSTER_ROLE = "admin";
export const OWNERS_ROLE_BINDING = "tenantry-owners";
/** Lets owners read and delete the namespace itself: a RoleBinding inside a namespace covers its own Namespace object. */
export const NAMESPACE_OWNER_ROLE = "tenantry-namespace-owner";
/**
 * The ClusterRole that lets owners create namespaces at all (RBAC); which names and how many is
 * then decided by tenantry's namespace admission. It grants nothing else cluster-wide.
 */
export const NAMESPACE_PROVISIONER_CLUSTER_ROLE = "tenantry:namespace-provisioner";

export const namespaceProvisionerClusterRole: KubernetesObject = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRole",
  metadata: {
    name: NAMESPACE_PROVISIONER_CLUSTER_ROLE,
    labels: { "app.kubernetes.io/managed-by": "tenantry" },
  },
  rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["create"] }],
} as KubernetesObject;

/**
 * What a tenant's owners get in a user's runtimes namespace under `spec.runtimeAccess.owners: View`:
 * what runs there and how it is doing, not its contents or credentials (no Secrets, ConfigMaps or
 * logs, no exec, attach, port-forward or proxy) and no changes.
 */
export const RUNTIME_VIEWER_CLUSTER_ROLE = "tenantry:runtime-viewer";

const OBSERVE = ["get", "list", "watch"];

export const runtimeViewerClusterRole: KubernetesObject = {
  apiVersion: "rbac.authorization.k8s.io/v1",
  kind: "ClusterRole",
  metadata: { name: RUNTIME_VIEWER_CLUSTER_ROLE, labels: { "app.kubernetes.io/managed-by": "tenantry" } },
  rules: [
    {
      apiGroups: [""],
      resources: [
        "pods",
        "services",
        "endpoints",
        "persistentvolumeclaims",
        "events",
        "resourcequotas",
        "limitranges",
      ],
      verbs: OBSERVE,
    },
    { apiGroups: ["apps"], resources: ["deployments", "statefulsets", "replicasets"], verbs: OBSERVE },
    { apiGroups: ["events.k8s.io"], resources: ["events"], verbs: OBSERVE },
    {
      apiGroups: ["tenantry.dev"],
      resources: ["runtimes", "runtimebackups", "runtimerestores"],
      verbs: OBSERVE,
    },
  ],
} as KubernetesObject;

/** In a user's runtimes namespace: the user's own binding, and the owners' under View. */
export const RUNTIME_USER_ROLE_BINDING = "tenantry-runtime-user";
export const OWNERS_RUNTIME_VIEW_BINDING = "tenantry-owners-runtime-view";

/** Binds the owners to the provisioner role while the tenant lets them create namespaces. */
export function ownersProvisionerBinding(tenant: Tenant): KubernetesObject | undefined {
  if (tenant.spec.namespaceQuota === 0 || tenant.spec.cordoned) return undefined;
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: managedMetadata(tenantRef(tenant), `tenantry:owners:${tenant.metadata!.name}`),
    roleRef: {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: NAMESPACE_PROVISIONER_CLUSTER_ROLE,
    },
    subjects: tenant.spec.owners.map(subject),
  } as KubernetesObject;
}

function namespaceOwnerRbac(tenant: Tenant, namespace: string): KubernetesObject[] {
  return [
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: managedMetadata(tenantRef(tenant), NAMESPACE_OWNER_ROLE, namespace),
      rules: [{ apiGroups: [""], resources: ["namespaces"], verbs: ["get", "delete"] }],
    } as KubernetesObject,
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: managedMetadata(tenantRef(tenant), NAMESPACE_OWNER_ROLE, namespace),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: NAMESPACE_OWNER_ROLE },
      subjects: tenant.spec.owners.map(subject),
    } as KubernetesObject,
  ];
}
export const ISOLATION_POLICY = "tenantry-isolation";

export function tenantRef(tenant: Tenant): TenantRef {
  return { name: tenant.metadata!.name!, uid: tenant.metadata!.uid! };
}

export function declaredNamespaceName(tenant: string, shortName: string): string {
  return `${tenant}-${shortName}`;
}

export function namespaceObject(
  tenant: Tenant,
  name: string,
  origin: "declared" | "owner",
  extraLabels: Record<string, string> = {},
): V1Namespace {
  const metadata = managedMetadata(tenantRef(tenant), name);
  metadata.labels = {
    ...extraLabels,
    ...metadata.labels,
    [NAMESPACE_ORIGIN_LABEL]: origin,
    [POD_SECURITY_ENFORCE_LABEL]: tenant.spec.podSecurity?.level ?? "baseline",
    ...(tenant.spec.cordoned ? { [CORDONED_LABEL]: "true" } : {}),
  };
  return { apiVersion: "v1", kind: "Namespace", metadata };
}

function subject(owner: TenantOwner | { kind: "User"; name: string }): RbacV1Subject {
  if (owner.kind === "ServiceAccount") {
    const [, , namespace, name] = owner.name.split(":");
    return { kind: "ServiceAccount", name: name!, namespace: namespace! };
  }
  return { kind: owner.kind, name: owner.name, apiGroup: "rbac.authorization.k8s.io" };
}

/** RBAC names are free text, but object names are DNS subdomains: derive a stable, valid one. */
export function userObjectName(user: string): string {
  const cleaned = user
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, "-")
    .replace(/^[-.]+|[-.]+$/g, "");
  const hash = [...user].reduce((h, c) => (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0, 7).toString(36);
  return `tenantry-user-${cleaned.slice(0, 200)}-${hash}`;
}

function clusterRoleBinding(
  tenant: Tenant,
  namespace: string,
  name: string,
  role: string,
  subjects: RbacV1Subject[],
): V1RoleBinding {
  return {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: managedMetadata(tenantRef(tenant), name, namespace),
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects,
  };
}

function ownersRoleBinding(tenant: Tenant, namespace: string): V1RoleBinding {
  return clusterRoleBinding(
    tenant,
    namespace,
    OWNERS_ROLE_BINDING,
    TENANT_ADMIN_CLUSTER_ROLE,
    tenant.spec.owners.map(subject),
  );
}

function userSubject(name: string): RbacV1Subject {
  return subject(
    name.startsWith("system:serviceaccount:") ? { kind: "ServiceAccount", name } : { kind: "User", name },
  );
}

/**
 * A user's runtimes namespace is theirs: they administer it (and let others in with AccessGrants);
 * the owners get what `spec.runtimeAccess.owners` says; the tenant's other users get nothing.
 */
function runtimeNamespaceRbac(tenant: Tenant, namespace: string, user: string): KubernetesObject[] {
  const objects: KubernetesObject[] = [
    clusterRoleBinding(tenant, namespace, RUNTIME_USER_ROLE_BINDING, TENANT_ADMIN_CLUSTER_ROLE, [
      userSubject(user),
    ]),
    // Owners may always delete the namespace (its runtimes with it), whatever else they get.
    ...namespaceOwnerRbac(tenant, namespace),
  ];
  const owners = tenant.spec.owners.map(subject);
  switch (runtimeOwnerAccess(tenant)) {
    case "Full":
      objects.push(ownersRoleBinding(tenant, namespace));
      break;
    case "View":
      objects.push(
        clusterRoleBinding(
          tenant,
          namespace,
          OWNERS_RUNTIME_VIEW_BINDING,
          RUNTIME_VIEWER_CLUSTER_ROLE,
          owners,
        ),
      );
      break;
  }
  return objects;
}

/** What a tenant's owners get in its users' runtimes namespaces (default View). */
export function runtimeOwnerAccess(tenant: Tenant): RuntimeOwnerAccess {
  return tenant.spec.runtimeAccess?.owners ?? "View";
}

function userRbac(tenant: Tenant, namespace: string, user: TenantUser): KubernetesObject[] {
  const name = userObjectName(user.name);
  const member = userSubject(user.name);
  const objects: KubernetesObject[] = [];
  if (user.role) objects.push(clusterRoleBinding(tenant, namespace, `${name}-role`, user.role, [member]));
  if (!user.permissions?.length) return objects;
  const role: V1Role = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: managedMetadata(tenantRef(tenant), name, namespace),
    rules: user.permissions.map((p) => ({ ...p })),
  };
  const binding: V1RoleBinding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: managedMetadata(tenantRef(tenant), name, namespace),
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
    subjects: [member],
  };
  return [...objects, role, binding];
}

/**
 * Default-deny ingress from outside the tenant: the tenant's own namespaces and the chosen system
 * namespaces may connect; every other namespace (other tenants included) may not. A namespace
 * isolated on its own admits only itself instead of the tenant's namespaces.
 */
function isolationPolicy(tenant: Tenant, namespace: string, alone: boolean): KubernetesObject | undefined {
  if (tenant.spec.networkIsolation?.enabled === false) return undefined;
  const policy = {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: managedMetadata(tenantRef(tenant), ISOLATION_POLICY, namespace),
    spec: {
      podSelector: {},
      policyTypes: ["Ingress"],
      ingress: [
        {
          // Plain JSON field names: objects are applied as raw JSON, not through client-node's models.
          from: [
            alone
              ? { podSelector: {} }
              : { namespaceSelector: { matchLabels: { [TENANT_LABEL]: tenant.metadata!.name! } } },
            ...(tenant.spec.networkIsolation?.allowFromNamespaces ?? []).map((selector) => ({
              namespaceSelector: selector,
            })),
          ],
        },
      ],
    },
  };
  return policy;
}

function limitRanges(tenant: Tenant, namespace: string): V1LimitRange[] {
  return (tenant.spec.limitRanges ?? []).map((range) => ({
    apiVersion: "v1",
    kind: "LimitRange",
    metadata: managedMetadata(tenantRef(tenant), `tenantry-${range.name}`, namespace),
    spec: { limits: range.limits as NonNullable<V1LimitRange["spec"]>["limits"] },
  }));
}

export class TemplateError extends Error {}

/** Replaces `${name}` placeholders in every string of a value. */
function substitute(value: unknown, parameters: Record<string, string>, where: string): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const replacement = parameters[name];
      if (replacement === undefined) throw new TemplateError(`${where}: parameter \${${name}} has no value`);
      return replacement;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, parameters, `${where}[${i}]`));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, substitute(v, parameters, `${where}.${k}`)]),
    );
  }
  return value;
}

export function renderTemplate(
  tenant: Tenant,
  namespace: string,
  template: NamespaceTemplate,
  given: Record<string, string> = {},
): KubernetesObject[] {
  const parameters: Record<string, string> = { tenant: tenant.metadata!.name!, namespace };
  for (const p of template.spec.parameters ?? []) {
    const value = given[p.name] ?? p.default;
    if (value === undefined) {
      throw new TemplateError(
        `NamespaceTemplate ${template.metadata!.name}: parameter ${p.name} needs a value and has no default`,
      );
    }
    parameters[p.name] = value;
  }
  return template.spec.objects.map((raw, index) => {
    const object = substitute(
      raw,
      parameters,
      `NamespaceTemplate ${template.metadata!.name} spec.objects[${index}]`,
    ) as KubernetesObject;
    const base = managedMetadata(tenantRef(tenant), object.metadata?.name ?? "", namespace);
    if (!object.metadata?.name)
      throw new TemplateError(
        `NamespaceTemplate ${template.metadata!.name} spec.objects[${index}]: metadata.name is required`,
      );
    return {
      ...object,
      metadata: {
        ...object.metadata,
        ...base,
        labels: {
          ...object.metadata.labels,
          ...base.labels,
          "tenantry.dev/template": template.metadata!.name!,
        },
      },
    };
  });
}

/** Everything the tenant controller keeps inside one namespace of the tenant. */
export function namespaceContents(
  tenant: Tenant,
  namespace: string,
  templateRefs: { name: string; parameters?: Record<string, string> }[],
  templates: Map<string, NamespaceTemplate>,
  { isolatedAlone = false, runtimeUser }: { isolatedAlone?: boolean; runtimeUser?: string } = {},
): KubernetesObject[] {
  const objects: KubernetesObject[] = runtimeUser
    ? runtimeNamespaceRbac(tenant, namespace, runtimeUser)
    : [
        ownersRoleBinding(tenant, namespace),
        ...namespaceOwnerRbac(tenant, namespace),
        ...(tenant.spec.users ?? []).flatMap((user) => userRbac(tenant, namespace, user)),
      ];
  const policy = isolationPolicy(tenant, namespace, isolatedAlone);
  if (policy) objects.push(policy);
  objects.push(...limitRanges(tenant, namespace));
  for (const ref of templateRefs) {
    const template = templates.get(ref.name);
    if (!template) throw new TemplateError(`NamespaceTemplate ${ref.name} does not exist`);
    objects.push(...renderTemplate(tenant, namespace, template, ref.parameters));
  }
  return objects;
}
