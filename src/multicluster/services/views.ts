/**
 * What the multi-cluster services controller reads of one cluster's copy of an offloaded
 * namespace: ServiceExports, Services, EndpointSlices and ServiceImports. Home's come from the
 * shared cache (every namespace); a provider's from informers on its replica namespace only,
 * through the peering's scoped client, started and stopped as the replica comes and goes.
 */
import type { KubernetesObject, V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import type { ClusterClient, Informer } from "../../kube/index.js";
import {
  MCS_API_VERSION,
  MCS_SERVICE_NAME_LABEL,
  type ServiceExport,
  type ServiceImport,
} from "../api/mcs.js";
import { ENDPOINTSLICE_MANAGED_BY_LABEL, MCS_MANAGED_BY } from "./plan.js";

export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
/** On every ServiceImport tenantry makes: only those are ever deleted by it. */
export const IMPORT_MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";

export interface ViewInformers {
  exports: Informer<ServiceExport & KubernetesObject>;
  imports: Informer<ServiceImport & KubernetesObject>;
  services: Informer<V1Service>;
  slices: Informer<V1EndpointSlice>;
}

/** One member of a namespace's clusterset: home or a provider holding an accepted replica. */
export interface MemberView {
  /** The cluster's name: source-cluster label, `status.clusters[].cluster`. */
  cluster: string;
  namespace: string;
  client: ClusterClient;
  informers: ViewInformers;
}

export const RESOURCES = {
  exports: { apiVersion: MCS_API_VERSION, kind: "ServiceExport" },
  imports: { apiVersion: MCS_API_VERSION, kind: "ServiceImport" },
  services: { apiVersion: "v1", kind: "Service" },
  slices: { apiVersion: "discovery.k8s.io/v1", kind: "EndpointSlice" },
} as const;

export function liveExport(view: MemberView, name: string): ServiceExport | undefined {
  const found = view.informers.exports.get(view.namespace, name);
  return found && !found.metadata?.deletionTimestamp ? found : undefined;
}

/** A ServiceImport tenantry made (not one an administrator wrote by hand). */
export function managedImport(view: MemberView, name: string): ServiceImport | undefined {
  const found = view.informers.imports.get(view.namespace, name);
  return found?.metadata?.labels?.[IMPORT_MANAGED_BY_LABEL] === MCS_MANAGED_BY ? found : undefined;
}

export function isImportedSlice(slice: V1EndpointSlice): boolean {
  return slice.metadata?.labels?.[ENDPOINTSLICE_MANAGED_BY_LABEL] === MCS_MANAGED_BY;
}

/** The cluster's own EndpointSlices of Service `name` (not the ones tenantry imported). */
export function sourceSlices(view: MemberView, name: string): V1EndpointSlice[] {
  return view.informers.slices
    .inNamespace(view.namespace)
    .filter((s) => s.metadata?.labels?.[SERVICE_NAME_LABEL] === name && !isImportedSlice(s));
}

/** The EndpointSlices tenantry imported into the cluster for import `name`. */
export function importedSlicesOf(view: MemberView, name: string): V1EndpointSlice[] {
  return view.informers.slices
    .inNamespace(view.namespace)
    .filter((s) => s.metadata?.labels?.[MCS_SERVICE_NAME_LABEL] === name && isImportedSlice(s));
}

/** The multi-cluster service an object of a view is about, if any. */
export function serviceNameOf(obj: KubernetesObject): string | undefined {
  if (obj.kind === "EndpointSlice" || (obj as V1EndpointSlice).addressType) {
    const labels = obj.metadata?.labels ?? {};
    return labels[MCS_SERVICE_NAME_LABEL] ?? labels[SERVICE_NAME_LABEL];
  }
  return obj.metadata?.name;
}

/** Every name exported or imported in one view. */
export function namesIn(view: MemberView): string[] {
  return [
    ...view.informers.exports.inNamespace(view.namespace),
    ...view.informers.imports.inNamespace(view.namespace),
  ].map((o) => o.metadata!.name!);
}
