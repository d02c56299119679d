import { LRUCache } from "lru-cache";

export interface SecretKeyRef {
  namespace: string;
  name: string;
  key: string;
}

/**
 * Webhook signing secrets, each read once for many deliveries: a burst of alerts to one webhook
 * costs one read of its Secret, not one per notification. A value is kept `ttlMs` (so a rotated
 * secret is used within that long); a missing one is not kept, so its retries look again.
 */
export class SecretCache {
  private readonly cache: LRUCache<string, Buffer, SecretKeyRef>;

  constructor(
    read: (ref: SecretKeyRef) => Promise<Buffer | undefined>,
    options: { ttlMs?: number; max?: number } = {},
  ) {
    this.cache = new LRUCache<string, Buffer, SecretKeyRef>({
      max: options.max ?? 1000,
      ttl: options.ttlMs ?? 10_000,
      // Concurrent reads of one key share one fetch.
      fetchMethod: async (_key, _stale, { context }) => read(context),
    });
  }

  get(ref: SecretKeyRef): Promise<Buffer | undefined> {
    return this.cache.fetch(`${ref.namespace}/${ref.name}/${ref.key}`, { context: ref });
  }
}
