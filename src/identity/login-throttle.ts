/**
 * Password guessing is slowed per user and per client: after `maxFailures` wrong passwords in a
 * row a user is locked out for `lockoutSeconds` (even the right password is refused meanwhile),
 * and a client that fails `maxClientFailures` times within `windowSeconds` is refused until the
 * window ends. Refusals are 429 with Retry-After. Counts live in bounded TTL caches, per replica.
 */
import { LRUCache } from "lru-cache";

export interface LoginThrottleOptions {
  /** Wrong passwords in a row before a user is locked out (default 5). */
  maxFailures?: number;
  /** How long a lockout lasts (default 300 s). */
  lockoutSeconds?: number;
  /** Failed logins one client address may make per window (default 30). */
  maxClientFailures?: number;
  /** The window failures are counted in (default 300 s). */
  windowSeconds?: number;
  /** Users and clients remembered at most (default 100,000 each). */
  maxEntries?: number;
  now?: () => number;
}

interface Failures {
  count: number;
  /** When counting started (client window) or the lockout ends (user, once locked). */
  since: number;
  lockedUntil?: number;
}

export type ThrottleVerdict =
  | { allowed: true }
  | { allowed: false; retryAfterSeconds: number; reason: string };

export class LoginThrottle {
  private readonly maxFailures: number;
  private readonly lockoutMs: number;
  private readonly maxClientFailures: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  private readonly users: LRUCache<string, Failures>;
  private readonly clients: LRUCache<string, Failures>;

  constructor(options: LoginThrottleOptions = {}) {
    this.maxFailures = options.maxFailures ?? 5;
    this.lockoutMs = (options.lockoutSeconds ?? 300) * 1000;
    this.maxClientFailures = options.maxClientFailures ?? 30;
    this.windowMs = (options.windowSeconds ?? 300) * 1000;
    this.now = options.now ?? Date.now;
    const ttl = Math.max(this.lockoutMs, this.windowMs);
    const max = options.maxEntries ?? 100_000;
    // The TTLs only bound memory; expiry is decided from the recorded times below.
    this.users = new LRUCache({ max, ttl });
    this.clients = new LRUCache({ max, ttl: this.windowMs });
  }

  /** Whether a login of `user` from `client` may be tried now. */
  check(user: string, client: string): ThrottleVerdict {
    const now = this.now();
    const locked = this.users.get(user)?.lockedUntil;
    if (locked !== undefined && locked > now) {
      return {
        allowed: false,
        retryAfterSeconds: Math.ceil((locked - now) / 1000),
        reason: `too many wrong passwords for "${user}": locked for ${Math.ceil((locked - now) / 1000)} s more (after ${this.maxFailures} in a row)`,
      };
    }
    const fromClient = this.clientWindow(client, now);
    if (fromClient && fromClient.count >= this.maxClientFailures) {
      const retry = Math.max(1, Math.ceil((fromClient.since + this.windowMs - now) / 1000));
      return {
        allowed: false,
        retryAfterSeconds: retry,
        reason: `too many failed logins from this client (${this.maxClientFailures} in ${this.windowMs / 1000} s): try again in ${retry} s`,
      };
    }
    return { allowed: true };
  }

  failed(user: string, client: string): void {
    const now = this.now();
    const previous = this.users.get(user);
    const count = (previous?.lockedUntil !== undefined ? 0 : (previous?.count ?? 0)) + 1;
    this.users.set(
      user,
      count >= this.maxFailures
        ? { count, since: now, lockedUntil: now + this.lockoutMs }
        : { count, since: previous?.since ?? now },
    );
    const fromClient = this.clientWindow(client, now);
    if (fromClient) {
      fromClient.count++;
    } else {
      this.clients.set(client, { count: 1, since: now });
    }
  }

  /** The client's failures in the current window, if its window has not ended. */
  private clientWindow(client: string, now: number): Failures | undefined {
    const failures = this.clients.get(client);
    return failures && failures.since + this.windowMs > now ? failures : undefined;
  }

  succeeded(user: string): void {
    this.users.delete(user);
  }
}
