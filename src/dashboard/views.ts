/**
 * What the dashboard's JSON API answers, built from the caches' objects. Pure functions: who may
 * see which object is decided before these are called (see access.ts).
 */
import type { V1Namespace } from "@kubernetes/client-node";
import type { LogicalCloud } from "../clouds/index.js";
import type { Cluster } from "../clusters/index.js";
import { parseQuantity } from "../common/index.js";
import { findCondition } from "../kube/index.js";
import type { WorkerNode } from "../nodes/index.js";
import { NAMESPACE_ORIGIN_LABEL, type Tenant } from "../tenants/index.js";
import type { UsagePoint } from "./history.js";

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

export interface QuotaRow {
  resource: string;
  used: string;
  hard: string;
  /** used / hard as numbers in the resource's base unit, for charts. */
  usedValue: number;
  hardValue: number;
}

export interface TenantSummary {
  name: string;
  owners: string;
  namespaceCount: number;
  ready: boolean;
  readyMessage?: string;
  cordoned: boolean;
  quota: QuotaRow[];
}

export interface TenantDetail extends TenantSummary {
  ownerList: { kind: string; name: string }[];
  users: { name: string }[];
  namespaces: { name: string; phase: string; created?: string }[];
  history: Record<string, UsagePoint[]>;
}

export interface Alert {
  kind: "Tenant" | "Cluster" | "LogicalCloud" | "WorkerNode";
  name: string;
  message: string;
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

export function tenantDetail(
  tenant: Tenant,
  namespaces: V1Namespace[],
  history: Record<string, UsagePoint[]>,
): TenantDetail {
  return {
    ...tenantSummary(tenant, ownerCreatedNamespaces(namespaces)),
    ownerList: tenant.spec.owners.map((o) => ({ kind: o.kind, name: o.name })),
    users: (tenant.spec.users ?? []).map((u) => ({ name: u.name })),
    namespaces: namespaces
      .map((ns) => ({
        name: ns.metadata!.name!,
        phase: ns.status?.phase ?? "",
        ...(ns.metadata?.creationTimestamp ? { created: String(ns.metadata.creationTimestamp) } : {}),
      }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    history,
  };
}

/** One page of tenants, by name, filtered by a part of the name. */
export function tenantPage(
  tenants: Tenant[],
  query: { filter?: string; offset: number; limit: number },
  ownerNamespacesOf: (tenant: string) => number,
): { total: number; offset: number; items: TenantSummary[] } {
  const filter = query.filter?.toLowerCase();
  const matching = (filter ? tenants.filter((t) => t.metadata!.name!.includes(filter)) : tenants)
    .map((t) => t.metadata!.name!)
    .sort();
  const byName = new Map(tenants.map((t) => [t.metadata!.name!, t]));
  return {
    total: matching.length,
    offset: query.offset,
    items: matching
      .slice(query.offset, query.offset + query.limit)
      .map((n) => tenantSummary(byName.get(n)!, ownerNamespacesOf(n))),
  };
}

export function clusterView(cluster: Cluster) {
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

export function workerNodeView(node: WorkerNode) {
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

export function logicalCloudView(cloud: LogicalCloud) {
  const ready = findCondition(cloud.status?.conditions, "Ready");
  return {
    namespace: cloud.metadata!.namespace!,
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

/** Alerts: what tenantry's own status conditions say is not right (there is no separate monitor). */
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
