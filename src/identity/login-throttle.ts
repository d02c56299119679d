/**
 * Password guessing is slowed without giving anyone a way to lock another person out:
 *
 * - per (user, client): after `freeFailures` wrong passwords from one client, each further attempt
 *   of that user from that client waits a delay that doubles (1 s, 2 s, 4 s … up to
 *   `maxDelaySeconds`). Other clients are not affected, so an attacker slows only themselves;
 * - per client: a client that fails `maxClientFailures` times within `windowSeconds`, whichever
 *   users it tries, is refused until its window ends;
 * - per user, across clients: only `userLockFailures` wrong passwords within `windowSeconds` —
 *   many clients guessing at once — lock the user for `lockoutSeconds`. An administrator lifts the
 *   lock at once (`tenantry user unlock`, which sets the user's `status.loginsUnlockedAt`: every
 *   failure before that time stops counting), and client certificates never pass through here.
 *
 * Refusals are 429 with Retry-After. Counts live in bounded LRU caches (lru-cache), per replica.
 */
import { LRUCache } from "lru-cache";
import { exponentialDelay } from "../kube/index.js";

export interface LoginThrottleOptions {
  /** Wrong passwords of one user from one client before attempts wait (default 3). */
  freeFailures?: number;
  /** The first wait; each further failure doubles it (default 1 s). */
  baseDelaySeconds?: number;
  /** The longest wait between attempts of one user from one client (default 300 s). */
  maxDelaySeconds?: number;
  /** Failed logins one client address may make per window, whichever users (default 30). */
  maxClientFailures?: number;
  /** Wrong passwords of one user, from all clients together, per window that lock them (default 100). */
  userLockFailures?: number;
  /** How long such a lock lasts, unless an administrator lifts it sooner (default 900 s). */
  lockoutSeconds?: number;
  /** The window failures are counted in, and how long a quiet series is remembered (default 900 s). */
  windowSeconds?: number;
  /** Users, clients and (user, client) pairs remembered at most (default 100,000 each). */
  maxEntries?: number;
  now?: () => number;
}

interface Series {
  count: number;
  /** The first failure of the series. */
  since: number;
  /** The latest failure of the series. */
  last: number;
  /** When the user's lock ends (user series only). */
  lockedUntil?: number;
}

export type ThrottleVerdict =
  | { allowed: true }
  | { allowed: false; retryAfterSeconds: number; reason: string; scope: "client" | "user" | "pair" };

export class LoginThrottle {
  private readonly freeFailures: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly maxClientFailures: number;
  private readonly userLockFailures: number;
  private readonly lockoutMs: number;
  private readonly windowMs: number;
  /** How long a (user, client) series must be quiet to end: a window, and never shorter than the longest wait. */
  private readonly pairQuietMs: number;
  private readonly now: () => number;
  private readonly pairs: LRUCache<string, Series>;
  private readonly users: LRUCache<string, Series>;
  private readonly clients: LRUCache<string, Series>;

  constructor(options: LoginThrottleOptions = {}) {
    this.freeFailures = options.freeFailures ?? 3;
    this.baseDelayMs = (options.baseDelaySeconds ?? 1) * 1000;
    this.maxDelayMs = (options.maxDelaySeconds ?? 300) * 1000;
    this.maxClientFailures = options.maxClientFailures ?? 30;
    this.userLockFailures = options.userLockFailures ?? 100;
    this.lockoutMs = (options.lockoutSeconds ?? 900) * 1000;
    this.windowMs = (options.windowSeconds ?? 900) * 1000;
    this.pairQuietMs = Math.max(this.windowMs, this.maxDelayMs);
    this.now = options.now ?? Date.now;
    const max = options.maxEntries ?? 100_000;
    // The TTLs only bound memory; whether a series still counts is decided from its times below.
    this.pairs = new LRUCache({ max, ttl: this.pairQuietMs });
    this.users = new LRUCache({ max, ttl: Math.max(this.windowMs, this.lockoutMs) });
    this.clients = new LRUCache({ max, ttl: this.windowMs });
  }

  /**
   * Whether a login of `user` from `client` may be tried now. `unlockedAt`: when an administrator
   * last lifted the user's lock (failures before it no longer count).
   */
  check(user: string, client: string, unlockedAt = 0): ThrottleVerdict {
    const now = this.now();
    const locked = this.current(this.users, user, now, unlockedAt)?.lockedUntil;
    if (locked !== undefined && locked > now) {
      const seconds = Math.ceil((locked - now) / 1000);
      return {
        allowed: false,
        scope: "user",
        retryAfterSeconds: seconds,
        reason: `"${user}" is locked for ${seconds} s more: ${this.userLockFailures} wrong passwords from many clients within ${this.windowMs / 1000} s (an administrator can lift it with \`tenantry user unlock\`)`,
      };
    }
    const fromClient = this.current(this.clients, client, now);
    if (fromClient && fromClient.count >= this.maxClientFailures) {
      const seconds = Math.max(1, Math.ceil((fromClient.since + this.windowMs - now) / 1000));
      return {
        allowed: false,
        scope: "client",
        retryAfterSeconds: seconds,
        reason: `too many failed logins from this client (${this.maxClientFailures} in ${this.windowMs / 1000} s): try again in ${seconds} s`,
      };
    }
    const pair = this.current(this.pairs, pairKey(user, client), now, unlockedAt);
    const waitUntil = pair ? pair.last + this.delayAfter(pair.count) : 0;
    if (waitUntil > now) {
      const seconds = Math.ceil((waitUntil - now) / 1000);
      return {
        allowed: false,
        scope: "pair",
        retryAfterSeconds: seconds,
        reason: `${pair!.count} wrong passwords for "${user}" from this client: try again in ${seconds} s (other clients are not affected)`,
      };
    }
    return { allowed: true };
  }

  failed(user: string, client: string, unlockedAt = 0): void {
    const now = this.now();
    this.count(this.pairs, pairKey(user, client), now, unlockedAt);
    this.count(this.clients, client, now);
    const series = this.count(this.users, user, now, unlockedAt);
    if (series.count >= this.userLockFailures && series.lockedUntil === undefined) {
      this.users.set(user, { ...series, lockedUntil: now + this.lockoutMs });
    }
  }

  /** A right password: that client's series for the user ends (the user's and the client's stay). */
  succeeded(user: string, client: string): void {
    this.pairs.delete(pairKey(user, client));
  }

  /** How long an attempt waits after `failures` wrong passwords in a row. */
  private delayAfter(failures: number): number {
    if (failures < this.freeFailures) return 0;
    return exponentialDelay(failures - this.freeFailures, this.baseDelayMs, this.maxDelayMs);
  }

  /**
   * A series that still counts: a user's and a client's for one window from their first failure
   * (a user's lock keeps it until the lock ends), a (user, client) pair's until it has been quiet
   * for a window; none begun before an administrator's unlock.
   */
  private current(
    cache: LRUCache<string, Series>,
    key: string,
    now: number,
    unlockedAt = 0,
  ): Series | undefined {
    const series = cache.get(key);
    if (!series) return undefined;
    const ended =
      series.lockedUntil !== undefined
        ? series.lockedUntil <= now
        : cache === this.pairs
          ? series.last + this.pairQuietMs <= now
          : series.since + this.windowMs <= now;
    if (ended || series.since < unlockedAt) {
      cache.delete(key);
      return undefined;
    }
    return series;
  }

  private count(cache: LRUCache<string, Series>, key: string, now: number, unlockedAt = 0): Series {
    const previous = this.current(cache, key, now, unlockedAt);
    const series = previous
      ? { ...previous, count: previous.count + 1, last: now }
      : { count: 1, since: now, last: now };
    // Set again, so that the entry's TTL runs from its latest failure.
    cache.set(key, series);
    return series;
  }
}

function pairKey(user: string, client: string): string {
  return `${user}\u0000${client}`;
}
