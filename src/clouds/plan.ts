/**
 * What a level-1 logical cloud puts on each cluster, as pure functions of the LogicalCloud: the
 * namespace (with the cloud's labels), its ResourceQuotas (the documented defaults when none is
 * given) and container defaults, and one Role (or ClusterRole) and binding per user permission.
 * Every object carries the cloud's uid label, which is how terminate finds exactly what it made.
 */
import type {
  KubernetesObject,
  RbacV1Subject,
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Namespace,
  V1ResourceQuota,
  V1Role,
  V1RoleBinding,
} from "@kubernetes/client-node";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../tenants/index.js";
import type {
  DeployedState,
  LogicalCloud,
  LogicalCloudUser,
  ResourceRef,
  UserPermission,
} from "./api/logical-cloud.js";
import {
  DEFAULT_CONTAINER_LIMITS,
  DEFAULT_CONTAINER_REQUESTS,
  DEFAULT_QUOTA,
  DEFAULT_QUOTA_NAME,
} from "./validation.js";

/** On every object a logical cloud makes in a cluster: the LogicalCloud's uid. */
export const LOGICAL_CLOUD_UID_LABEL = "tenantry.dev/logical-cloud-uid";
export const PROJECT_LABEL = "tenantry.dev/project";
/** `<project>/<cloud>`, for people reading the object. */
export const LOGICAL_CLOUD_ANNOTATION = "tenantry.dev/logical-cloud";
export const LIMIT_RANGE_NAME = "tenantry-defaults";

/** The kinds a logical cloud makes, in the order they are removed (bindings before what they bind). */
export const MANAGED_KINDS = [
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", namespaced: false },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", namespaced: false },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", namespaced: true },
  { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", namespaced: true },
  { apiVersion: "v1", kind: "ResourceQuota", namespaced: true },
  { apiVersion: "v1", kind: "LimitRange", namespaced: true },
  { apiVersion: "v1", kind: "Namespace", namespaced: false },
] as const;

export function projectOfNamespace(namespace: string, prefix: string): string | undefined {
  return namespace.startsWith(prefix) ? namespace.slice(prefix.length) : undefined;
}

/** Every user of the cloud: DCM's one `user`, then tenantry's `users`, each name once. */
export function cloudUsers(cloud: LogicalCloud): LogicalCloudUser[] {
  const all = [...(cloud.spec.user ? [cloud.spec.user] : []), ...(cloud.spec.users ?? [])];
  const seen = new Set<string>();
  return all.filter((u) => {
    if (seen.has(u.userName)) return false;
    seen.add(u.userName);
    return true;
  });
}

export function levelOf(cloud: LogicalCloud): "0" | "1" {
  return cloud.spec.level ?? "1";
}

/** Name of a permission's Role or ClusterRole (and its binding): unique to project, cloud and permission. */
export function permissionObjectName(project: string, cloud: string, permission: string): string {
  return `tenantry:lc:${project}:${cloud}:${permission}`;
}

export function managedMetadata(cloud: LogicalCloud, project: string) {
  const name = cloud.metadata!.name!;
  return {
    labels: {
      [LOGICAL_CLOUD_UID_LABEL]: cloud.metadata!.uid!,
      [PROJECT_LABEL]: project,
      [MANAGED_BY_LABEL]: MANAGED_BY,
    },
    annotations: { [LOGICAL_CLOUD_ANNOTATION]: `${project}/${name}` },
  };
}

function withMetadata<T extends KubernetesObject>(object: T, base: ReturnType<typeof managedMetadata>): T {
  return {
    ...object,
    metadata: {
      ...object.metadata,
      labels: { ...(object.metadata?.labels ?? {}), ...base.labels },
      annotations: { ...(object.metadata?.annotations ?? {}), ...base.annotations },
    },
  };
}

function subjects(permission: UserPermission, users: LogicalCloudUser[]): RbacV1Subject[] {
  const names = users.map((u) => u.userName).filter((n) => !permission.users || permission.users.includes(n));
  return names.map((name) => ({ apiGroup: "rbac.authorization.k8s.io", kind: "User", name }));
}

/** Whether a quota bounds CPU or memory, so that pods without requests or limits need defaults. */
function boundsComputeResources(hard: Record<string, string | number>): boolean {
  return Object.keys(hard).some((k) => /^(requests\.|limits\.)?(cpu|memory)$/.test(k));
}

/** The objects of a level-1 cloud on one cluster (the same on every cluster). */
export function desiredObjects(cloud: LogicalCloud, project: string): KubernetesObject[] {
  const base = managedMetadata(cloud, project);
  const namespace = cloud.spec.namespace!;
  const objects: KubernetesObject[] = [];
  const ns: V1Namespace = {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: namespace, labels: { ...(cloud.spec.labels ?? {}) } },
  };
  objects.push(withMetadata(ns, base));
  const quotas = cloud.spec.clusterQuotas?.length
    ? cloud.spec.clusterQuotas.map((q) => ({ name: q.name, hard: q.hard }))
    : [{ name: DEFAULT_QUOTA_NAME, hard: { ...DEFAULT_QUOTA } as Record<string, string | number> }];
  for (const quota of quotas) {
    const rq: V1ResourceQuota = {
      apiVersion: "v1",
      kind: "ResourceQuota",
      metadata: { name: quota.name, namespace },
      spec: { hard: Object.fromEntries(Object.entries(quota.hard).map(([k, v]) => [k, String(v)])) },
    };
    objects.push(withMetadata(rq, base));
  }
  if (quotas.some((q) => boundsComputeResources(q.hard))) {
    // Written as on the wire: the client model spells the limits' `default` as `_default`.
    const limits = {
      apiVersion: "v1",
      kind: "LimitRange",
      metadata: { name: LIMIT_RANGE_NAME, namespace },
      spec: {
        limits: [
          {
            type: "Container",
            defaultRequest: { ...DEFAULT_CONTAINER_REQUESTS },
            default: { ...DEFAULT_CONTAINER_LIMITS },
          },
        ],
      },
    };
    objects.push(withMetadata(limits, base));
  }
  const users = cloudUsers(cloud);
  const cloudName = cloud.metadata!.name!;
  for (const permission of cloud.spec.userPermissions ?? []) {
    const name = permissionObjectName(project, cloudName, permission.name);
    const rules = [
      { apiGroups: permission.apiGroups, resources: permission.resources, verbs: permission.verbs },
    ];
    const bound = subjects(permission, users);
    if (permission.namespace) {
      const role: V1Role = {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name, namespace: permission.namespace },
        rules,
      };
      objects.push(withMetadata(role, base));
      if (bound.length) {
        const binding: V1RoleBinding = {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "RoleBinding",
          metadata: { name, namespace: permission.namespace },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
          subjects: bound,
        };
        objects.push(withMetadata(binding, base));
      }
    } else {
      const role: V1ClusterRole = {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "ClusterRole",
        metadata: { name },
        rules,
      };
      objects.push(withMetadata(role, base));
      if (bound.length) {
        const binding: V1ClusterRoleBinding = {
          apiVersion: "rbac.authorization.k8s.io/v1",
          kind: "ClusterRoleBinding",
          metadata: { name },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
          subjects: bound,
        };
        objects.push(withMetadata(binding, base));
      }
    }
  }
  return objects;
}

export function refOf(object: KubernetesObject, state: ResourceRef["state"]): ResourceRef {
  return {
    apiVersion: object.apiVersion!,
    kind: object.kind!,
    name: object.metadata!.name!,
    ...(object.metadata?.namespace ? { namespace: object.metadata.namespace } : {}),
    state,
  };
}

export function sameObject(
  a: { apiVersion?: string; kind?: string; name?: string; namespace?: string },
  b: ResourceRef,
): boolean {
  return (
    a.apiVersion === b.apiVersion &&
    a.kind === b.kind &&
    a.name === b.name &&
    (a.namespace ?? "") === (b.namespace ?? "")
  );
}

/** Whether some permission applies in the cloud's own namespace (DCM refuses to instantiate without one). */
export function hasNamespacePermission(cloud: LogicalCloud): boolean {
  return (cloud.spec.userPermissions ?? []).some((p) => p.namespace === cloud.spec.namespace);
}

/**
 * Where the last action asked of the cloud stands: the controller's deployedStatus once it took
 * that action up; before that (its status is still about the previous one) the action's first
 * state, never what the previous action reached.
 */
export function deployedStatusOf(cloud: LogicalCloud): DeployedState | undefined {
  const lifecycle = cloud.spec.lifecycle;
  if (lifecycle && cloud.status?.instance !== lifecycle.instance) {
    return lifecycle.action === "Terminate" ? "Terminating" : "Instantiating";
  }
  return cloud.status?.deployedStatus;
}

/**
 * Why the cloud may not be deleted yet (undefined: it may), and whether asking again soon will do. As DCM: once terminated (or its
 * termination failed and was stopped) or never instantiated; and, beyond DCM, once a failed
 * instantiation was rolled back everywhere — nothing of it is left on any cluster either way.
 */
export function deleteRefusal(cloud: LogicalCloud): { detail: string; soon: boolean } | undefined {
  const lifecycle = cloud.spec.lifecycle;
  if (!lifecycle) return undefined;
  const name = cloud.metadata!.name!;
  const deployed = deployedStatusOf(cloud);
  const clusters = cloud.status?.clusters ?? [];
  const left = clusters.filter((e) => e.state !== "Removed");
  const rolledBack = cloud.status?.rolledBackInstance === lifecycle.instance;
  if (deployed === "Terminated" || deployed === "TerminateFailed" || (rolledBack && left.length === 0)) {
    return undefined;
  }
  if (cloud.status?.instance !== lifecycle.instance) {
    const detail = `logical cloud "${name}": the ${lifecycle.action.toLowerCase()} asked at ${lifecycle.requestedAt} is not taken up yet`;
    return lifecycle.action === "Terminate"
      ? { detail: `${detail}; delete it once its status says Terminated`, soon: true }
      : { detail: `${detail}; terminate it first (POST …/terminate)`, soon: false };
  }
  if (lifecycle.action === "Terminate" || rolledBack) {
    const removing = left.map((e) => `"${e.cluster}" (${e.state}${e.message ? `: ${e.message}` : ""})`);
    return {
      detail: `logical cloud "${name}" is still being removed from ${removing.join(", ")}: delete it once its status says Terminated`,
      soon: true,
    };
  }
  return {
    detail: `logical cloud "${name}" is ${deployed ?? "Instantiating"}: terminate it first (POST …/terminate), then delete it once its status says Terminated`,
    soon: false,
  };
}
