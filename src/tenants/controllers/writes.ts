import type { KubernetesObject } from "@kubernetes/client-node";
import { applyIfChanged, type ClusterClient, describeError, isNotFound } from "../../kube/index.js";

/** A write that failed, with the object named so that the tenant's status can say which and why. */
export class ObjectFailure extends Error {}

function where(object: KubernetesObject): string {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name}` : `${name}`;
}

/** Applies `object` unless `current` (the cached copy) already holds it. */
export async function applyManaged(
  client: ClusterClient,
  object: KubernetesObject,
  current: KubernetesObject | undefined,
): Promise<void> {
  try {
    await applyIfChanged(client, object, current);
  } catch (err) {
    throw new ObjectFailure(`${object.kind} ${where(object)}: ${describeError(err)}`);
  }
}

/** Deletes `object` (its dependents in the background); one already gone is fine. */
export async function removeManaged(client: ClusterClient, object: KubernetesObject): Promise<void> {
  try {
    await client.objects.delete(object, undefined, undefined, undefined, undefined, "Background");
  } catch (err) {
    if (!isNotFound(err))
      throw new ObjectFailure(`deleting ${object.kind} ${where(object)}: ${describeError(err)}`);
  }
}
