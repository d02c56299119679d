import type { Readable } from "node:stream";

/** One object as a listing shows it. */
export interface StoredObject {
  key: string;
  size: number;
}

/** What a put wrote: its size and the SHA-256 of its bytes (hex), checked part by part by the store. */
export interface PutResult {
  size: number;
  sha256: string;
}

export interface PutOptions {
  /** Told after each part is stored, with the bytes stored so far. */
  onProgress?: (bytes: number) => void;
}

/** Raised when an object (or the bucket) does not exist. */
export class ObjectNotFound extends Error {
  constructor(readonly key: string) {
    super(`object "${key}" does not exist`);
  }
}

/**
 * Where backups are kept: one bucket (or folder) of objects named by keys with `/` separators.
 * Implementations: S3 (any S3-compatible endpoint); each passes the object store conformance suite.
 */
export interface ObjectStore {
  /** For messages: e.g. `s3://bucket at http://127.0.0.1:7070`. */
  readonly description: string;
  /** Creates the bucket when it does not exist yet. */
  ensureBucket(): Promise<void>;
  /** Streams `body` into `key` (in parts, each checksummed); an existing object is replaced. */
  put(key: string, body: Readable | Buffer, options?: PutOptions): Promise<PutResult>;
  /** The object's bytes; ObjectNotFound when it does not exist. */
  get(key: string): Promise<Readable>;
  /** The object's size, or undefined when it does not exist. */
  head(key: string): Promise<StoredObject | undefined>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): Promise<StoredObject[]>;
  /** Deletes the objects; keys that do not exist are ignored. */
  delete(keys: string[]): Promise<void>;
}
