/**
 * Who a request to a runtime comes from: the route's session cookie (a sealed token bound to this
 * runtime and this start of it), or a token in `Authorization` — of tenantry's identity providers
 * (through the Authenticator: expiry and revocation apply) or a JupyterHub API token. Answers are
 * kept in LRU caches keyed by a digest of the credential — the Authenticator's for identity tokens,
 * this guard's for JupyterHub tokens — for 10 s at most and never past the credential's expiry, so
 * the data path does one hash and one lookup per credential. A keep-alive connection sends the same
 * credential on each request: what it named is kept on the connection until the cache's answer
 * would have expired, so its later requests skip the hash, the lookup and (a cookie) the AES-GCM open.
 */
import type { IncomingMessage } from "node:http";
import { LRUCache } from "lru-cache";
import { type Authenticator, kubernetesUserOf } from "../../../identity/index.js";
import type { RouteView } from "../route.js";
import type { Principal } from "./access.js";
import { authorizationToken, digest, readCookie, SESSION_COOKIE } from "./credentials.js";
import type { SessionKeys } from "./keys.js";
import { open, seal } from "./sealed.js";

/** A JupyterHub API token's holder and scopes, as the JupyterHub API would see them. */
export type HubTokenLookup = (token: string) => Promise<Principal | undefined>;

/** Tokens of this prefix are the JupyterHub API's (its `HUB_TOKEN_PREFIX`). */
const HUB_TOKEN_PREFIX = "thub_";
/** Longest a session lasts, whatever its token's expiry (JupyterHub's cookie_max_age_days is longer). */
export const MAX_SESSION_SECONDS = 8 * 3600;

/** What a session cookie holds. */
export interface SessionValue {
  /** The credential it was made from (checked again, through the cache, on use). */
  tok: string;
  /** `namespace/name` of the Runtime. */
  r: string;
  /** Digest of the route token it was set for: a restart (new token) ends it. */
  t: string;
  exp: number;
}

export type Identified =
  | { principal: Principal; via: "cookie" | "header"; token: string }
  | { principal?: undefined; reason: string; badCookie: boolean; hadCredential: boolean };

export interface RouteGuardOptions {
  authenticator?: Authenticator;
  hubTokens?: HubTokenLookup;
  keys: SessionKeys;
  cacheTtlMs?: number;
  cacheSize?: number;
}

/** The last credentials a connection presented, and what they named (see {@link RouteGuard}). */
interface ConnectionMemo {
  /** A JupyterHub token, whom it names, and until when (ms) the guard's cache would say so. */
  hub?: { token: string; principal: Principal; until: number };
  /** A session cookie as sent, the key it opened under, and what it holds. */
  session?: { cookie: string; key: Buffer; value: SessionValue };
}

export class RouteGuard {
  private readonly principals: LRUCache<string, Principal>;
  private readonly ttl: number;
  /** By the caller's socket: gone with the connection. */
  private readonly memos = new WeakMap<object, ConnectionMemo>();

  constructor(private readonly options: RouteGuardOptions) {
    this.ttl = options.cacheTtlMs ?? 10_000;
    this.principals = new LRUCache({ max: options.cacheSize ?? 10_000, ttl: Math.max(this.ttl, 1) });
  }

  /** The caller of a request to `view`'s runtime, or why there is none. */
  async identify(request: IncomingMessage, view: RouteView): Promise<Identified> {
    const cookie = readCookie(request.headers.cookie, SESSION_COOKIE);
    let cookieReason: string | undefined;
    let memo = this.memos.get(request.socket);
    if (!memo) {
      memo = {};
      this.memos.set(request.socket, memo);
    }
    if (cookie) {
      const session = this.openSession(cookie, view, memo);
      if (session.ok) {
        const principal = await this.principalOf(session.value.tok, memo);
        if (principal) return { principal, via: "cookie", token: session.value.tok };
        cookieReason = "the session's sign-in is no longer valid (expired or revoked)";
      } else {
        cookieReason = `the session cookie is refused: ${session.reason}`;
      }
    }
    const token = authorizationToken(request.headers.authorization);
    if (token) {
      const principal = await this.principalOf(token, memo);
      if (principal) return { principal, via: "header", token };
      return {
        reason: "the token in Authorization is not valid (unknown, expired or revoked)",
        badCookie: cookie !== undefined,
        hadCredential: true,
      };
    }
    return {
      reason: cookieReason ?? "sign in: this runtime is served to its owner and those it is shared with",
      badCookie: cookie !== undefined,
      hadCredential: cookie !== undefined,
    };
  }

  /** The session cookie's value, for a credential that authenticates, bound to `view`'s route. */
  async session(
    token: string,
    view: RouteView,
  ): Promise<{ cookie: string; maxAgeSeconds: number } | undefined> {
    const principal = await this.principalOf(token);
    if (!principal) return undefined;
    const now = Date.now();
    const exp = Math.min(principal.expiresAt ?? Number.POSITIVE_INFINITY, now + MAX_SESSION_SECONDS * 1000);
    const value: SessionValue = { tok: token, r: view.key, t: digest(view.token), exp };
    return {
      cookie: seal(this.options.keys.current(), "session", value),
      maxAgeSeconds: Math.max(1, Math.floor((exp - now) / 1000)),
    };
  }

  /**
   * Who holds `token`: an identity of tenantry's providers (the Authenticator's own cache answers,
   * so a logout it is told of counts here at once), or a JupyterHub API token's owner (cached here,
   * and on the connection `memo` while the cache would answer the same).
   */
  async principalOf(token: string, memo?: ConnectionMemo): Promise<Principal | undefined> {
    if (!token.startsWith(HUB_TOKEN_PREFIX)) return this.identityOf(token);
    const now = Date.now();
    if (memo?.hub && memo.hub.token === token && now < memo.hub.until) return memo.hub.principal;
    const key = digest(token);
    let principal = this.principals.get(key);
    if (!principal) {
      principal = await this.options.hubTokens?.(token);
      if (!principal) return undefined;
      const ttl = Math.min(this.ttl, (principal.expiresAt ?? Number.POSITIVE_INFINITY) - now);
      if (ttl > 0) this.principals.set(key, principal, { ttl });
    }
    const remaining = this.principals.getRemainingTTL(key);
    if (memo && remaining > 0) memo.hub = { token, principal, until: now + remaining };
    return principal;
  }

  private async identityOf(token: string): Promise<Principal | undefined> {
    const result = await this.options.authenticator?.authenticate(token);
    if (!result?.authenticated) return undefined;
    const { identity } = result;
    return {
      username: identity.username,
      ...(identity.tenant ? { tenant: identity.tenant } : {}),
      groups: kubernetesUserOf(identity).groups,
      ...(identity.expiresAt ? { expiresAt: identity.expiresAt.getTime() } : {}),
    };
  }

  private openSession(cookie: string, view: RouteView, memo: ConnectionMemo) {
    const key = this.options.keys.current();
    let opened: ReturnType<typeof open<SessionValue>>;
    const known = memo.session;
    if (known && known.cookie === cookie && known.key === key) {
      opened =
        known.value.exp > Date.now() ? { ok: true, value: known.value } : { ok: false, reason: "expired" };
    } else {
      opened = open<SessionValue>(key, "session", cookie);
      if (opened.ok) memo.session = { cookie, key, value: opened.value };
    }
    if (!opened.ok) return opened;
    const { value } = opened;
    if (typeof value.tok !== "string" || value.r !== view.key || value.t !== digest(view.token)) {
      return {
        ok: false as const,
        reason: "it was set for another runtime, or an earlier start of this one",
      };
    }
    return opened;
  }
}
