import { createHash, webcrypto } from "node:crypto";
import type { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  ChecksumAlgorithm,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import {
  commandFor,
  type PresignedRequest,
  type StoreBroker,
  type StoreRequest,
  sendThroughBroker,
  signedHeadersOf,
} from "./presigned.js";
import {
  ObjectNotFound,
  type ObjectStore,
  type PutOptions,
  type PutResult,
  type StoredObject,
} from "./spi.js";

/** Where an S3-compatible store is and how to sign in to it (e.g. from a Secret's keys of these names). */
export interface S3Settings {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Default us-east-1. */
  region?: string;
  /** Bytes per multipart part (default 8 MiB; S3 needs at least 5 MiB for all but the last). */
  partSize?: number;
  /** Parts uploaded at once (default 4): an upload holds about (concurrency + 1) parts in memory. */
  concurrency?: number;
}

/** A backup agent's way to the store: every request presigned by tenantry's broker, no key of its own. */
export interface BrokeredS3Settings {
  broker: StoreBroker;
  partSize?: number;
  concurrency?: number;
}

/** How long a presigned URL works: it is made just before its request is sent; longer covers clock skew. */
export const PRESIGNED_URL_SECONDS = 300;

export const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
export const DEFAULT_CONCURRENCY = 4;
const MAX_CONCURRENCY = 64;
const MIN_PART_SIZE = 5 * 1024 * 1024;

function notFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === "NoSuchKey" || e.name === "NotFound" || e.$metadata?.httpStatusCode === 404;
}

/** Collects a stream into parts of exactly `size` bytes (the last may be shorter). */
async function* parts(body: Readable | Buffer, size: number): AsyncGenerator<Buffer> {
  if (Buffer.isBuffer(body)) {
    for (let offset = 0; offset < body.length; offset += size) yield body.subarray(offset, offset + size);
    if (body.length === 0) yield body;
    return;
  }
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let yielded = false;
  for await (const chunk of body as AsyncIterable<Buffer | string>) {
    let buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    while (pendingBytes + buffer.length >= size) {
      const take = size - pendingBytes;
      pending.push(buffer.subarray(0, take));
      yield Buffer.concat(pending);
      yielded = true;
      buffer = buffer.subarray(take);
      pending = [];
      pendingBytes = 0;
    }
    if (buffer.length) {
      pending.push(buffer);
      pendingBytes += buffer.length;
    }
  }
  if (pendingBytes > 0 || !yielded) yield Buffer.concat(pending);
}

/** An S3 bucket through the AWS SDK: multipart uploads with a SHA-256 checksum on every part. */
export class S3ObjectStore implements ObjectStore {
  readonly description: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly partSize: number;
  private readonly concurrency: number;

  /** Set for a brokered store: even one part goes as a multipart upload (see {@link put}). */
  private readonly multipartOnly: boolean;

  constructor(settings: S3Settings | BrokeredS3Settings) {
    if (settings.partSize !== undefined && settings.partSize < MIN_PART_SIZE)
      throw new RangeError(`partSize must be at least ${MIN_PART_SIZE} bytes (S3's smallest part)`);
    const concurrency = settings.concurrency ?? DEFAULT_CONCURRENCY;
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY)
      throw new RangeError(`concurrency must be an integer from 1 to ${MAX_CONCURRENCY}, not ${concurrency}`);
    this.concurrency = concurrency;
    this.partSize = settings.partSize ?? DEFAULT_PART_SIZE;
    const brokered = "broker" in settings;
    this.multipartOnly = brokered;
    // Brokered, the bucket and the credentials are placeholders: each request's URL and signature
    // are replaced by the broker's before it is sent.
    this.bucket = brokered ? "brokered" : settings.bucket;
    this.description = brokered
      ? `the backup store through ${settings.broker.url}`
      : `s3://${settings.bucket} at ${settings.endpoint}`;
    this.client = new S3Client({
      endpoint: brokered ? settings.broker.url : settings.endpoint,
      region: (brokered ? undefined : settings.region) ?? "us-east-1",
      credentials: brokered
        ? { accessKeyId: "brokered", secretAccessKey: "brokered" }
        : { accessKeyId: settings.accessKeyId, secretAccessKey: settings.secretAccessKey },
      // Any S3-compatible endpoint: bucket in the path, and only the checksums we ask for.
      forcePathStyle: true,
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      maxAttempts: 2,
    });
    // A part sent with its own SHA-256 checksum (which the store checks) is not hashed again for
    // the request's signature: SigV4 over plain HTTP would hash every byte once more on each side.
    this.client.middlewareStack.add(
      (next, _context) => async (args) => {
        const input = args.input as { ChecksumSHA256?: string };
        const request = args.request as { headers?: Record<string, string> };
        if (input.ChecksumSHA256 && request.headers)
          request.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
        return next(args);
      },
      { step: "build", name: "unsignedChecksummedPayload" },
    );
    if (brokered) sendThroughBroker(this.client, settings.broker);
  }

  /**
   * A URL for exactly `request`, signed with this store's key and working for `expiresIn` seconds,
   * and the headers to send with it (a part's checksum among them: the store takes no other bytes).
   */
  async presign(request: StoreRequest, expiresIn = PRESIGNED_URL_SECONDS): Promise<PresignedRequest> {
    const headers = signedHeadersOf(request);
    const signedAt = Date.now();
    // The presigner's parameter is one command type; each of the union is one.
    const url = await getSignedUrl(this.client, commandFor(this.bucket, request) as never, {
      expiresIn,
      unhoistableHeaders: new Set(Object.keys(headers)),
    });
    return { url, headers, expiresAt: new Date(signedAt + expiresIn * 1000).toISOString() };
  }

  /**
   * Aborts every multipart upload still open under `prefix` (the URLs an agent was given for one
   * can then complete nothing), and answers how many there were.
   */
  async abortUploads(prefix: string): Promise<number> {
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          Prefix: prefix,
          KeyMarker: keyMarker,
          UploadIdMarker: uploadIdMarker,
        }),
      );
      for (const upload of page.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId) continue;
        await this.client.send(
          new AbortMultipartUploadCommand({
            Bucket: this.bucket,
            Key: upload.Key,
            UploadId: upload.UploadId,
          }),
        );
        aborted++;
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker);
    return aborted;
  }

  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      if (!notFound(err)) throw err;
      await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }));
    }
  }

  async put(key: string, body: Readable | Buffer, options: PutOptions = {}): Promise<PutResult> {
    const whole = createHash("sha256");
    const iterator = parts(body, this.partSize);
    const first = await iterator.next();
    const firstPart = first.done ? Buffer.alloc(0) : first.value;
    const second = first.done ? { done: true as const, value: undefined } : await iterator.next();
    // One part: one PUT, still checksummed. Not through a broker: a presigned PUT would work again
    // for as long as its URL lives, while a multipart upload's URLs die with the upload.
    if (second.done && !this.multipartOnly) {
      whole.update(firstPart);
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: firstPart,
          ChecksumSHA256: createHash("sha256").update(firstPart).digest("base64"),
        }),
      );
      options.onProgress?.(firstPart.length);
      return { size: firstPart.length, sha256: whole.digest("hex") };
    }
    const created = await this.client.send(
      new CreateMultipartUploadCommand({
        Bucket: this.bucket,
        Key: key,
        ChecksumAlgorithm: ChecksumAlgorithm.SHA256,
      }),
    );
    const uploadId = created.UploadId!;
    const completed: CompletedPart[] = [];
    const sizes: number[] = [];
    // Progress counts the parts stored from the start on, once per part, in order.
    let reported = 0;
    let size = 0;
    const report = () => {
      while (completed[reported]) {
        size += sizes[reported]!;
        reported++;
        options.onProgress?.(size);
      }
    };
    // At most `concurrency` parts are uploading while the next one is read: memory stays bounded.
    const pending = new Set<Promise<void>>();
    let failure: { error: unknown } | undefined;
    const upload = (part: Buffer, index: number) => {
      const PartNumber = index + 1;
      whole.update(part);
      sizes[index] = part.length;
      let checksum = "";
      // The part's own checksum is computed off the event loop (WebCrypto runs on the thread pool).
      const task: Promise<void> = webcrypto.subtle
        .digest("SHA-256", part)
        .then((digest) => {
          checksum = Buffer.from(digest).toString("base64");
          return this.client.send(
            new UploadPartCommand({
              Bucket: this.bucket,
              Key: key,
              UploadId: uploadId,
              PartNumber,
              Body: part,
              ChecksumSHA256: checksum,
            }),
          );
        })
        .then(
          (sent) => {
            completed[index] = {
              PartNumber,
              ETag: sent.ETag,
              ChecksumSHA256: sent.ChecksumSHA256 ?? checksum,
            };
            report();
          },
          (error: unknown) => {
            failure ??= { error };
          },
        )
        .finally(() => pending.delete(task));
      pending.add(task);
    };
    try {
      let index = 0;
      for (const part of second.done ? [firstPart] : [firstPart, second.value]) upload(part, index++);
      for await (const part of iterator) {
        while (pending.size >= this.concurrency && !failure) await Promise.race(pending);
        if (failure) throw failure.error;
        upload(part, index++);
      }
      await Promise.all(pending);
      if (failure) throw failure.error;
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          MultipartUpload: { Parts: completed },
        }),
      );
    } catch (err) {
      // Nothing half-written stays behind (the store would keep the parts until told); parts still
      // on their way are let finish first, or they would land after the abort.
      await Promise.all(pending);
      await this.client
        .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }))
        .catch(() => {});
      throw err;
    }
    return { size, sha256: whole.digest("hex") };
  }

  /** The object's bytes, as one stream (a single GET streams faster than ranged GETs put together). */
  async get(key: string): Promise<Readable> {
    try {
      const answer = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return answer.Body as Readable;
    } catch (err) {
      if (notFound(err)) throw new ObjectNotFound(key);
      throw err;
    }
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const answer = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { key, size: answer.ContentLength ?? 0 };
    } catch (err) {
      if (notFound(err)) return undefined;
      throw err;
    }
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const found: StoredObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const object of page.Contents ?? [])
        if (object.Key) found.push({ key: object.Key, size: object.Size ?? 0 });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
        }),
      );
    }
  }

  /** Closes the client's connections. */
  close(): void {
    this.client.destroy();
  }
}
