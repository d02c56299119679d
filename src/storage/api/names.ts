/** Names tenantry's storage writes on Kubernetes objects. */

/** The default provisioner name of a VolumePool's StorageClass. */
export const POOLED_PROVISIONER = "storage.tenantry.dev/pooled";

/** Finalizer on a PooledVolume while its files exist on a backing store (removed by the node agent once they are gone). */
export const VOLUME_FILES_FINALIZER = "storage.tenantry.dev/files";

/** Label on a PersistentVolume: the PooledVolume it exposes. */
export const POOLED_VOLUME_LABEL = "storage.tenantry.dev/pooled-volume";

/** Label on a PooledVolume and on the StorageClass: the VolumePool it belongs to. */
export const POOL_LABEL = "storage.tenantry.dev/pool";

/** Label on a tenant's volume key Secret: whose key it is. */
export const KEY_OWNER_LABEL = "storage.tenantry.dev/key-owner";

/** Key of the 32-byte raw key in a volume key Secret. */
export const KEY_DATA = "key";

/** What Kubernetes' external provisioners write and read. */
export const PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by";
export const STORAGE_PROVISIONER_ANNOTATION = "volume.kubernetes.io/storage-provisioner";
export const BETA_STORAGE_PROVISIONER_ANNOTATION = "volume.beta.kubernetes.io/storage-provisioner";
export const SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node";
export const DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class";

export const HOSTNAME_LABEL = "kubernetes.io/hostname";
export const ZONE_LABEL = "topology.kubernetes.io/zone";
