/**
 * Header handling of the runtimes proxy (RFC 9110 §7.6): hop-by-hop headers stay on their hop,
 * X-Forwarded-For/Proto/Host tell the backend who asked and how, and a service module's edits
 * replace what the caller sent under the same name.
 */
import { type IncomingHttpHeaders, validateHeaderName, validateHeaderValue } from "node:http";
import { connectionListed, HOP_BY_HOP_HEADERS } from "../../common/index.js";

const FORWARDED = new Set(["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "forwarded"]);

export interface ForwardContext {
  /** The caller's address (the socket's remote address). */
  clientIp: string;
  /** How the caller reached the proxy. */
  proto: "http" | "https";
  /**
   * Keep X-Forwarded-Proto/Host and append to X-Forwarded-For as sent (the proxy sits behind a
   * trusted one); otherwise the caller's own are dropped so that nobody can claim another address.
   */
  trustForwarded: boolean;
}

/** Header changes a service module asked for, by lower-case name. */
export class HeaderEdits {
  readonly set = new Map<string, string>();
  readonly removed = new Set<string>();

  /** Throws (TypeError) for a name or value no header may have: it would be forwarded verbatim. */
  setHeader(name: string, value: string): void {
    validateHeaderName(name);
    validateHeaderValue(name, value);
    const lower = name.toLowerCase();
    this.removed.delete(lower);
    this.set.set(lower, value);
  }

  removeHeader(name: string): void {
    const lower = name.toLowerCase();
    this.set.delete(lower);
    this.removed.add(lower);
  }

  touches(lower: string): boolean {
    return this.set.has(lower) || this.removed.has(lower);
  }
}

export interface ForwardedHeaders {
  /** `[name, value, name, value, …]` for the backend. */
  headers: string[];
  /** The request carries a body (Content-Length other than 0, or Transfer-Encoding). */
  hasBody: boolean;
}

/**
 * The request headers for the backend from the caller's raw headers. Host is kept (services such
 * as Jupyter compare a WebSocket's Origin with it); an upgrade keeps `Connection: Upgrade` and its
 * `Upgrade` header.
 */
export function forwardRequestHeaders(
  raw: readonly string[],
  context: ForwardContext,
  edits?: HeaderEdits,
  upgrade?: string,
): ForwardedHeaders {
  let listed: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 10 && raw[i]!.toLowerCase() === "connection") {
      listed = connectionListed(raw[i + 1]!, listed);
    }
  }
  const out: string[] = [];
  let hasBody = false;
  let forwardedFor: string | undefined;
  let forwardedProto: string | undefined;
  let forwardedHost: string | undefined;
  let host: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const lower = name.toLowerCase();
    if (HOP_BY_HOP_HEADERS.has(lower)) {
      if (lower === "transfer-encoding") hasBody = true;
      continue;
    }
    if (listed?.has(lower)) continue;
    if (edits?.touches(lower)) continue;
    if (FORWARDED.has(lower)) {
      if (!context.trustForwarded) continue;
      if (lower === "x-forwarded-for") forwardedFor = forwardedFor ? `${forwardedFor}, ${value}` : value;
      else if (lower === "x-forwarded-proto") forwardedProto ??= value;
      else if (lower === "x-forwarded-host") forwardedHost ??= value;
      else out.push(name, value);
      continue;
    }
    if (lower === "content-length") {
      if (value !== "0") hasBody = true;
    } else if (lower === "host") {
      host ??= value;
    }
    out.push(name, value);
  }
  out.push(
    "x-forwarded-for",
    forwardedFor ? `${forwardedFor}, ${context.clientIp}` : context.clientIp,
    "x-forwarded-proto",
    forwardedProto ?? context.proto,
  );
  const forwardedHostValue = forwardedHost ?? host;
  if (forwardedHostValue) out.push("x-forwarded-host", forwardedHostValue);
  if (edits) for (const [name, value] of edits.set) out.push(name, value);
  if (upgrade !== undefined) out.push("connection", "Upgrade", "upgrade", upgrade);
  return { headers: out, hasBody };
}

/** Response headers for the caller, as `[name, value, …]` for `writeHead`, hop-by-hop ones left out. */
export function forwardResponseHeaders(headers: IncomingHttpHeaders): string[] {
  const connection = headers.connection;
  const listed = typeof connection === "string" ? connectionListed(connection) : undefined;
  const out: string[] = [];
  for (const name in headers) {
    if (HOP_BY_HOP_HEADERS.has(name) || listed?.has(name)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === "string") out.push(name, value);
    else for (const one of value) out.push(name, one);
  }
  return out;
}

/** The value of the first raw header called `lowerName`. */
export function rawHeader(raw: readonly string[], lowerName: string): string | undefined {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === lowerName.length && name.toLowerCase() === lowerName) return raw[i + 1];
  }
  return undefined;
}
