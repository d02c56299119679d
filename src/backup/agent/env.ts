/** The environment the backup agent reads (keys of the Secret its Job takes with envFrom). */
export const AGENT_ENV = {
  endpoint: "BACKUP_S3_ENDPOINT",
  bucket: "BACKUP_S3_BUCKET",
  region: "BACKUP_S3_REGION",
  accessKeyId: "BACKUP_S3_ACCESS_KEY_ID",
  secretAccessKey: "BACKUP_S3_SECRET_ACCESS_KEY",
  tenantKey: "BACKUP_TENANT_KEY",
} as const;

/** The agent image a backup Job runs unless tenantry is told another. */
export const DEFAULT_AGENT_IMAGE = "ghcr.io/tenantry/backup-agent:0.1.0";

/** Where the agent's container sees the claim. */
export const AGENT_MOUNT_PATH = "/data";
