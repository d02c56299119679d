import { Expectations } from "../../kube/index.js";
import type { PooledVolume } from "../api/pooled-volume.js";

/** How long a created volume may take to reach the cache before it is no longer counted here. */
const IN_FLIGHT_MS = 60_000;

/**
 * The volumes of each pool as bin filling must see them: the informer's, plus those created (or
 * being created) that it has not shown yet. Without these, a burst of claims handled by several
 * workers, or the supplier's next reconcile, reads a cache that lags behind its own writes and puts
 * more on a backing store than its capacity. A volume is counted from the moment its creation is
 * decided (synchronously, before the request goes out) until the cache has it.
 */
export class VolumeLedger {
  private readonly inFlight: Expectations<{ pool: string; volume: PooledVolume }>;
  private next = 0;

  constructor(
    private readonly cache: {
      get(name: string): PooledVolume | undefined;
      ofPool(pool: string): PooledVolume[];
    },
    now: () => number = Date.now,
  ) {
    this.inFlight = new Expectations({
      ttlMs: IN_FLIGHT_MS,
      // A generated name is known only once the creation answered; until then it cannot be seen.
      seen: (_key, { volume }) => !!volume.metadata?.name && !!this.cache.get(volume.metadata.name),
      now,
    });
  }

  /** The pool's volumes: the cache's, and the in-flight ones it does not hold yet. */
  volumesOf(pool: string): PooledVolume[] {
    const cached = this.cache.ofPool(pool);
    const extra = this.inFlight
      .pending()
      .filter(([, entry]) => entry.pool === pool)
      .map(([, entry]) => entry.volume);
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
    const key = String(this.next++);
    this.inFlight.expect(key, { pool: body.spec.pool, volume: body });
    try {
      const created = await create(body);
      // From here the cache can be asked for it by name (a generated one is known only now).
      this.inFlight.expect(key, { pool: body.spec.pool, volume: created });
      return created;
    } catch (err) {
      this.inFlight.forget(key);
      throw err;
    }
  }

  /** Volumes counted that the cache has not shown yet (for tests and metrics). */
  get size(): number {
    return this.inFlight.pending().length;
  }
}
