/**
 * The writes of the multi-cluster services controller in one member cluster: the ServiceImport,
 * its derived Service (ClusterSetIP), the imported EndpointSlices, and the ServiceExport's
 * conditions. Each member is written with its own client (a provider's: the peering's scoped one).
 */
import type { KubernetesObject, V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  applyStatus,
  type ConditionUpdate,
  ignoreNotFound,
  isNotFound,
  setCondition,
} from "../../kube/index.js";
import {
  EXPORT_CONDITIONS,
  EXPORT_REASONS,
  MCS_API_VERSION,
  type ServiceImport,
  type ServiceImportSpec,
} from "../api/mcs.js";
import type { AddressMapper } from "./addresses.js";
import {
  conditionsChanged,
  DERIVED_FROM_IMPORT_LABEL,
  derivedService,
  derivedServiceName,
  type ExportPlan,
  importedSlices,
  MCS_MANAGED_BY,
} from "./plan.js";
import {
  IMPORT_MANAGED_BY_LABEL,
  importedSlicesOf,
  liveExport,
  type MemberView,
  managedImport,
} from "./views.js";

/** Reason of Valid=False on an export in a namespace that is not offloaded: it stays in its cluster. */
export const NOT_OFFLOADED_REASON = "NamespaceNotOffloaded";

export class ServiceImportWriter {
  constructor(private readonly options: { logger: Logger; mapAddress: AddressMapper }) {}

  /** Makes the member's import, derived Service and slices what `plan` says, or removes them. */
  async converge(member: MemberView, name: string, plan: ExportPlan): Promise<void> {
    if (!plan.spec) {
      await this.withdraw(member, name);
      return;
    }
    const current = managedImport(member, name);
    const existing = member.informers.imports.get(member.namespace, name);
    if (existing && !current) {
      throw new Error(
        `ServiceImport ${member.namespace}/${name} exists and is not tenantry's; left as it is`,
      );
    }
    let uid = current?.metadata?.uid;
    let ips = current?.spec?.ips;
    if (!uid) uid = (await this.applyImport(member, name, plan.spec, undefined)).metadata!.uid!;
    if (plan.spec.type === "ClusterSetIP") {
      ips = await this.derivedIps(member, name, plan.spec, uid);
    } else {
      ips = undefined;
      await this.deleteDerived(member, name);
    }
    const imported = await this.applyImport(member, name, plan.spec, ips);
    const desired = importedSlices({
      importName: name,
      namespace: member.namespace,
      importer: member.cluster,
      contributing: plan.contributing,
      type: plan.spec.type,
      mapAddress: this.options.mapAddress,
    }).map((slice) => withOwner(slice, name, uid!));
    for (const slice of desired) await applyObject(member.client, slice);
    const wanted = new Set(desired.map((s) => s.metadata!.name));
    for (const slice of importedSlicesOf(member, name)) {
      if (!wanted.has(slice.metadata!.name)) await this.delete(member, slice);
    }
    await this.importStatus(member, imported, plan, desired.length > 0);
  }

  private async applyImport(
    member: MemberView,
    name: string,
    spec: ServiceImportSpec,
    ips: string[] | undefined,
  ): Promise<ServiceImport> {
    return (await applyObject(member.client, {
      apiVersion: MCS_API_VERSION,
      kind: "ServiceImport",
      metadata: {
        name,
        namespace: member.namespace,
        labels: { [IMPORT_MANAGED_BY_LABEL]: MCS_MANAGED_BY },
      },
      spec: { ...spec, ...(ips?.length ? { ips } : {}) },
    } as KubernetesObject)) as ServiceImport;
  }

  /** The clusterset IP in this member: the ClusterIP its API server gave the derived Service. */
  private async derivedIps(
    member: MemberView,
    name: string,
    spec: ServiceImportSpec,
    uid: string,
  ): Promise<string[]> {
    const serviceName = derivedServiceName(name);
    const existing = member.informers.services.get(member.namespace, serviceName);
    if (existing && existing.metadata?.labels?.[DERIVED_FROM_IMPORT_LABEL] !== name) {
      throw new Error(`Service ${member.namespace}/${serviceName} is not tenantry's; no clusterset IP`);
    }
    const desired = derivedService({ importName: name, namespace: member.namespace, spec, owner: { uid } });
    const applied = (await applyObject(member.client, desired)) as V1Service;
    const ips = applied.spec?.clusterIPs ?? (applied.spec?.clusterIP ? [applied.spec.clusterIP] : []);
    return ips.filter((ip) => ip && ip !== "None");
  }

  private async deleteDerived(member: MemberView, name: string): Promise<void> {
    const serviceName = derivedServiceName(name);
    const existing = member.informers.services.get(member.namespace, serviceName);
    if (existing?.metadata?.labels?.[DERIVED_FROM_IMPORT_LABEL] === name) await this.delete(member, existing);
  }

  private async importStatus(
    member: MemberView,
    imported: ServiceImport,
    plan: ExportPlan,
    present: boolean,
  ): Promise<void> {
    const clusters = plan.contributing.map((e) => ({ cluster: e.cluster }));
    const conditions = setCondition(
      imported.status?.conditions,
      {
        type: "Ready",
        status: "True",
        reason: "Ready",
        message: `exported by ${clusters.map((c) => c.cluster).join(", ")}`,
      },
      Date.now(),
    );
    await applyStatus(member.client, {
      apiVersion: MCS_API_VERSION,
      kind: "ServiceImport",
      metadata: { name: imported.metadata!.name!, namespace: member.namespace },
      status: { clusters, endpointSliceObjects: present ? "Present" : "Absent", conditions },
    } as KubernetesObject & { status: unknown });
  }

  /** No export contributes: the import goes, its slices and derived Service with it. */
  async withdraw(member: MemberView, name: string): Promise<void> {
    for (const slice of importedSlicesOf(member, name)) await this.delete(member, slice);
    await this.deleteDerived(member, name);
    const current = managedImport(member, name);
    if (current) {
      await this.delete(member, {
        apiVersion: MCS_API_VERSION,
        kind: "ServiceImport",
        metadata: { name, namespace: member.namespace, uid: current.metadata!.uid! },
      });
      this.options.logger.info(
        { cluster: member.cluster, namespace: member.namespace, name },
        "import withdrawn",
      );
    }
  }

  private async delete(member: MemberView, obj: KubernetesObject): Promise<void> {
    const ref = {
      apiVersion: obj.apiVersion ?? (obj.kind === "Service" ? "v1" : "discovery.k8s.io/v1"),
      kind: obj.kind ?? ((obj as V1EndpointSlice).addressType ? "EndpointSlice" : "Service"),
      metadata: { name: obj.metadata!.name!, namespace: member.namespace },
    };
    const uid = obj.metadata?.uid;
    await ignoreNotFound(
      member.client.objects.delete(ref, undefined, undefined, undefined, undefined, undefined, {
        ...(uid ? { preconditions: { uid } } : {}),
      }),
    );
  }

  /** Writes the plan's conditions on the member's export, when they changed. */
  async exportStatus(member: MemberView, name: string, plan: ExportPlan, failures: string[]): Promise<void> {
    const found = liveExport(member, name);
    if (!found) return;
    let updates = plan.conditions.get(member.cluster) ?? [];
    if (failures.length && updates.some((u) => u.type === EXPORT_CONDITIONS.ready && u.status === "True")) {
      updates = updates.map((u) =>
        u.type === EXPORT_CONDITIONS.ready
          ? {
              ...u,
              status: "False",
              reason: EXPORT_REASONS.pending,
              message: `not yet imported everywhere: ${failures.join("; ")}`.slice(0, 1000),
            }
          : u,
      );
    }
    await this.writeExportConditions(member, name, found.status?.conditions, updates);
  }

  /** An export in a namespace that is not offloaded: Valid=False, and no import of tenantry's there. */
  async notOffloaded(view: MemberView, name: string): Promise<void> {
    const found = liveExport(view, name);
    if (managedImport(view, name) || importedSlicesOf(view, name).length) await this.withdraw(view, name);
    if (!found) return;
    const message = `namespace ${view.namespace} is not offloaded: the Service is exported only to the clusters of an offloaded namespace`;
    await this.writeExportConditions(view, name, found.status?.conditions, [
      { type: EXPORT_CONDITIONS.valid, status: "False", reason: NOT_OFFLOADED_REASON, message },
      { type: EXPORT_CONDITIONS.ready, status: "False", reason: EXPORT_REASONS.pending, message },
    ]);
  }

  private async writeExportConditions(
    member: MemberView,
    name: string,
    current: ConditionUpdate[] | undefined,
    updates: ConditionUpdate[],
  ): Promise<void> {
    if (!conditionsChanged(current as never, updates)) return;
    let conditions = (current ?? []) as ReturnType<typeof setCondition>;
    for (const update of updates) conditions = setCondition(conditions, update, Date.now());
    conditions = conditions.filter((c) => updates.some((u) => u.type === c.type));
    try {
      await applyStatus(member.client, {
        apiVersion: MCS_API_VERSION,
        kind: "ServiceExport",
        metadata: { name, namespace: member.namespace },
        status: { conditions },
      } as KubernetesObject & { status: unknown });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

function withOwner(slice: V1EndpointSlice, importName: string, uid: string): V1EndpointSlice {
  return {
    ...slice,
    metadata: {
      ...slice.metadata,
      ownerReferences: [
        { apiVersion: MCS_API_VERSION, kind: "ServiceImport", name: importName, uid, controller: true },
      ],
    },
  };
}
