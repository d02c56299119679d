/** Runtime objects on the shared home cluster for the proxy's tests: created, given a status as the controller would, removed. */
import { type KubernetesObject, PatchStrategy } from "@kubernetes/client-node";
import { type ClusterClient, isNotFound, loadClusterClient } from "../../src/kube/index.js";
import { RUNTIME_PAUSED_ANNOTATION, type Runtime } from "../../src/runtimes/index.js";
import { testEnvironment } from "../support/clusters.js";
import { API, type RuntimeShape, runtimeObject, runtimeStatus } from "./support.js";

export function homeClient(): ClusterClient {
  const env = testEnvironment();
  const entry = env.clusters.find((c) => c.name === env.tenantry.cluster)!;
  return loadClusterClient(entry.name, entry.kubeconfig);
}

export async function removeObject(client: ClusterClient, obj: KubernetesObject): Promise<void> {
  try {
    await client.objects.delete(obj);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Creates the Runtime (spec only, as the Admin API does), then writes its status as the controller
 * would. It is paused, so that tenantry's own controller leaves the status these tests write alone.
 */
export async function createRuntime(client: ClusterClient, shape: RuntimeShape): Promise<Runtime> {
  const { status: _status, ...bare } = runtimeObject(shape);
  await client.objects.create({
    ...bare,
    metadata: {
      name: shape.name,
      namespace: shape.namespace,
      annotations: { [RUNTIME_PAUSED_ANNOTATION]: "true" },
    },
  } as KubernetesObject);
  return writeStatus(client, shape);
}

/** What the controller writes: phase, steps, route token, endpoint and Ready (a merge patch of status). */
export async function writeStatus(
  client: ClusterClient,
  shape: RuntimeShape,
  extra: Record<string, unknown> = {},
): Promise<Runtime> {
  return (await client.objects.patchSubresource(
    {
      apiVersion: API,
      kind: "Runtime",
      metadata: { name: shape.name, namespace: shape.namespace },
      status: { ...runtimeStatus(shape), ...extra },
    } as KubernetesObject,
    "status",
    PatchStrategy.MergePatch,
  )) as Runtime;
}

export async function patchSpec(
  client: ClusterClient,
  shape: RuntimeShape,
  spec: Partial<Runtime["spec"]>,
): Promise<void> {
  await client.objects.patchRaw(
    {
      apiVersion: API,
      kind: "Runtime",
      metadata: { name: shape.name, namespace: shape.namespace },
      spec,
    } as KubernetesObject,
    PatchStrategy.MergePatch,
  );
}

export async function readRuntime(client: ClusterClient, shape: RuntimeShape): Promise<Runtime> {
  return (await client.objects.read({
    apiVersion: API,
    kind: "Runtime",
    metadata: { name: shape.name, namespace: shape.namespace },
  })) as Runtime;
}
