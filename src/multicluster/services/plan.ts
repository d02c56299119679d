/**
 * What the exports of one Service across the clusterset make (KEP-1645, "Constraints and Conflict
 * Resolution"): which exports are valid, which contribute, the ServiceImport's type and ports,
 * each export's conditions, and the EndpointSlices an importing cluster gets. Pure functions.
 *
 * - An export is valid when its Service exists and is not ExternalName.
 * - Type (Headless when the Service's clusterIP is None, else ClusterSetIP), session affinity and
 *   the properties of a port name come from the oldest export (creationTimestamp, then cluster
 *   name). An export of the other type conflicts and does not contribute endpoints; an export
 *   whose port of the same name differs conflicts on that port and contributes the rest.
 * - Ports are the union over the contributing exports.
 */
import { createHash } from "node:crypto";
import type { V1Endpoint, V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import type { Condition, ConditionUpdate } from "../../kube/index.js";
import {
  EXPORT_CONDITIONS,
  EXPORT_REASONS,
  MCS_SERVICE_NAME_LABEL,
  MCS_SOURCE_CLUSTER_LABEL,
  type ServiceExport,
  type ServiceImportPort,
  type ServiceImportSpec,
  type ServiceImportType,
} from "../api/mcs.js";
import type { AddressMapper } from "./addresses.js";

/** Marks what tenantry's multi-cluster services controller writes (EndpointSlices, derived Services). */
export const MCS_MANAGED_BY = "multicluster.tenantry.dev";
export const ENDPOINTSLICE_MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by";
/** On a derived Service: the ServiceImport it gives a clusterset IP to. */
export const DERIVED_FROM_IMPORT_LABEL = "multicluster.tenantry.dev/service-import";
const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
/** EndpointSlices hold at most this many endpoints (the API's own limit). */
const MAX_ENDPOINTS = 1000;

/** One cluster's export of the Service: the export, and the Service and its own EndpointSlices there. */
export interface ClusterExport {
  /** The exporting cluster's name (the source-cluster label, `status.clusters[].cluster`). */
  cluster: string;
  export: ServiceExport;
  service?: V1Service | undefined;
  /** The EndpointSlices the exporting cluster made for the Service (`kubernetes.io/service-name`). */
  slices: V1EndpointSlice[];
}

export interface ExportPlan {
  /** The ServiceImport's spec without `ips` (each importing cluster has its own VIP), if any export contributes. */
  spec?: ServiceImportSpec;
  /** The exports whose endpoints the import carries, oldest first. */
  contributing: ClusterExport[];
  /** Conditions to set on each cluster's export, by cluster. */
  conditions: Map<string, ConditionUpdate[]>;
}

/** The service's type as an import sees it. */
export function importType(service: V1Service): ServiceImportType {
  return service.spec?.clusterIP === "None" ? "Headless" : "ClusterSetIP";
}

function age(e: ClusterExport): string {
  return e.export.metadata?.creationTimestamp
    ? new Date(e.export.metadata.creationTimestamp).toISOString()
    : "";
}

function invalidReason(e: ClusterExport): { reason: string; message: string } | undefined {
  if (!e.service || e.service.metadata?.deletionTimestamp) {
    return { reason: EXPORT_REASONS.noService, message: `cluster ${e.cluster}: no Service of this name` };
  }
  if (e.service.spec?.type === "ExternalName") {
    return {
      reason: EXPORT_REASONS.invalidServiceType,
      message: `cluster ${e.cluster}: an ExternalName Service cannot be exported`,
    };
  }
  return undefined;
}

function samePort(a: ServiceImportPort, b: ServiceImportPort): boolean {
  return a.port === b.port && a.protocol === b.protocol && a.appProtocol === b.appProtocol;
}

function importPorts(service: V1Service): ServiceImportPort[] {
  return (service.spec?.ports ?? []).map((p) => ({
    ...(p.name ? { name: p.name } : {}),
    protocol: p.protocol ?? "TCP",
    ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}),
    port: p.port,
  }));
}

export function planExports(exports: readonly ClusterExport[]): ExportPlan {
  const conditions = new Map<string, ConditionUpdate[]>();
  const valid: ClusterExport[] = [];
  for (const e of exports) {
    const invalid = invalidReason(e);
    if (invalid) {
      conditions.set(e.cluster, [
        { type: EXPORT_CONDITIONS.valid, status: "False", ...invalid },
        {
          type: EXPORT_CONDITIONS.ready,
          status: "False",
          reason: EXPORT_REASONS.pending,
          message: invalid.message,
        },
      ]);
    } else {
      valid.push(e);
    }
  }
  valid.sort((a, b) => age(a).localeCompare(age(b)) || a.cluster.localeCompare(b.cluster));
  const oldest = valid[0];
  if (!oldest?.service) return { contributing: [], conditions };
  const type = importType(oldest.service);
  const ports: ServiceImportPort[] = [];
  const contributing: ClusterExport[] = [];
  for (const e of valid) {
    const validCondition: ConditionUpdate = {
      type: EXPORT_CONDITIONS.valid,
      status: "True",
      reason: EXPORT_REASONS.valid,
      message: "the Service can be exported",
    };
    if (importType(e.service!) !== type) {
      const message = `type ${importType(e.service!)} conflicts with ${type} of the oldest export (cluster ${oldest.cluster}); this cluster's endpoints are not imported`;
      conditions.set(e.cluster, [
        validCondition,
        { type: EXPORT_CONDITIONS.conflict, status: "True", reason: EXPORT_REASONS.typeConflict, message },
        { type: EXPORT_CONDITIONS.ready, status: "False", reason: EXPORT_REASONS.failed, message },
      ]);
      continue;
    }
    const conflicts: string[] = [];
    for (const port of importPorts(e.service!)) {
      const held = ports.find((p) => (p.name ?? "") === (port.name ?? ""));
      if (!held) ports.push(port);
      else if (!samePort(held, port)) conflicts.push(port.name ?? `${port.port}/${port.protocol}`);
    }
    contributing.push(e);
    conditions.set(e.cluster, [
      validCondition,
      conflicts.length
        ? {
            type: EXPORT_CONDITIONS.conflict,
            status: "True",
            reason: EXPORT_REASONS.portConflict,
            message: `port ${conflicts.join(", ")}: an older export (cluster ${oldest.cluster} first) defines it differently; the older definition is used`,
          }
        : {
            type: EXPORT_CONDITIONS.conflict,
            status: "False",
            reason: EXPORT_REASONS.noConflicts,
            message: "",
          },
      {
        type: EXPORT_CONDITIONS.ready,
        status: "True",
        reason: EXPORT_REASONS.exported,
        message: "the Service is imported in every cluster of its namespace",
      },
    ]);
  }
  const spec: ServiceImportSpec = { type, ports };
  const affinity = oldest.service.spec?.sessionAffinity;
  if (type === "ClusterSetIP" && affinity) {
    spec.sessionAffinity = affinity;
    const timeoutSeconds = oldest.service.spec?.sessionAffinityConfig?.clientIP?.timeoutSeconds;
    if (affinity === "ClientIP" && timeoutSeconds)
      spec.sessionAffinityConfig = { clientIP: { timeoutSeconds } };
  }
  return { spec, contributing, conditions };
}

/** Conditions as they should stand once `updates` are applied (unchanged ones keep their times). */
export function conditionsChanged(
  current: readonly Condition[] | undefined,
  updates: ConditionUpdate[],
): boolean {
  return updates.some((u) => {
    const found = current?.find((c) => c.type === u.type);
    return !found || found.status !== u.status || found.reason !== u.reason || found.message !== u.message;
  });
}

function shortHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 10);
}

/** The selector-less Service whose ClusterIP is the import's clusterset IP in one cluster. */
export function derivedServiceName(importName: string): string {
  return `${importName.slice(0, 40)}-mcs-${shortHash(importName)}`;
}

/** One imported EndpointSlice per source slice: its name in the importing cluster. */
export function importedSliceName(importName: string, cluster: string, sourceSlice: string): string {
  return `${importName.slice(0, 30)}-${cluster.slice(0, 20)}-${shortHash(`${cluster}/${sourceSlice}`)}`;
}

/**
 * The EndpointSlices an importing cluster gets: one per EndpointSlice of each contributing
 * cluster, its addresses as the importing cluster reaches them (`mapAddress`), without what means
 * nothing there (node names, target references, hints). For ClusterSetIP they also name the
 * derived Service, so kube-proxy sends the clusterset IP to them.
 */
export function importedSlices(options: {
  importName: string;
  namespace: string;
  importer: string;
  contributing: readonly ClusterExport[];
  type: ServiceImportType;
  mapAddress: AddressMapper;
}): V1EndpointSlice[] {
  const slices: V1EndpointSlice[] = [];
  for (const source of options.contributing) {
    for (const slice of source.slices) {
      const endpoints: V1Endpoint[] = [];
      for (const endpoint of slice.endpoints ?? []) {
        const addresses = endpoint.addresses
          .map((address) => options.mapAddress(address, { from: source.cluster, to: options.importer }))
          .filter((address): address is string => address !== undefined);
        if (!addresses.length) continue;
        endpoints.push({
          addresses,
          ...(endpoint.conditions ? { conditions: endpoint.conditions } : {}),
          ...(endpoint.hostname ? { hostname: endpoint.hostname } : {}),
          ...(endpoint.zone ? { zone: endpoint.zone } : {}),
        });
      }
      slices.push({
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: {
          name: importedSliceName(options.importName, source.cluster, slice.metadata!.name!),
          namespace: options.namespace,
          labels: {
            [MCS_SERVICE_NAME_LABEL]: options.importName,
            [MCS_SOURCE_CLUSTER_LABEL]: source.cluster,
            [ENDPOINTSLICE_MANAGED_BY_LABEL]: MCS_MANAGED_BY,
            ...(options.type === "ClusterSetIP"
              ? { [SERVICE_NAME_LABEL]: derivedServiceName(options.importName) }
              : {}),
          },
        },
        addressType: slice.addressType,
        endpoints: endpoints.slice(0, MAX_ENDPOINTS),
        ports: (slice.ports ?? []).map((p) => ({ ...p })),
      });
    }
  }
  return slices;
}

/** The derived Service of a ClusterSetIP import: selector-less, the import's ports. */
export function derivedService(options: {
  importName: string;
  namespace: string;
  spec: ServiceImportSpec;
  owner: { uid: string };
}): V1Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: derivedServiceName(options.importName),
      namespace: options.namespace,
      labels: { [DERIVED_FROM_IMPORT_LABEL]: options.importName },
      ownerReferences: [
        {
          apiVersion: "multicluster.x-k8s.io/v1alpha1",
          kind: "ServiceImport",
          name: options.importName,
          uid: options.owner.uid,
          controller: true,
          blockOwnerDeletion: false,
        },
      ],
    },
    spec: {
      type: "ClusterIP",
      ports: options.spec.ports.map((p) => ({
        ...(p.name ? { name: p.name } : {}),
        port: p.port,
        protocol: p.protocol ?? "TCP",
        ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}),
      })),
      ...(options.spec.sessionAffinity ? { sessionAffinity: options.spec.sessionAffinity } : {}),
      ...(options.spec.sessionAffinityConfig
        ? { sessionAffinityConfig: options.spec.sessionAffinityConfig }
        : {}),
    },
  };
}
