/**
 * Own writes the cache has not shown yet, as controller-runtime's expectations: a decision that
 * reads the cache (is there room in this pool, this tenant's node count, this user's starts) must
 * also count what this process itself just wrote, or a burst of requests decided before the first
 * write comes back through the watch all see the same room.
 *
 * An entry ends when the cache shows its write (`seen`, asked whenever the entries are read, and
 * by `observe` from the informer's handlers, which also run for every object after a relist), when
 * the caller forgets it (the write failed or was given back), or after `ttlMs` as a last resort
 * for a write whose object never appears (deleted at once by someone else, say).
 */
export interface ExpectationsOptions<V> {
  ttlMs: number;
  /** Whether the cache now shows the write `value` stands for. */
  seen: (key: string, value: V) => boolean;
  now?: () => number;
}

export class Expectations<V> {
  private readonly entries = new Map<string, { value: V; at: number }>();
  private readonly now: () => number;

  constructor(private readonly options: ExpectationsOptions<V>) {
    this.now = options.now ?? Date.now;
  }

  /** Counts a write under `key` from now on (replacing an earlier one under the same key). */
  expect(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, at: this.now() });
  }

  /** Gives up an entry: its write failed, or what it held was given back. */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Looks at one entry again, from an informer's handler: ends it if the cache shows its write. */
  observe(key: string): void {
    const entry = this.entries.get(key);
    if (entry && this.over(key, entry)) this.entries.delete(key);
  }

  /** Whether a write under `key` is still waiting for the cache. */
  has(key: string): boolean {
    this.observe(key);
    return this.entries.has(key);
  }

  get(key: string): V | undefined {
    return this.has(key) ? this.entries.get(key)?.value : undefined;
  }

  /** The writes still waiting for the cache, oldest first; ended ones are dropped on the way. */
  pending(): [key: string, value: V][] {
    const waiting: [string, V][] = [];
    for (const [key, entry] of this.entries) {
      if (this.over(key, entry)) this.entries.delete(key);
      else waiting.push([key, entry.value]);
    }
    return waiting;
  }

  /** How many entries are held (ended ones included until the next read). */
  get size(): number {
    return this.entries.size;
  }

  private over(key: string, entry: { value: V; at: number }): boolean {
    return this.now() - entry.at > this.options.ttlMs || this.options.seen(key, entry.value);
  }
}

/** An object's resourceVersion as a number (one API server's are ordered), if it is one. */
export function resourceVersionOf(object: { metadata?: { resourceVersion?: string } }): bigint | undefined {
  const rv = object.metadata?.resourceVersion;
  return rv && /^\d+$/.test(rv) ? BigInt(rv) : undefined;
}

/**
 * Whether a cached object is at least as new as a write that answered with `written`: the same
 * version, or (where versions are numbers) a later one, since the cache may skip to a later write.
 */
export function cacheHasCaughtUp(
  cached: { metadata?: { resourceVersion?: string } } | undefined,
  written: string | undefined,
): boolean {
  const current = cached?.metadata?.resourceVersion;
  if (current === undefined || written === undefined) return false;
  if (current === written) return true;
  const [a, b] = [
    resourceVersionOf(cached ?? {}),
    resourceVersionOf({ metadata: { resourceVersion: written } }),
  ];
  return a !== undefined && b !== undefined && a >= b;
}
