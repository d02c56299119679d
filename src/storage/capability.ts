import type { Capability, SharedContext, Started } from "../kube/index.js";
import { type StorageOptions, StorageSystem, validateStorageOptions } from "./system.js";

/** tenantry's storage (pooled, per-tenant encrypted volumes), run by the leader; false: none. */
export class StorageCapability implements Capability {
  readonly name = "storage";

  /** Refuses wrong options at once, before anything starts. */
  constructor(private readonly options: StorageOptions | false = {}) {
    if (options) validateStorageOptions(options);
  }

  async start({ client, cache, namespace, metrics, logger }: SharedContext): Promise<Started> {
    const options = this.options;
    if (options === false) return {};
    return {
      leaderControllers: () => [
        new StorageSystem({ ...options, client, cache, namespace, registry: metrics, logger }),
      ],
    };
  }
}
