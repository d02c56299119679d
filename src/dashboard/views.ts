/**
 * What the dashboard's JSON API answers, built from the caches' objects. Pure functions: who may
 * see which object is decided before these are called (see access.ts).
 */
import type { V1Namespace, V1Node, V1Pod } from "@kubernetes/client-node";
import type { AccessGrant } from "../access/index.js";
import type { RuntimeBackup, RuntimeRestore } from "../backup/index.js";
import type { LogicalCloud } from "../clouds/index.js";
import type { Cluster } from "../clusters/index.js";
import { formatQuantity, parseQuantity } from "../common/index.js";
import { findCondition } from "../kube/index.js";
import type { MonitorRule } from "../monitor/index.js";
import type { NamespaceOffloading, NamespaceOffloadingSpec, Peering } from "../multicluster/index.js";
import type { WorkerNode } from "../nodes/index.js";
import {
  isTerminalPod,
  NAMESPACE_ORIGIN_LABEL,
  podUsage,
  type Tenant,
  USER_LABEL,
} from "../tenants/index.js";
import type {
  AccessGrantView,
  Alert,
  BackupView,
  ClusterView,
  LogicalCloudView,
  NamespaceRow,
  OffloadingView,
  Paged,
  PeeringView,
  QuotaRow,
  TenantDetail,
  TenantSummary,
  UsagePoint,
  UserUsage,
  VirtualNodeView,
  WorkerNodeView,
} from "./model.js";

/**
 * The pseudo-resource of spec.namespaceQuota: the namespaces the tenant's owners created (declared
 * ones do not count), not being deleted — what tenantry's admission counts.
 */
export const NAMESPACES_RESOURCE = "namespaces";

export function ownerCreatedNamespaces(namespaces: V1Namespace[]): number {
  return namespaces.filter(
    (n) => n.metadata?.labels?.[NAMESPACE_ORIGIN_LABEL] === "owner" && !n.metadata?.deletionTimestamp,
  ).length;
}

function amount(text: string | number | undefined): number {
  if (text === undefined) return 0;
  try {
    return Number(parseQuantity(text)) / 1e9;
  } catch {
    return 0;
  }
}

/** A tenant's quota rows: its owners' namespaces first (when limited), then status.usage's resources. */
export function quotaRows(tenant: Tenant, ownerNamespaces: number): QuotaRow[] {
  const rows: QuotaRow[] = [];
  const limit = tenant.spec.namespaceQuota;
  const count = ownerNamespaces;
  if (limit !== undefined) {
    rows.push({
      resource: NAMESPACES_RESOURCE,
      used: String(count),
      hard: String(limit),
      usedValue: count,
      hardValue: limit,
    });
  }
  const usage = tenant.status?.usage;
  for (const [resource, hard] of Object.entries(usage?.hard ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    const used = usage?.used?.[resource] ?? "0";
    rows.push({
      resource,
      used: String(used),
      hard: String(hard),
      usedValue: amount(used),
      hardValue: amount(hard),
    });
  }
  return rows;
}

export function tenantSummary(tenant: Tenant, ownerNamespaces: number): TenantSummary {
  const ready = findCondition(tenant.status?.conditions, "Ready");
  return {
    name: tenant.metadata!.name!,
    owners: tenant.status?.ownerSummary ?? tenant.spec.owners.map((o) => `${o.kind}/${o.name}`).join(", "),
    namespaceCount: tenant.status?.namespaceCount ?? tenant.status?.namespaces?.length ?? 0,
    ready: ready?.status === "True",
    ...(ready?.status !== "True" && ready?.message ? { readyMessage: ready.message } : {}),
    cordoned: tenant.spec.cordoned === true,
    quota: quotaRows(tenant, ownerNamespaces),
  };
}

export interface PageQuery {
  filter?: string;
  offset: number;
  limit: number;
}

/** One page of `items` sorted by key, those whose key holds `filter` (any case). */
export function pageOf<T, V>(
  items: readonly T[],
  keyOf: (item: T) => string,
  query: PageQuery,
  view: (item: T) => V,
): Paged<V> {
  const filter = query.filter?.toLowerCase();
  const keyed = items.map((item) => ({ key: keyOf(item), item }));
  const matching = filter ? keyed.filter((k) => k.key.toLowerCase().includes(filter)) : keyed;
  matching.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return {
    total: matching.length,
    offset: query.offset,
    items: matching.slice(query.offset, query.offset + query.limit).map((k) => view(k.item)),
  };
}

/** A tenant with fewer namespaces than this offers them as choices; beyond, they are typed. */
export const MAX_NAMESPACE_CHOICES = 200;

export function namespaceRow(ns: V1Namespace): NamespaceRow {
  return {
    name: ns.metadata!.name!,
    phase: ns.status?.phase ?? "",
    ...(ns.metadata?.creationTimestamp ? { created: String(ns.metadata.creationTimestamp) } : {}),
  };
}

export function tenantDetail(input: {
  tenant: Tenant;
  namespaces: V1Namespace[];
  query: PageQuery;
  history: Record<string, UsagePoint[]>;
  usage: UserUsage[];
  grants: AccessGrantView[];
}): TenantDetail {
  const { tenant, namespaces } = input;
  return {
    ...tenantSummary(tenant, ownerCreatedNamespaces(namespaces)),
    ownerList: tenant.spec.owners.map((o) => ({ kind: o.kind, name: o.name })),
    users: (tenant.spec.users ?? []).map((u) => ({ name: u.name })),
    namespaces: pageOf(namespaces, (ns) => ns.metadata!.name!, input.query, namespaceRow),
    namespaceChoices:
      namespaces.length <= MAX_NAMESPACE_CHOICES ? namespaces.map((ns) => ns.metadata!.name!).sort() : [],
    history: input.history,
    usage: input.usage,
    grants: input.grants,
  };
}

/** One page of tenants, by name, filtered by a part of the name. */
export function tenantPage(
  tenants: Tenant[],
  query: PageQuery,
  ownerNamespacesOf: (tenant: string) => number,
): Paged<TenantSummary> {
  return pageOf(
    tenants,
    (t) => t.metadata!.name!,
    query,
    (t) => tenantSummary(t, ownerNamespacesOf(t.metadata!.name!)),
  );
}

/**
 * What each user's pods in a tenant use, from the pods' user label (set by tenantry's admission on
 * every object a person creates): pods that still run or wait, and their requests, as quota counts
 * them. Pods without a user label (made by controllers for nobody in particular) are left out.
 */
export function userUsage(pods: readonly V1Pod[]): UserUsage[] {
  const byUser = new Map<string, { pods: number; cpu: bigint; memory: bigint }>();
  for (const pod of pods) {
    const user = pod.metadata?.labels?.[USER_LABEL];
    if (!user || isTerminalPod(pod)) continue;
    const usage = podUsage(pod);
    const sum = byUser.get(user) ?? { pods: 0, cpu: 0n, memory: 0n };
    sum.pods += 1;
    sum.cpu += usage.get("requests.cpu") ?? 0n;
    sum.memory += usage.get("requests.memory") ?? 0n;
    byUser.set(user, sum);
  }
  return [...byUser]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([user, sum]) => ({
      user,
      pods: sum.pods,
      cpu: formatQuantity(sum.cpu),
      memory: formatQuantity(sum.memory, true),
    }));
}

export function accessGrantView(grant: AccessGrant): AccessGrantView {
  const ready = findCondition(grant.status?.conditions, "Ready");
  return {
    namespace: grant.metadata!.namespace!,
    name: grant.metadata!.name!,
    grantees: grant.spec.grantees.map((g) => `${g.kind} ${g.name}`),
    rules: grant.spec.rules.map(
      (r) =>
        `${r.verbs.join(",")} ${r.resources.join(",")}${r.apiGroups.some((g) => g) ? ` (${r.apiGroups.map((g) => g || "core").join(",")})` : ""}${r.resourceNames?.length ? ` named ${r.resourceNames.join(",")}` : ""}`,
    ),
    ...(grant.spec.expiresAt ? { expiresAt: grant.spec.expiresAt } : {}),
    ready: ready ? ready.status === "True" : true,
    message: ready?.message ?? "",
  };
}

export function clusterView(cluster: Cluster): ClusterView {
  const ready = findCondition(cluster.status?.conditions, "Ready");
  return {
    name: cluster.metadata!.name!,
    labels: cluster.metadata?.labels ?? {},
    provider: cluster.spec.provider ?? "",
    description: cluster.spec.description ?? "",
    ready: ready?.status === "True",
    readyMessage: ready?.message ?? "",
    version: cluster.status?.version ?? "",
    nodes: cluster.status?.nodes ?? 0,
    capacity: cluster.status?.capacitySummary ?? "",
    lastProbe: cluster.status?.lastProbeTime ?? "",
  };
}

export function virtualNodeView(node: V1Node): VirtualNodeView {
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  return {
    name: node.metadata!.name!,
    ready: ready?.status === "True",
    message: ready?.message ?? "",
    allocatable: Object.entries(node.status?.allocatable ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${v}`)
      .join(", "),
    labels: node.metadata?.labels ?? {},
  };
}

export function peeringView(peering: Peering, node: V1Node | undefined): PeeringView {
  const ready = findCondition(peering.status?.conditions, "Ready");
  const healthy = findCondition(peering.status?.conditions, "Healthy");
  return {
    name: peering.metadata!.name!,
    remoteClusterId: peering.spec.remoteClusterId,
    ready: ready?.status === "True",
    healthy: healthy?.status === "True",
    message:
      (ready?.status !== "True" ? ready?.message : healthy?.status !== "True" ? healthy?.message : "") ?? "",
    lastHeartbeat: peering.status?.lastHeartbeat ?? "",
    capacity: peering.status?.capacitySummary ?? "",
    labels: peering.spec.labels ?? {},
    credentialsExpireAt: peering.status?.credentialsExpireAt ?? "",
    ...(node ? { virtualNode: virtualNodeView(node) } : {}),
  };
}

export function workerNodeView(node: WorkerNode): WorkerNodeView {
  return {
    name: node.metadata!.name!,
    tenant: node.spec.tenant ?? "",
    owner: node.spec.owner ?? "",
    policy: node.spec.policy ?? "private",
    flavor: node.spec.flavor,
    provider: node.spec.provider ?? "",
    phase: node.status?.phase ?? "Pending",
    message: node.status?.message ?? node.status?.reason ?? "",
  };
}

export function logicalCloudView(cloud: LogicalCloud, project: string): LogicalCloudView {
  const ready = findCondition(cloud.status?.conditions, "Ready");
  return {
    namespace: cloud.metadata!.namespace!,
    project,
    name: cloud.metadata!.name!,
    level: cloud.spec.level ?? "",
    state: cloud.status?.state ?? "",
    ready: ready?.status === "True",
    message: cloud.status?.message ?? "",
    clusters: (cloud.status?.clusters ?? []).map((c) => ({
      cluster: String((c as { cluster?: string }).cluster ?? ""),
      state: String((c as { state?: string }).state ?? ""),
      message: String((c as { message?: string }).message ?? ""),
    })),
  };
}

/** A node selector on one line: a term's requirements joined by ", ", terms by " or ". */
export function selectorText(selector: NamespaceOffloadingSpec["clusterSelector"]): string {
  return (selector?.nodeSelectorTerms ?? [])
    .map((term) =>
      [...(term.matchExpressions ?? []), ...(term.matchFields ?? [])]
        .map((r) => `${r.key} ${r.operator}${r.values?.length ? ` (${r.values.join(", ")})` : ""}`)
        .join(", "),
    )
    .filter(Boolean)
    .join(" or ");
}

export function offloadingView(offloading: NamespaceOffloading, tenant: string): OffloadingView {
  const status = offloading.status;
  const ready = findCondition(status?.conditions, "Ready");
  return {
    namespace: offloading.metadata!.namespace!,
    tenant,
    podOffloadingStrategy: offloading.spec?.podOffloadingStrategy ?? "LocalAndRemote",
    namespaceMappingStrategy: offloading.spec?.namespaceMappingStrategy ?? "DefaultName",
    remoteNamespace: status?.remoteNamespaceName ?? "",
    clusterSelector: selectorText(offloading.spec?.clusterSelector),
    phase: status?.offloadingPhase ?? "",
    message: ready?.message ?? "",
    clusters: Object.entries(status?.remoteNamespacesConditions ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([cluster, conditions]) => {
        const replica = conditions.find((c) => c.type === "Ready");
        const required = conditions.find((c) => c.type === "OffloadingRequired");
        return {
          cluster,
          selected: required?.status === "True",
          phase: replica?.reason ?? "",
          ready: replica?.status === "True",
          message: replica?.message ?? "",
        };
      }),
  };
}

export function backupView(backup: RuntimeBackup, restores: readonly RuntimeRestore[] = []): BackupView {
  const latest = restores.reduce<RuntimeRestore | undefined>(
    (newest, r) =>
      !newest ||
      String(r.metadata?.creationTimestamp ?? "") > String(newest.metadata?.creationTimestamp ?? "")
        ? r
        : newest,
    undefined,
  );
  return {
    name: backup.metadata!.name!,
    runtime: backup.spec.runtime,
    trigger: backup.spec.trigger ?? "Manual",
    phase: backup.status?.phase ?? "Pending",
    message: backup.status?.message ?? "",
    size: (backup.status?.volumes ?? []).reduce((n, v) => n + (v.size ?? 0), 0),
    created: String(backup.metadata?.creationTimestamp ?? ""),
    ...(latest
      ? {
          restore: {
            name: latest.metadata!.name!,
            phase: latest.status?.phase ?? "Pending",
            message: latest.status?.message ?? "",
          },
        }
      : {}),
  };
}

/** Alerts: what tenantry's own status conditions say is not right. */
export function alertsOf(input: { tenants: Tenant[]; clusters: Cluster[]; nodes: WorkerNode[] }): Alert[] {
  const alerts: Alert[] = [];
  for (const tenant of input.tenants) {
    const ready = findCondition(tenant.status?.conditions, "Ready");
    if (ready?.status === "False")
      alerts.push({
        kind: "Tenant",
        name: tenant.metadata!.name!,
        message: ready.message ?? ready.reason ?? "",
      });
  }
  for (const cluster of input.clusters) {
    const ready = findCondition(cluster.status?.conditions, "Ready");
    if (ready?.status === "False")
      alerts.push({
        kind: "Cluster",
        name: cluster.metadata!.name!,
        message: ready.message ?? ready.reason ?? "",
      });
  }
  for (const node of input.nodes) {
    if (node.status?.phase === "Failed")
      alerts.push({ kind: "WorkerNode", name: node.metadata!.name!, message: node.status.message ?? "" });
  }
  return alerts;
}

/**
 * The monitor's firing alerts (MonitorRule status.alerts) of the objects a person may see: those
 * of tenants `seesTenant` allows; alerts of no tenant (nodes, namespaces outside tenants) only
 * when `seesAll`.
 */
export function monitorAlerts(
  rules: readonly MonitorRule[],
  seesAll: boolean,
  seesTenant: (tenant: string) => boolean,
): Alert[] {
  const alerts: Alert[] = [];
  for (const rule of rules) {
    for (const alert of rule.status?.alerts ?? []) {
      if (!seesAll && !(alert.tenant && seesTenant(alert.tenant))) continue;
      alerts.push({
        kind: alert.kind,
        name: alert.name,
        ...(alert.namespace ? { namespace: alert.namespace } : {}),
        message: alert.message,
        rule: rule.metadata!.name!,
        since: alert.since,
      });
    }
  }
  return alerts.sort((a, b) => (a.since ?? "").localeCompare(b.since ?? ""));
}
