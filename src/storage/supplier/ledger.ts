import type { PooledVolume } from "../api/pooled-volume.js";

/** How long a created volume may take to reach the cache before it is no longer counted here. */
const IN_FLIGHT_MS = 60_000;

interface Entry {
  pool: string;
  volume: PooledVolume;
  at: number;
}

/**
 * The volumes of each pool as bin filling must see them: the informer's, plus those created (or
 * being created) that it has not shown yet. Without these, a burst of claims handled by several
 * workers, or the supplier's next reconcile, reads a cache that lags behind its own writes and puts
 * more on a backing store than its capacity. A volume is counted from the moment its creation is
 * decided (synchronously, before the request goes out) until the cache has it.
 */
export class VolumeLedger {
  private readonly inFlight = new Set<Entry>();

  constructor(
    private readonly cache: {
      get(name: string): PooledVolume | undefined;
      ofPool(pool: string): PooledVolume[];
    },
    private readonly now: () => number = Date.now,
  ) {}

  /** The pool's volumes: the cache's, and the in-flight ones it does not hold yet. */
  volumesOf(pool: string): PooledVolume[] {
    const cached = this.cache.ofPool(pool);
    const now = this.now();
    const extra: PooledVolume[] = [];
    for (const entry of this.inFlight) {
      const name = entry.volume.metadata?.name;
      if ((name && this.cache.get(name)) || now - entry.at > IN_FLIGHT_MS) {
        this.inFlight.delete(entry);
        continue;
      }
      if (entry.pool === pool) extra.push(entry.volume);
    }
    return extra.length ? [...cached, ...extra] : cached;
  }

  /**
   * Creates `body` with `create`, counting it from now on. Call it without awaiting anything
   * between choosing the store and this call, so that no other choice can take the same room.
   */
  async create(
    body: PooledVolume,
    create: (body: PooledVolume) => Promise<PooledVolume>,
  ): Promise<PooledVolume> {
    const entry: Entry = { pool: body.spec.pool, volume: body, at: this.now() };
    this.inFlight.add(entry);
    try {
      const created = await create(body);
      // A generated name is known only now: from here the cache can be asked for it.
      entry.volume = created;
      return created;
    } catch (err) {
      this.inFlight.delete(entry);
      throw err;
    }
  }

  /** Volumes counted that the cache has not shown yet (for tests and metrics). */
  get size(): number {
    return this.inFlight.size;
  }
}
