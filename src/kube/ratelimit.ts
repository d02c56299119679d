import { exponentialDelay } from "./backoff.js";
import { type Clock, systemClock } from "./clock.js";

/** Decides how long a key must wait before it is retried, like client-go's workqueue rate limiters. */
export interface RateLimiter {
  /** Delay in ms before `key` may be processed again; records one more retry of it. */
  when(key: string): number;
  /** Forgets the retry history of `key` (after it succeeded). */
  forget(key: string): void;
  /** How many times `key` has been rate limited since it was last forgotten. */
  numRequeues(key: string): number;
}

export interface ExponentialBackoffOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/** Per-key exponential backoff: base, 2×base, 4×base, ... capped at max. */
export class ItemExponentialRateLimiter implements RateLimiter {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  private readonly failures = new Map<string, number>();

  constructor({ baseDelayMs = 5, maxDelayMs = 1_000_000 }: ExponentialBackoffOptions = {}) {
    if (baseDelayMs <= 0 || maxDelayMs < baseDelayMs) throw new Error("invalid exponential backoff bounds");
    this.baseDelayMs = baseDelayMs;
    this.maxDelayMs = maxDelayMs;
  }

  when(key: string): number {
    const attempts = this.failures.get(key) ?? 0;
    this.failures.set(key, attempts + 1);
    return exponentialDelay(attempts, this.baseDelayMs, this.maxDelayMs);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

export interface TokenBucketOptions {
  qps?: number;
  burst?: number;
  clock?: Clock;
}

/**
 * Global token bucket shared by all keys (golang.org/x/time/rate semantics): each call
 * reserves one token and returns how long to wait until that token exists. It stops a
 * flood of failing keys from hammering the API server even when each key's own backoff
 * is still short.
 */
export class TokenBucketRateLimiter implements RateLimiter {
  readonly qps: number;
  readonly burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private lastRefill: number;

  constructor({ qps = 10, burst = 100, clock = systemClock }: TokenBucketOptions = {}) {
    if (qps <= 0 || burst < 1) throw new Error("token bucket needs qps > 0 and burst >= 1");
    this.qps = qps;
    this.burst = burst;
    this.clock = clock;
    this.tokens = burst;
    this.lastRefill = clock.now();
  }

  when(_key: string): number {
    const now = this.clock.now();
    const elapsedSeconds = Math.max(0, now - this.lastRefill) / 1000;
    this.tokens = Math.min(this.burst, this.tokens + elapsedSeconds * this.qps);
    this.lastRefill = now;
    this.tokens -= 1;
    // A negative balance is debt: the reservation becomes valid once it has been refilled.
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  forget(_key: string): void {}

  numRequeues(_key: string): number {
    return 0;
  }
}

/** Waits as long as the strictest of its limiters demands. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    if (limiters.length === 0) throw new Error("MaxOfRateLimiter needs at least one limiter");
    this.limiters = limiters;
  }

  when(key: string): number {
    // Every limiter must record the attempt, so no short-circuiting.
    return Math.max(...this.limiters.map((limiter) => limiter.when(key)));
  }

  forget(key: string): void {
    for (const limiter of this.limiters) limiter.forget(key);
  }

  numRequeues(key: string): number {
    return Math.max(...this.limiters.map((limiter) => limiter.numRequeues(key)));
  }
}

export interface ControllerRateLimiterOptions extends ExponentialBackoffOptions, TokenBucketOptions {}

/** controller-runtime's default: per-key 5 ms..1000 s exponential backoff, and 10 qps / burst 100 overall. */
export function defaultControllerRateLimiter(options: ControllerRateLimiterOptions = {}): RateLimiter {
  return new MaxOfRateLimiter(new ItemExponentialRateLimiter(options), new TokenBucketRateLimiter(options));
}
