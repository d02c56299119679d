import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Authentication, IdentityProvider } from "./providers/provider.js";

export interface AuthenticatorOptions {
  providers: IdentityProvider[];
  /** How long a successful answer is reused; revocation takes effect within it. Default 10 s; 0 disables. */
  cacheTtlMs?: number;
  /** Most answers kept (the least recently used dropped first). Default 10,000. */
  cacheSize?: number;
  now?: () => number;
}

const MAX_TOKEN_LENGTH = 16 * 1024;
/**
 * tenantry's answer to a token no identity provider recognizes (each knows its tokens by their
 * form): seen in a TokenReview's error, it shows kube-apiserver asked tenantry.
 */
export const UNRECOGNIZED_TOKEN_REASON = "the token is of no configured identity provider";

/**
 * Asks each configured identity provider that recognizes a token to validate it: the one entry
 * point for the TokenReview webhook and the gateway. Successful answers are cached briefly, keyed
 * by a hash of the token (the token itself is never kept), and never past the token's expiry.
 */
export class Authenticator {
  private readonly cache: LRUCache<string, Authentication>;
  private readonly ttl: number;
  private readonly now: () => number;
  private current: IdentityProvider[];

  constructor(options: AuthenticatorOptions) {
    this.current = [...options.providers];
    this.ttl = options.cacheTtlMs ?? 10_000;
    this.now = options.now ?? Date.now;
    this.cache = new LRUCache({
      max: options.cacheSize ?? 10_000,
      // Each answer's own time to live (never past its token's expiry) is given when it is stored.
      ttl: Math.max(this.ttl, 1),
      perf: { now: this.now },
      // The clock is read on every lookup (it may be a test's), not cached for a millisecond.
      ttlResolution: 0,
    });
  }

  get providers(): readonly IdentityProvider[] {
    return this.current;
  }

  provider(name: string): IdentityProvider | undefined {
    return this.current.find((p) => p.name === name);
  }

  /** Swaps the providers (configuration changed); answers cached from the old ones are dropped. */
  setProviders(providers: IdentityProvider[]): void {
    this.current = [...providers];
    this.cache.clear();
  }

  async authenticate(token: string): Promise<Authentication> {
    if (!token) return { authenticated: false, reason: "no token" };
    if (token.length > MAX_TOKEN_LENGTH) {
      return { authenticated: false, reason: `token is longer than ${MAX_TOKEN_LENGTH} characters` };
    }
    const key = createHash("sha256").update(token).digest("base64url");
    const cached = this.cache.get(key);
    if (cached) return cached;
    const now = this.now();

    const candidates = this.current.filter((p) => p.recognizes(token));
    if (candidates.length === 0) {
      return { authenticated: false, reason: UNRECOGNIZED_TOKEN_REASON };
    }
    const reasons: string[] = [];
    for (const provider of candidates) {
      const result = await provider.authenticate(token);
      if (result.authenticated) {
        if (this.ttl > 0) this.remember(key, result, now);
        return result;
      }
      reasons.push(candidates.length > 1 ? `${provider.name}: ${result.reason}` : result.reason);
    }
    return { authenticated: false, reason: reasons.join("; ") };
  }

  /** Drops every cached answer (after a revocation that must take effect at once here). */
  forget(): void {
    this.cache.clear();
  }

  private remember(key: string, result: Authentication & { authenticated: true }, now: number): void {
    const expires = result.identity.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY;
    const ttl = Math.min(this.ttl, expires - now);
    if (ttl > 0) this.cache.set(key, result, { ttl });
  }
}
