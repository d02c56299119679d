/** What the provisioner writes, as pure functions of what it read. */
import type {
  V1Namespace,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1StorageClass,
} from "@kubernetes/client-node";
import { TENANT_LABEL } from "../../tenants/index.js";
import { HOSTNAME_LABEL, POOLED_VOLUME_LABEL, PROVISIONED_BY_ANNOTATION, ZONE_LABEL } from "../api/names.js";
import type { ClaimRef, PooledVolume } from "../api/pooled-volume.js";
import type { BackingStore } from "../api/volume-pool.js";

/** The PersistentVolume of a claim: named after the claim's uid, so that a retry finds the one it made. */
export function volumeNameFor(claimUid: string): string {
  return `pvc-${claimUid}`;
}

/** Node affinity of a volume on a store: its node, or any node of its zone. */
export function storeAffinity(store: Pick<BackingStore, "node" | "zone">) {
  const requirement = store.node
    ? { key: HOSTNAME_LABEL, operator: "In", values: [store.node] }
    : { key: ZONE_LABEL, operator: "In", values: [store.zone!] };
  return { required: { nodeSelectorTerms: [{ matchExpressions: [requirement] }] } };
}

/** A `local` PersistentVolume on the volume's data folder, pre-bound to the claim (the PV controller completes the binding). */
export function renderPersistentVolume(
  claim: V1PersistentVolumeClaim,
  storageClass: V1StorageClass,
  volume: PooledVolume,
  provisioner: string,
): V1PersistentVolume {
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: {
      name: volumeNameFor(claim.metadata!.uid!),
      labels: { [POOLED_VOLUME_LABEL]: volume.metadata!.name! },
      annotations: { [PROVISIONED_BY_ANNOTATION]: provisioner },
    },
    spec: {
      capacity: { storage: volume.spec.size },
      accessModes: claim.spec?.accessModes?.length ? claim.spec.accessModes : ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? "Delete",
      storageClassName: storageClass.metadata!.name!,
      volumeMode: "Filesystem",
      ...(storageClass.mountOptions?.length ? { mountOptions: storageClass.mountOptions } : {}),
      local: { path: volume.status!.dataPath! },
      nodeAffinity: storeAffinity(volume.spec.store),
      claimRef: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        namespace: claim.metadata!.namespace!,
        name: claim.metadata!.name!,
        uid: claim.metadata!.uid!,
      },
    },
  };
}

/** Whose key encrypts a claim's volume: its tenant's (from the namespace's label), else its namespace's. */
export function keyOwnerOf(
  namespace: string,
  ns: V1Namespace | undefined,
): Pick<ClaimRef, "keyOwner" | "keySecretName"> & { kind: "tenant" | "namespace"; name: string } {
  const tenant = ns?.metadata?.labels?.[TENANT_LABEL];
  if (tenant)
    return {
      kind: "tenant",
      name: tenant,
      keyOwner: `tenant.${tenant}`,
      keySecretName: `tenantry-volume-key-t-${tenant}`,
    };
  return {
    kind: "namespace",
    name: namespace,
    keyOwner: `namespace.${namespace}`,
    keySecretName: `tenantry-volume-key-n-${namespace}`,
  };
}

/** Whether a store can serve a claim whose first pod goes to `node` (undefined: Immediate binding, any store). */
export function storeServesNode(
  store: Pick<BackingStore, "node" | "zone">,
  node: V1Node | undefined,
  nodeName: string | undefined,
): boolean {
  if (nodeName === undefined) return true;
  if (store.node) return store.node === nodeName;
  return node?.metadata?.labels?.[ZONE_LABEL] === store.zone;
}

/** Why the pooled provisioner cannot serve a claim at all (whatever the pool holds), or undefined. */
export function unsupported(claim: V1PersistentVolumeClaim): string | undefined {
  const spec = claim.spec ?? {};
  if (spec.volumeMode === "Block") return "volumeMode Block is not supported: pooled volumes are filesystems";
  if (spec.selector) return "claims with a selector are not supported by dynamic provisioning";
  if (spec.dataSource || spec.dataSourceRef)
    return "claims with a data source (snapshot or clone) are not supported by the pooled provisioner";
  const modes = spec.accessModes ?? [];
  const shared = modes.filter((m) => m === "ReadWriteMany" || m === "ReadOnlyMany");
  if (shared.length)
    return `access mode ${shared.join(", ")} is not supported: a pooled volume is mounted on one node (use ReadWriteOnce or ReadWriteOncePod)`;
  if (spec.resources?.requests?.storage === undefined)
    return "the claim requests no storage (spec.resources.requests.storage)";
  return undefined;
}
