/** What the runtimes tests share: calling the Admin API, clients of the test clusters, volumes for claims. */
import type { KubernetesObject } from "@kubernetes/client-node";
import { type ClusterClient, isNotFound, loadClusterClient } from "../../src/kube/index.js";
import { testEnvironment, uniqueName } from "./clusters.js";

export const RUNTIMES_API = "tenantry.dev/v1alpha1";

export interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** One request to the test tenantry's runtimes Admin API. */
export async function adminCall(
  method: string,
  path: string,
  token?: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(`${testEnvironment().tenantry.runtimesAdminUrl}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

/** An admin client of one of the shared test clusters (default: where the test tenantry runs). */
export function clusterClient(name = testEnvironment().tenantry.cluster): ClusterClient {
  const entry = testEnvironment().clusters.find((c) => c.name === name);
  if (!entry) throw new Error(`no test cluster named "${name}"`);
  return loadClusterClient(entry.name, entry.kubeconfig);
}

export async function removeObject(client: ClusterClient, obj: KubernetesObject): Promise<void> {
  try {
    await client.objects.delete(obj as KubernetesObject & { metadata: { name: string } });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * A StorageClass without a provisioner: claims of it are bound to volumes made for them by
 * {@link staticVolume} (static provisioning), whatever default class the cluster has.
 */
export async function staticStorageClass(client: ClusterClient): Promise<string> {
  const name = uniqueName("static");
  await client.objects.create({
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name },
    provisioner: "kubernetes.io/no-provisioner",
    volumeBindingMode: "Immediate",
    reclaimPolicy: "Delete",
  } as KubernetesObject);
  return name;
}

/** A volume of `storageClass` reserved for claim `namespace/claim` (bound as soon as the claim exists). */
export async function staticVolume(
  client: ClusterClient,
  storageClass: string,
  namespace: string,
  claim: string,
): Promise<string> {
  const name = uniqueName("pv");
  await client.objects.create({
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name, labels: { "tenantry.dev/test-volume": storageClass } },
    spec: {
      capacity: { storage: "1Gi" },
      accessModes: ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Retain",
      storageClassName: storageClass,
      hostPath: { path: `/tmp/${name}` },
      claimRef: { namespace, name: claim },
    },
  } as KubernetesObject);
  return name;
}

/** Deletes the class and every volume made for it. */
export async function removeStorageClass(client: ClusterClient, storageClass: string): Promise<void> {
  const volumes = await client.core.listPersistentVolume({
    labelSelector: `tenantry.dev/test-volume=${storageClass}`,
  });
  for (const pv of volumes.items) {
    await removeObject(client, {
      apiVersion: "v1",
      kind: "PersistentVolume",
      metadata: { name: pv.metadata!.name! },
    });
  }
  await removeObject(client, {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: storageClass },
  });
}
