/** The backup capability (Vasilenko & Kurapati, §3.3): its only public entry. */

export {
  AGENT_ENV,
  AGENT_MOUNT_PATH,
  AGENT_TOKEN_PATH,
  BACKUP_AGENT_AUDIENCE,
  DEFAULT_AGENT_IMAGE,
} from "./agent/env.js";
export {
  type ArchiveRecord,
  type ArchiveStore,
  backupVolume,
  restoreVolume,
  STAGING_DIR,
  verifyArchive,
} from "./agent/volume.js";
export {
  BACKUP_NAME_LABEL,
  BACKUP_PHASES,
  BACKUP_RUNTIME_LABEL,
  type BackupPhase,
  type BackupPolicy,
  BackupPolicySchema,
  IDLE_ACTIONS,
  type IdleAction,
  RESTORE_NAME_LABEL,
  type RuntimeBackup,
  RuntimeBackupSchema,
  type RuntimeRestore,
  RuntimeRestoreSchema,
} from "./api/backup.js";
export { BACKUP_CRDS, BACKUP_POLICY_CRD, RUNTIME_BACKUP_CRD, RUNTIME_RESTORE_CRD } from "./api/crds.js";
export { BackupBroker, type BackupBrokerOptions } from "./broker/broker.js";
export { HttpStoreBroker } from "./broker/client.js";
export { PRESIGN_PATH } from "./broker/paths.js";
export { BackupCapability, type BackupOptions } from "./capability.js";
export { type BackupControllerOptions, BackupControllers } from "./controller/backup-controller.js";
export { backupLocation } from "./controller/layout.js";
export { backupKey, decryptor, encryptor, newTenantKey, TENANT_KEY_BYTES } from "./crypto.js";
export {
  type PresignedRequest,
  type StoreBroker,
  type StoreRequest,
  WRITE_OPERATIONS,
} from "./store/presigned.js";
export {
  type BrokeredS3Settings,
  DEFAULT_PART_SIZE,
  PRESIGNED_URL_SECONDS,
  S3ObjectStore,
  type S3Settings,
} from "./store/s3.js";
export { STORE_SECRET, storeSettingsFromData, storeSettingsFromSecret } from "./store/settings.js";
export {
  ObjectNotFound,
  type ObjectStore,
  type PutOptions,
  type PutResult,
  type StoredObject,
} from "./store/spi.js";
