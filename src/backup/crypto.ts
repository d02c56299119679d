import {
  type CipherGCM,
  createCipheriv,
  createDecipheriv,
  createHash,
  type DecipherGCM,
  type Hash,
  hkdfSync,
  randomBytes,
} from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";

/**
 * Backups are encrypted at rest on the client side with AES-256-GCM under a key per tenant (kept in
 * a Secret of tenantry's namespace); the store only ever sees ciphertext. The IV is fresh per object;
 * the IV and the GCM tag travel in the object's sidecar record, so a changed byte fails the restore.
 * Each backup is encrypted under its own key, derived from the tenant's (HKDF-SHA256 over the
 * backup's location): only that key leaves tenantry's namespace, in the Secret of the agents of
 * that one backup, and it opens nothing else.
 */
export const TENANT_KEY_BYTES = 32;
const IV_BYTES = 12;

export function newTenantKey(): Buffer {
  return randomBytes(TENANT_KEY_BYTES);
}

/** The key of one backup: HKDF-SHA256 of the tenant's key, salted with nothing, over its location. */
export function backupKey(tenantKey: Buffer, location: string): Buffer {
  checkTenantKey(tenantKey);
  return Buffer.from(
    hkdfSync("sha256", tenantKey, Buffer.alloc(0), `tenantry backup ${location}`, TENANT_KEY_BYTES),
  );
}

export function checkTenantKey(key: Buffer): void {
  if (key.length !== TENANT_KEY_BYTES)
    throw new RangeError(`the tenant key must be ${TENANT_KEY_BYTES} bytes, it is ${key.length}`);
}

/** Counts and hashes what passes through, unchanged. */
export class HashingStream extends Transform {
  private readonly hash: Hash = createHash("sha256");
  bytes = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    done(null, chunk);
  }

  /** The hex SHA-256 of everything seen; call once the stream has ended. */
  digest(): string {
    return this.hash.digest("hex");
  }
}

/** An encrypting stream; its `sealed()` gives the IV and tag once it has ended. */
export function encryptor(key: Buffer): { stream: CipherGCM; sealed(): { iv: string; tag: string } } {
  checkTenantKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  return {
    stream: cipher,
    sealed: () => ({ iv: iv.toString("base64"), tag: cipher.getAuthTag().toString("base64") }),
  };
}

/** A decrypting stream that fails at its end when any byte, the IV or the tag was changed. */
export function decryptor(key: Buffer, sealed: { iv: string; tag: string }): DecipherGCM {
  checkTenantKey(key);
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.iv, "base64"));
  decipher.setAuthTag(Buffer.from(sealed.tag, "base64"));
  return decipher;
}
