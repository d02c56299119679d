import { fitLabel, type Runtime, userSlug } from "../../runtimes/index.js";

/** One prefix per tenant, user, service, instance and backup: `<tenant>/<user>/<service>/<instance>/<backup>`. */
export function backupLocation(runtime: Runtime, backupId: string): string {
  const { tenant, user, service, instance } = runtime.spec;
  return [tenant, userSlug(user, 63), service, instance, backupId].join("/");
}

export const metadataKey = (location: string) => `${location}/metadata.json.enc`;
export const volumeKey = (location: string, claim: string) => `${location}/volumes/${claim}.tar.enc`;
export const manifestKey = (location: string) => `${location}/manifest.json`;

/** The Secret of tenantry's namespace holding a tenant's backup key. */
export const tenantKeySecretName = (tenant: string) => fitLabel(`tenantry-backup-key-${tenant}`);

/** The agent Job of one claim of a backup (or restore). */
export const agentJobName = (owner: string, index: number) => fitLabel(`${owner}-agent-${index}`);

/** The Secret the agent Jobs of one backup or restore read their store and key from. */
export const agentSecretName = (owner: string) => fitLabel(`${owner}-agent`);
