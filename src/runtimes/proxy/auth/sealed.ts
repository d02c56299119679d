/**
 * Values the proxy gives the browser and reads back — the session cookie and the one-time login
 * code — sealed with AES-256-GCM under the key every replica shares (the Secret
 * `tenantry-runtimes-proxy-session-key` in tenantry-system). Each carries what it is for (the
 * additional data), so a code cannot pass for a cookie, and an expiry; a changed or foreign value
 * fails to open.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

export type SealPurpose = "session" | "code";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const SESSION_KEY_BYTES = 32;
/** Longest sealed value read (a cookie is at most 4 KiB; a code rides in a URL). */
export const MAX_SEALED_LENGTH = 6 * 1024;

interface Expiring {
  /** Expiry, milliseconds since the epoch. */
  exp: number;
}

/** `v1.<iv>.<ciphertext>.<tag>`, base64url. */
export function seal<T extends Expiring>(key: Buffer, purpose: SealPurpose, value: T): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(`${VERSION}:${purpose}`));
  const body = Buffer.concat([cipher.update(JSON.stringify(value), "utf8"), cipher.final()]);
  return [
    VERSION,
    iv.toString("base64url"),
    body.toString("base64url"),
    cipher.getAuthTag().toString("base64url"),
  ].join(".");
}

/** The value, when `sealed` was sealed under `key` for `purpose` and has not expired; else why not. */
export function open<T extends Expiring>(
  key: Buffer,
  purpose: SealPurpose,
  sealed: string,
  now = Date.now(),
): { ok: true; value: T } | { ok: false; reason: string } {
  if (sealed.length > MAX_SEALED_LENGTH)
    return { ok: false, reason: "longer than any value the proxy issues" };
  const parts = sealed.split(".");
  if (parts.length !== 4 || parts[0] !== VERSION)
    return { ok: false, reason: "not a value the proxy issued" };
  const iv = Buffer.from(parts[1]!, "base64url");
  const tag = Buffer.from(parts[3]!, "base64url");
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES)
    return { ok: false, reason: "not a value the proxy issued" };
  let text: string;
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, iv);
    decipher.setAAD(Buffer.from(`${VERSION}:${purpose}`));
    decipher.setAuthTag(tag);
    text = Buffer.concat([decipher.update(Buffer.from(parts[2]!, "base64url")), decipher.final()]).toString(
      "utf8",
    );
  } catch {
    return { ok: false, reason: "forged, changed, or sealed under another key" };
  }
  let value: T;
  try {
    value = JSON.parse(text) as T;
  } catch {
    return { ok: false, reason: "not a value the proxy issued" };
  }
  if (typeof value?.exp !== "number" || value.exp <= now) return { ok: false, reason: "expired" };
  return { ok: true, value };
}

/** A new random session key. */
export function newSessionKey(): Buffer {
  return randomBytes(SESSION_KEY_BYTES);
}
