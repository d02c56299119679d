import type {
  KubernetesObject,
  V1Namespace,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Secret,
  V1StorageClass,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  type ClusterClient,
  componentCache,
  type Informer,
  type InformerCache,
  type ResourceSelector,
} from "../kube/index.js";
import { STORAGE_API_VERSION } from "./api/crds.js";
import { KEY_OWNER_LABEL } from "./api/names.js";
import type { PooledVolume } from "./api/pooled-volume.js";
import type { VolumePool } from "./api/volume-pool.js";

/** Index names. */
export const BY_POOL = "storage/pool";
export const BY_CLAIM_UID = "storage/claim-uid";
export const BY_CLASS = "storage/class";

/**
 * The caches storage's controllers share (one watch per kind), created on first use so that a node
 * agent alone watches only what it needs (pools, volumes and key Secrets).
 */
export class StorageInformers {
  private readonly created: Informer<never>[] = [];
  private poolsInformer?: Informer<VolumePool>;
  private volumesInformer?: Informer<PooledVolume>;
  private claimsInformer?: Informer<V1PersistentVolumeClaim>;
  private pvsInformer?: Informer<V1PersistentVolume>;
  private classesInformer?: Informer<V1StorageClass>;
  private nodesInformer?: Informer<V1Node>;
  private namespacesInformer?: Informer<V1Namespace>;
  private keysInformer?: Informer<V1Secret>;
  private readonly cache: InformerCache;
  private readonly release: () => Promise<void>;

  constructor(
    readonly client: ClusterClient,
    /** tenantry's namespace: where the volume key Secrets are. */
    readonly namespace: string,
    _logger: Logger,
    /** The process's shared cache; without it, informers of its own. */
    shared?: InformerCache,
  ) {
    const { cache, release } = componentCache({ client, cache: shared });
    this.cache = cache;
    this.release = release;
  }

  private make<T extends KubernetesObject>(
    selector: ResourceSelector,
    indexes: Record<string, (obj: T) => string[]> = {},
  ): Informer<T> {
    const informer = this.cache.informer<T>(selector);
    // The leader builds storage afresh each time it leads, over the same shared informers.
    for (const [name, keysOf] of Object.entries(indexes)) informer.ensureIndex(name, keysOf);
    this.created.push(informer as unknown as Informer<never>);
    return informer;
  }

  get pools(): Informer<VolumePool> {
    this.poolsInformer ??= this.make<VolumePool>({ apiVersion: STORAGE_API_VERSION, kind: "VolumePool" });
    return this.poolsInformer;
  }

  get volumes(): Informer<PooledVolume> {
    this.volumesInformer ??= this.make<PooledVolume>(
      { apiVersion: STORAGE_API_VERSION, kind: "PooledVolume" },
      {
        [BY_POOL]: (v) => [v.spec.pool],
        [BY_CLAIM_UID]: (v) => (v.spec.claim ? [v.spec.claim.uid] : []),
      },
    );
    return this.volumesInformer;
  }

  get claims(): Informer<V1PersistentVolumeClaim> {
    this.claimsInformer ??= this.make<V1PersistentVolumeClaim>(
      { apiVersion: "v1", kind: "PersistentVolumeClaim" },
      {
        [BY_CLASS]: (c) => [c.spec?.storageClassName ?? ""],
        [BY_CLAIM_UID]: (c) => (c.metadata?.uid ? [c.metadata.uid] : []),
      },
    );
    return this.claimsInformer;
  }

  get persistentVolumes(): Informer<V1PersistentVolume> {
    this.pvsInformer ??= this.make<V1PersistentVolume>({ apiVersion: "v1", kind: "PersistentVolume" });
    return this.pvsInformer;
  }

  get classes(): Informer<V1StorageClass> {
    this.classesInformer ??= this.make<V1StorageClass>({
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
    });
    return this.classesInformer;
  }

  get nodes(): Informer<V1Node> {
    this.nodesInformer ??= this.make<V1Node>({ apiVersion: "v1", kind: "Node" });
    return this.nodesInformer;
  }

  get namespaces(): Informer<V1Namespace> {
    this.namespacesInformer ??= this.make<V1Namespace>({ apiVersion: "v1", kind: "Namespace" });
    return this.namespacesInformer;
  }

  /** The volume key Secrets (one per tenant, or per namespace outside tenants). */
  get keys(): Informer<V1Secret> {
    this.keysInformer ??= this.make<V1Secret>({
      apiVersion: "v1",
      kind: "Secret",
      namespace: this.namespace,
      labelSelector: KEY_OWNER_LABEL,
    });
    return this.keysInformer;
  }

  start(): void {
    for (const informer of this.created) informer.start();
  }

  async stop(): Promise<void> {
    await this.release();
  }
}
