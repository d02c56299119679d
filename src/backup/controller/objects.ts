/** Writes the backup controllers share: objects made once, Runtimes patched, watches by label. */
import { type KubernetesObject, PatchStrategy } from "@kubernetes/client-node";
import { type ClusterClient, ignoreNotFound, isAlreadyExists } from "../../kube/index.js";
import type { Runtime } from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { BACKUP_RUNTIME_LABEL, type BackupPolicy, type RuntimeBackup } from "../api/backup.js";

/** A RuntimeBackup of `runtime`, labelled with it (listing a runtime's backups reads an index). */
export function runtimeBackupOf(
  runtime: Runtime,
  name: string,
  trigger: NonNullable<RuntimeBackup["spec"]["trigger"]>,
  include?: BackupPolicy["spec"]["include"],
): RuntimeBackup {
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "RuntimeBackup",
    metadata: {
      name,
      namespace: runtime.metadata!.namespace!,
      labels: { [BACKUP_RUNTIME_LABEL]: runtime.metadata!.name! },
    },
    spec: { runtime: runtime.metadata!.name!, trigger, ...(include ? { include } : {}) },
  } as RuntimeBackup;
}

/** Creates `obj` unless it exists (made by an earlier pass, or another worker): whether it made it. */
export async function createIfMissing(client: ClusterClient, obj: KubernetesObject): Promise<boolean> {
  try {
    await client.objects.create(obj);
    return true;
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
    return false;
  }
}

/** A merge patch of a Runtime's annotations (null removes one) and spec; a Runtime gone is no error. */
export async function patchRuntime(
  client: ClusterClient,
  runtime: Runtime,
  patch: { annotations?: Record<string, string | null>; spec?: Partial<Runtime["spec"]> },
): Promise<void> {
  await ignoreNotFound(
    client.objects.patch(
      {
        apiVersion: TENANTS_API_VERSION,
        kind: "Runtime",
        metadata: {
          name: runtime.metadata!.name!,
          namespace: runtime.metadata!.namespace!,
          ...(patch.annotations ? { annotations: patch.annotations } : {}),
        },
        ...(patch.spec ? { spec: patch.spec } : {}),
      } as KubernetesObject,
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    ),
  );
}

/** Maps an object to the key of its owner of `kind` (an agent Job to its RuntimeBackup or RuntimeRestore). */
export const byOwnerOfKind =
  (kind: string) =>
  (obj: KubernetesObject, cluster: string): string[] =>
    (obj.metadata?.ownerReferences ?? [])
      .filter((ref) => ref.kind === kind)
      .map((ref) => `${cluster}/${obj.metadata!.namespace}/${ref.name}`);

/** For Controller.watch: the key of the object (in the same namespace) an object's `label` names. */
export const byLabel =
  (label: string) =>
  (obj: KubernetesObject, cluster: string): string[] => {
    const owner = obj.metadata?.labels?.[label];
    return owner ? [`${cluster}/${obj.metadata!.namespace}/${owner}`] : [];
  };
