/**
 * The environment the backup agent reads (keys of the Secret its Job takes with envFrom): what is
 * the tenant's own — the key of this one backup — and where tenantry's broker is. No credential of
 * the store: the broker signs each of the agent's requests.
 */
export const AGENT_ENV = {
  brokerUrl: "BACKUP_BROKER_URL",
  backupKey: "BACKUP_KEY",
} as const;

/** Audience of the agent pod's projected service-account token, which it shows the broker. */
export const BACKUP_AGENT_AUDIENCE = "tenantry-backup-agent";

/** Where the agent's container sees that token. */
export const AGENT_TOKEN_PATH = "/var/run/secrets/tenantry.dev/backup-agent/token";

/** The agent image a backup Job runs unless tenantry is told another. */
export const DEFAULT_AGENT_IMAGE = "ghcr.io/tenantry/backup-agent:0.1.0";

/** Where the agent's container sees the claim. */
export const AGENT_MOUNT_PATH = "/data";
