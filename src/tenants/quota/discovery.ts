import type { ClusterClient } from "../../kube/index.js";
import type { ResourceRef } from "./usage.js";

export interface ResourceKind extends ResourceRef {
  apiVersion: string;
  kind: string;
}

/** Pods, Services and PVCs: what compute and storage quota names refer to. */
const COMPUTE: ResourceKind[] = [
  { group: "", resource: "pods", apiVersion: "v1", kind: "Pod" },
  { group: "", resource: "services", apiVersion: "v1", kind: "Service" },
  { group: "", resource: "persistentvolumeclaims", apiVersion: "v1", kind: "PersistentVolumeClaim" },
  { group: "", resource: "configmaps", apiVersion: "v1", kind: "ConfigMap" },
  { group: "", resource: "secrets", apiVersion: "v1", kind: "Secret" },
  { group: "", resource: "replicationcontrollers", apiVersion: "v1", kind: "ReplicationController" },
  { group: "", resource: "resourcequotas", apiVersion: "v1", kind: "ResourceQuota" },
];

/** Which resource a quota name counts: `pods`, `requests.cpu` → pods; `count/deployments.apps` → deployments. */
export function resourceForQuotaName(name: string): ResourceRef | undefined {
  const count = /^count\/([a-z0-9-]+)(?:\.(.+))?$/.exec(name);
  if (count) return { resource: count[1]!, group: count[2] ?? "" };
  if (name === "services" || name.startsWith("services.")) return { group: "", resource: "services" };
  if (
    name === "persistentvolumeclaims" ||
    name === "requests.storage" ||
    name.includes(".storageclass.storage.k8s.io/")
  ) {
    return { group: "", resource: "persistentvolumeclaims" };
  }
  for (const legacy of ["configmaps", "secrets", "replicationcontrollers", "resourcequotas"]) {
    if (name === legacy) return { group: "", resource: legacy };
  }
  // pods, cpu, memory, requests.*, limits.*, extended resources: all counted on pods.
  return { group: "", resource: "pods" };
}

/**
 * Resolves a resource to its kind through API discovery. What is found is kept; what discovery
 * failed on, or did not find (a CRD not installed yet), is asked again after `retryAfterMs`, so
 * one API server hiccup never leaves a resource uncounted for good.
 */
export class KindResolver {
  private readonly found = new Map<string, ResourceKind>();
  private readonly missing = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<ResourceKind | undefined>>();
  private readonly now: () => number;
  private readonly retryAfterMs: number;

  constructor(
    private readonly client: Pick<ClusterClient, "objects">,
    options: { now?: () => number; retryAfterMs?: number } = {},
  ) {
    this.now = options.now ?? Date.now;
    this.retryAfterMs = options.retryAfterMs ?? 10_000;
  }

  resolve(ref: ResourceRef): Promise<ResourceKind | undefined> {
    const known = COMPUTE.find((k) => k.group === ref.group && k.resource === ref.resource);
    if (known) return Promise.resolve(known);
    const key = `${ref.resource}.${ref.group}`;
    const found = this.found.get(key);
    if (found) return Promise.resolve(found);
    if ((this.missing.get(key) ?? 0) > this.now()) return Promise.resolve(undefined);
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.lookup(ref)
        .catch(() => undefined)
        .then((kind) => {
          this.inFlight.delete(key);
          if (kind) this.found.set(key, kind);
          else this.missing.set(key, this.now() + this.retryAfterMs);
          return kind;
        });
      this.inFlight.set(key, pending);
    }
    return pending;
  }

  private async lookup(ref: ResourceRef): Promise<ResourceKind | undefined> {
    const groupVersions: string[] = [];
    if (ref.group === "") groupVersions.push("v1");
    else {
      const group = (await this.client.objects.getJson(`/apis/${ref.group}`)) as {
        preferredVersion?: { groupVersion: string };
      };
      if (group.preferredVersion) groupVersions.push(group.preferredVersion.groupVersion);
    }
    for (const groupVersion of groupVersions) {
      const path = groupVersion === "v1" ? "/api/v1" : `/apis/${groupVersion}`;
      const list = (await this.client.objects.getJson(path)) as {
        resources: { name: string; kind: string; namespaced: boolean }[];
      };
      const found = list.resources.find((r) => r.name === ref.resource && r.namespaced);
      if (found) return { ...ref, apiVersion: groupVersion, kind: found.kind };
    }
    return undefined;
  }
}
