import { mkdir, rm } from "node:fs/promises";
import { join, relative } from "node:path";
import {
  PatchStrategy,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1StorageClass,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  type ClusterClient,
  Controller,
  Informer,
  ignoreNotFound,
  isAlreadyExists,
  objectKey,
  type ReconcileResult,
  reconcileDone,
} from "../../kube/index.js";
import { LOCAL_PROVISIONER, LOCAL_STORAGE_CLASS } from "./constants.js";
import type { EventRecorder } from "./events.js";
import { PROCESS_NODE_MANAGER } from "./node.js";

const PROVISIONED_BY = "pv.kubernetes.io/provisioned-by";
const DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class";
const STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner";

/** The cluster's default StorageClass, served by {@link LocalVolumeProvisioner}. */
export function localStorageClass(): V1StorageClass {
  return {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: { name: LOCAL_STORAGE_CLASS, annotations: { [DEFAULT_CLASS]: "true" } },
    provisioner: LOCAL_PROVISIONER,
    reclaimPolicy: "Delete",
    volumeBindingMode: "Immediate",
    allowVolumeExpansion: false,
  };
}

/** The PersistentVolume for a claim: a hostPath folder of the cluster, bound to the claim by claimRef. */
export function volumeFor(claim: V1PersistentVolumeClaim, volumesDir: string): V1PersistentVolume {
  const uid = claim.metadata!.uid!;
  const name = `pvc-${uid}`;
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name, annotations: { [PROVISIONED_BY]: LOCAL_PROVISIONER } },
    spec: {
      capacity: { storage: String(claim.spec?.resources?.requests?.storage ?? "1Gi") },
      accessModes: claim.spec?.accessModes?.length ? claim.spec.accessModes : ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: LOCAL_STORAGE_CLASS,
      volumeMode: claim.spec?.volumeMode ?? "Filesystem",
      hostPath: { path: join(volumesDir, name), type: "DirectoryOrCreate" },
      claimRef: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        namespace: claim.metadata!.namespace!,
        name: claim.metadata!.name!,
        uid,
      },
    },
  };
}

function ours(claim: V1PersistentVolumeClaim): boolean {
  return (
    claim.spec?.storageClassName === LOCAL_STORAGE_CLASS ||
    claim.metadata?.annotations?.[STORAGE_PROVISIONER] === LOCAL_PROVISIONER
  );
}

/**
 * The provisioner of {@link LOCAL_STORAGE_CLASS}: a claim of the class gets a PersistentVolume on a
 * folder under `<cluster>/volumes/` at once (Immediate binding: every node of a local cluster sees
 * the same folders), kube-controller-manager binds it, and a Released volume (its claim deleted) is
 * deleted with its folder, as reclaim policy Delete asks.
 */
export class LocalVolumeProvisioner {
  readonly claims: Informer<V1PersistentVolumeClaim>;
  readonly volumes: Informer<V1PersistentVolume>;
  private readonly controller: Controller;
  private readonly volumesDir: string;

  constructor(
    private readonly client: ClusterClient,
    clusterDir: string,
    private readonly events: EventRecorder,
    logger: Logger,
  ) {
    this.volumesDir = join(clusterDir, "volumes");
    this.claims = Informer.forResource(
      client,
      { apiVersion: "v1", kind: "PersistentVolumeClaim" },
      { logger },
    );
    this.volumes = Informer.forResource(client, { apiVersion: "v1", kind: "PersistentVolume" }, { logger });
    this.controller = new Controller({
      name: "local-volume-provisioner",
      workers: 4,
      logger,
      reconcile: (_key, ctx) =>
        ctx.ref.cluster === "claim"
          ? this.reconcileClaim(ctx.ref.namespace!, ctx.ref.name)
          : this.reconcileVolume(ctx.ref.name),
    });
    this.controller.watch(this.claims, (claim) => [
      objectKey("claim", claim.metadata!.namespace, claim.metadata!.name!),
    ]);
    this.controller.watch(this.volumes, (volume) => [objectKey("volume", undefined, volume.metadata!.name!)]);
  }

  async start(): Promise<void> {
    await this.client.objects.patchRaw(localStorageClass(), PatchStrategy.ServerSideApply, {
      fieldManager: PROCESS_NODE_MANAGER,
      force: true,
    });
    this.claims.start();
    this.volumes.start();
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop({ timeoutMs: 2000 });
    await Promise.all([this.claims.stop(), this.volumes.stop()]);
  }

  private async reconcileClaim(namespace: string, name: string): Promise<ReconcileResult> {
    const claim = this.claims.get(namespace, name);
    if (!claim || !ours(claim) || claim.metadata?.deletionTimestamp) return reconcileDone();
    if (claim.spec?.volumeName || claim.status?.phase !== "Pending") return reconcileDone();
    const volume = volumeFor(claim, this.volumesDir);
    if (this.volumes.get(undefined, volume.metadata!.name!)) return reconcileDone();
    const target = { kind: "PersistentVolumeClaim" as const, namespace, name, uid: claim.metadata!.uid! };
    this.events.normal(
      target,
      "Provisioning",
      `External provisioner is provisioning volume for claim "${namespace}/${name}"`,
    );
    await mkdir(volume.spec!.hostPath!.path, { recursive: true });
    try {
      await this.client.core.createPersistentVolume({ body: volume });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    this.events.normal(
      target,
      "ProvisioningSucceeded",
      `Successfully provisioned volume ${volume.metadata!.name}`,
    );
    return reconcileDone();
  }

  private async reconcileVolume(name: string): Promise<ReconcileResult> {
    const volume = this.volumes.get(undefined, name);
    if (!volume || volume.metadata?.annotations?.[PROVISIONED_BY] !== LOCAL_PROVISIONER)
      return reconcileDone();
    if (volume.status?.phase !== "Released" || volume.spec?.persistentVolumeReclaimPolicy !== "Delete")
      return reconcileDone();
    const path = volume.spec?.hostPath?.path;
    // Only ever a folder this provisioner made.
    if (path && !relative(this.volumesDir, path).startsWith("..") && path !== this.volumesDir)
      await rm(path, { recursive: true, force: true });
    await ignoreNotFound(this.client.core.deletePersistentVolume({ name }));
    return reconcileDone();
  }
}
