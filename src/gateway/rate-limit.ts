export interface RateLimit {
  /** Requests per second each key may make over time. */
  qps: number;
  /** Requests a key may make at once after being idle. */
  burst: number;
}

interface Bucket {
  tokens: number;
  updated: number;
}

/**
 * One token bucket per key (tenant or user). Unlike the work queue's limiter, which always
 * reserves a token and answers how long to wait, a refused request here takes nothing: the caller
 * is told to come back, and a client that keeps retrying does not push its own recovery further away.
 */
export class KeyedTokenBuckets {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep: number;

  constructor(
    readonly limit: RateLimit,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(limit.qps > 0) || !(limit.burst >= 1)) throw new Error("rate limit needs qps > 0 and burst >= 1");
    this.lastSweep = now();
  }

  /** Takes a token for `key`: 0 when granted, otherwise milliseconds until one will be there. */
  take(key: string): number {
    const now = this.now();
    this.sweep(now);
    const bucket = this.buckets.get(key) ?? { tokens: this.limit.burst, updated: now };
    bucket.tokens = Math.min(
      this.limit.burst,
      bucket.tokens + ((now - bucket.updated) / 1000) * this.limit.qps,
    );
    bucket.updated = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - bucket.tokens) / this.limit.qps) * 1000);
  }

  get size(): number {
    return this.buckets.size;
  }

  /** A bucket that has refilled completely is the same as no bucket: forget it. */
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    const full = (this.limit.burst / this.limit.qps) * 1000;
    for (const [key, bucket] of this.buckets) if (now - bucket.updated >= full) this.buckets.delete(key);
  }
}
