/**
 * Where a caller's credential for a runtime comes from: the session cookie the proxy set after a
 * login (scoped to the route's path), or an `Authorization` header (`Bearer …`, or JupyterHub's
 * `token …`). Neither reaches the runtime.
 */
import { createHash } from "node:crypto";

/** The session cookie, `Path=/r/<token>/`: the browser sends it to that runtime only. */
export const SESSION_COOKIE = "tenantry-runtime-session";
/** The login's state, `Path=/r/<token>/`: the callback takes a code only from the browser that asked. */
export const STATE_COOKIE = "tenantry-runtime-state";
/** Cookies of the proxy's own, kept from every runtime. */
export const PROXY_COOKIES: readonly string[] = [SESSION_COOKIE, STATE_COOKIE];

const AUTHORIZATION = /^(?:bearer|token)\s+(\S+)\s*$/i;

export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}

/** The Cookie header without the `names`; undefined when nothing else is left. */
export function withoutCookies(header: string, names: readonly string[]): string | undefined {
  const kept = header
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part && !names.includes(part.slice(0, Math.max(0, part.indexOf("="))).trim()));
  return kept.length ? kept.join("; ") : undefined;
}

/** The token of an `Authorization: Bearer …` or `token …` header. */
export function authorizationToken(header: string | undefined): string | undefined {
  return header ? AUTHORIZATION.exec(header)?.[1] : undefined;
}

/** A short digest naming a secret without holding it (cache keys, the route token in a cookie). */
export function digest(text: string): string {
  return createHash("sha256").update(text).digest("base64url");
}

export interface CookieOptions {
  path: string;
  maxAgeSeconds: number;
  secure: boolean;
}

/** An HttpOnly, SameSite=Lax cookie for one route's path (Secure when the caller came over TLS). */
export function setCookie(name: string, value: string, options: CookieOptions): string {
  return `${name}=${value}; Path=${options.path}; Max-Age=${options.maxAgeSeconds}; HttpOnly; SameSite=Lax${options.secure ? "; Secure" : ""}`;
}
