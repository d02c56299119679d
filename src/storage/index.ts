/** tenantry's storage (Vasilenko & Kurapati §4: Advisor, Supplier, Provisioner, Driver): its only public entry. */

export { STORAGE_API_VERSION, STORAGE_CRDS, VOLUME_POOL_CRD } from "./api/crds.js";
export {
  POOLED_PROVISIONER,
  POOLED_VOLUME_LABEL,
  SELECTED_NODE_ANNOTATION,
  VOLUME_FILES_FINALIZER,
} from "./api/names.js";
export type { PooledVolume, PooledVolumeStatus } from "./api/pooled-volume.js";
export type {
  BackingStore,
  EncryptionMode,
  VolumePool,
  VolumePoolSpec,
  VolumePoolStatus,
} from "./api/volume-pool.js";
export { StorageCapability } from "./capability.js";
export { type HostCapabilities, probeHost } from "./driver/capabilities.js";
export {
  applyPool,
  StandaloneNodeAgent,
  type StorageOptions,
  StorageSystem,
  type StorageSystemOptions,
  validateStorageOptions,
} from "./system.js";
