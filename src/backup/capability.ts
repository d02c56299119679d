import type { Capability, SharedContext, Started } from "../kube/index.js";
import { RUNTIME_BACKUPS, RUNTIMES } from "../runtimes/index.js";
import { BackupBroker } from "./broker/broker.js";
import { BackupControllers } from "./controller/backup-controller.js";
import { BackupPolicyCulling } from "./culling.js";
import type { S3Settings } from "./store/s3.js";
import { storeSettingsFromSecret } from "./store/settings.js";

export interface BackupOptions {
  /** The object store and the agent image; absent: the store of Secret tenantry-backup-store, if any. */
  backup?: { store: S3Settings; agentImage?: string };
  /** Whether the runtimes Admin API is served (the backup agents reach the store only through it). */
  adminApi: boolean;
}

/**
 * Backups of runtimes, when there is a store: the broker the Admin API serves on every replica,
 * the idle culling of BackupPolicies, and for the leader the backup and restore controllers.
 */
export class BackupCapability implements Capability {
  readonly name = "backup";

  constructor(private readonly options: BackupOptions) {}

  async start({ client, cache, namespace, logger, lifecycle, values }: SharedContext): Promise<Started> {
    const store = this.options.backup?.store ?? (await storeSettingsFromSecret(client, namespace));
    if (!store) {
      logger.info("no backup store configured (Secret tenantry-backup-store): runtime backups are off");
      values.set(RUNTIME_BACKUPS, {});
      return {};
    }
    // Served by the runtimes Admin API on every replica: the backup agents' only way to the store.
    const broker = this.options.adminApi ? new BackupBroker({ client, cache, store, logger }) : undefined;
    if (broker) {
      await broker.start();
      lifecycle.started("backup broker", broker);
    }
    // A BackupPolicy's idle action culls its idle runtimes (backing them up first).
    const culling = new BackupPolicyCulling(client, cache);
    await culling.start();
    lifecycle.started("backup culling", culling);
    values.set(RUNTIME_BACKUPS, {
      idleCulledBy: culling.idleCulledBy,
      ...(broker ? { routes: [broker.routes] } : {}),
    });
    const agentImage = this.options.backup?.agentImage;
    return {
      // The broker is served only with the runtimes Admin API, whose capability depends on this
      // one: its URL is read once both have started.
      leaderControllers: () => [
        new BackupControllers({
          client,
          cache,
          store,
          namespace,
          brokerUrl: () => (broker ? values.get(RUNTIMES).adminUrl() : undefined),
          ...(agentImage ? { agentImage } : {}),
          logger,
        }),
      ],
    };
  }
}
