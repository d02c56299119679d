import { type KubernetesObject, PatchStrategy } from "@kubernetes/client-node";
import { ignoreNotFound, isConflict, isNotFound } from "./errors.js";

/** The two calls of the object API a finalizer change needs. */
export interface FinalizerWriter {
  read<T extends KubernetesObject>(ref: KubernetesObject): Promise<T>;
  patchRaw<T extends KubernetesObject>(obj: T, strategy: PatchStrategy): Promise<T>;
}

/** Conflicts tried again (each on a fresh read) before the error goes to the caller's requeue. */
const CONFLICT_RETRIES = 4;

export function hasFinalizer(object: KubernetesObject | undefined, finalizer: string): boolean {
  return object?.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * Makes `finalizer` present on (or absent from) an object, as controller-runtime's
 * controllerutil.AddFinalizer or RemoveFinalizer followed by an Update: the new list is written
 * with the resourceVersion it was computed from, so a concurrent change of the list is never lost;
 * on a conflict the object is read again and the change decided again. An object already gone
 * counts as done. Returns whether it wrote.
 *
 * `resourceVersion` overrides the object's own, for a caller that has written the object since
 * (its status, say) and knows the finalizers did not change.
 */
export async function setFinalizer(
  objects: FinalizerWriter,
  object: KubernetesObject,
  finalizer: string,
  present: boolean,
  resourceVersion = object.metadata?.resourceVersion,
): Promise<boolean> {
  const { apiVersion, kind } = object;
  const name = object.metadata?.name;
  if (!apiVersion || !kind || !name)
    throw new Error("setFinalizer needs the object's apiVersion, kind and name");
  const namespace = object.metadata?.namespace;
  const ref = { apiVersion, kind, metadata: { name, ...(namespace ? { namespace } : {}) } };
  let current = object;
  let version = resourceVersion;
  for (let attempt = 0; ; attempt++) {
    const list = current.metadata?.finalizers ?? [];
    if (list.includes(finalizer) === present) return false;
    const finalizers = present ? [...list, finalizer] : list.filter((f) => f !== finalizer);
    try {
      await objects.patchRaw(
        { ...ref, metadata: { ...ref.metadata, resourceVersion: version, finalizers } },
        PatchStrategy.MergePatch,
      );
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      if (!isConflict(err) || attempt >= CONFLICT_RETRIES) throw err;
      const fresh = await ignoreNotFound(objects.read(ref));
      if (!fresh) return false;
      current = fresh;
      version = fresh.metadata?.resourceVersion;
    }
  }
}

export const addFinalizer = (
  objects: FinalizerWriter,
  object: KubernetesObject,
  finalizer: string,
  resourceVersion?: string,
) => setFinalizer(objects, object, finalizer, true, resourceVersion ?? object.metadata?.resourceVersion);

export const removeFinalizer = (
  objects: FinalizerWriter,
  object: KubernetesObject,
  finalizer: string,
  resourceVersion?: string,
) => setFinalizer(objects, object, finalizer, false, resourceVersion ?? object.metadata?.resourceVersion);
