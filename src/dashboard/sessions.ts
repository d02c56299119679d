import { randomBytes, timingSafeEqual } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Identity, KubernetesUser } from "../identity/index.js";

export const SESSION_COOKIE = "tenantry_session";
/** The header a mutating request must carry, equal to its session's CSRF token. */
export const CSRF_HEADER = "x-csrf-token";

export interface Session {
  id: string;
  /** The person's own token from tenantry's identity service: every write is made with it. */
  token: string;
  identity: Identity;
  user: KubernetesUser;
  /** Sent back on mutating requests in CSRF_HEADER (a cross-site page can read neither cookie nor this). */
  csrf: string;
  expiresAt: number;
}

/**
 * Sessions held in memory, keyed by a random id in an HTTP-only cookie; a session ends when its
 * token expires, at logout, or when the oldest are dropped beyond `max`.
 */
export class SessionStore {
  private readonly sessions: LRUCache<string, Session>;

  constructor(options: { max?: number; now?: () => number } = {}) {
    this.now = options.now ?? Date.now;
    this.sessions = new LRUCache<string, Session>({ max: options.max ?? 10_000 });
  }

  private readonly now: () => number;

  create(token: string, identity: Identity, user: KubernetesUser, ttlMs: number): Session {
    const expiresAt = Math.min(identity.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY, this.now() + ttlMs);
    const session: Session = {
      id: randomBytes(32).toString("base64url"),
      token,
      identity,
      user,
      csrf: randomBytes(32).toString("base64url"),
      expiresAt,
    };
    this.sessions.set(session.id, session);
    return session;
  }

  get(id: string | undefined): Session | undefined {
    if (!id) return undefined;
    const session = this.sessions.get(id);
    if (session && session.expiresAt <= this.now()) {
      this.sessions.delete(id);
      return undefined;
    }
    return session;
  }

  delete(id: string): void {
    this.sessions.delete(id);
  }

  all(): Session[] {
    return [...this.sessions.values()].filter((s) => s.expiresAt > this.now());
  }
}

/** Whether a request's CSRF header matches its session's token (constant time). */
export function csrfMatches(session: Session, header: string | string[] | undefined): boolean {
  if (typeof header !== "string") return false;
  const given = Buffer.from(header);
  const expected = Buffer.from(session.csrf);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
