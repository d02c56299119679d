/**
 * The store requests a backup agent may make, each signed for it by tenantry (presigned URLs): the
 * agent holds no key of the store. The agent's S3 client builds its requests as usual (the SDK
 * serialises, parses, retries and checks checksums); just before one is sent, its signature is
 * replaced by the URL tenantry presigned for exactly that request, or tenantry's refusal ends it.
 */
import {
  AbortMultipartUploadCommand,
  ChecksumAlgorithm,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";

/** One request of the store, as the agent asks for it: named like the SDK's command. */
export type StoreRequest =
  | { operation: "GetObject"; key: string }
  | { operation: "CreateMultipartUpload"; key: string }
  | { operation: "UploadPart"; key: string; uploadId: string; partNumber: number; checksumSHA256: string }
  | { operation: "CompleteMultipartUpload"; key: string; uploadId: string }
  | { operation: "AbortMultipartUpload"; key: string; uploadId: string };

export type StoreOperation = StoreRequest["operation"];

export const STORE_OPERATIONS: readonly StoreOperation[] = [
  "GetObject",
  "CreateMultipartUpload",
  "UploadPart",
  "CompleteMultipartUpload",
  "AbortMultipartUpload",
];

/** The operations that change the store: a backup's agents may make them, a restore's may not. */
export const WRITE_OPERATIONS: ReadonlySet<StoreOperation> = new Set([
  "CreateMultipartUpload",
  "UploadPart",
  "CompleteMultipartUpload",
  "AbortMultipartUpload",
]);

/** A presigned request: its URL, and the headers that were signed with it (sent exactly so). */
export interface PresignedRequest {
  url: string;
  headers: Record<string, string>;
  /** When the URL stops working (ISO 8601). */
  expiresAt: string;
}

/** Who signs an agent's requests (tenantry's broker, reached over HTTP with the pod's token). */
export interface StoreBroker {
  /** Its base URL (for messages; the agent's client starts each request there before it is replaced). */
  readonly url: string;
  presign(request: StoreRequest): Promise<PresignedRequest>;
}

/**
 * Headers signed into the URL instead of moved into its query: the checksum a part must have (the
 * store then takes only those bytes) and the algorithm of an upload. The client must send them.
 */
export function signedHeadersOf(request: StoreRequest): Record<string, string> {
  if (request.operation === "UploadPart") return { "x-amz-checksum-sha256": request.checksumSHA256 };
  if (request.operation === "CreateMultipartUpload") return { "x-amz-checksum-algorithm": "SHA256" };
  return {};
}

/** The SDK command a request stands for, in `bucket`. */
export function commandFor(bucket: string, request: StoreRequest) {
  const object = { Bucket: bucket, Key: request.key };
  switch (request.operation) {
    case "GetObject":
      return new GetObjectCommand(object);
    case "CreateMultipartUpload":
      return new CreateMultipartUploadCommand({ ...object, ChecksumAlgorithm: ChecksumAlgorithm.SHA256 });
    case "UploadPart":
      return new UploadPartCommand({
        ...object,
        UploadId: request.uploadId,
        PartNumber: request.partNumber,
        ChecksumSHA256: request.checksumSHA256,
      });
    case "CompleteMultipartUpload":
      return new CompleteMultipartUploadCommand({ ...object, UploadId: request.uploadId });
    case "AbortMultipartUpload":
      return new AbortMultipartUploadCommand({ ...object, UploadId: request.uploadId });
  }
}

/** A store request's fields, loose (as a body or an SDK command's input has them). */
export interface StoreRequestFields {
  operation: StoreOperation;
  key: string;
  uploadId?: string;
  partNumber?: number;
  checksumSHA256?: string;
}

/** The request the fields make; `missing(field)` throws for a field the operation needs and lacks. */
export function storeRequestFrom(
  fields: StoreRequestFields,
  missing: (field: string) => never,
): StoreRequest {
  const need = <K extends "uploadId" | "partNumber" | "checksumSHA256">(field: K) =>
    (fields[field] ?? missing(field)) as NonNullable<StoreRequestFields[K]>;
  const { operation, key } = fields;
  switch (operation) {
    case "GetObject":
    case "CreateMultipartUpload":
      return { operation, key };
    case "UploadPart":
      return {
        operation,
        key,
        uploadId: need("uploadId"),
        partNumber: need("partNumber"),
        checksumSHA256: need("checksumSHA256"),
      };
    case "CompleteMultipartUpload":
    case "AbortMultipartUpload":
      return { operation, key, uploadId: need("uploadId") };
  }
}

interface CommandInput {
  Key?: string;
  UploadId?: string;
  PartNumber?: number;
  ChecksumSHA256?: string;
}

/** The request an SDK command makes, as the broker is asked for it; any other command is refused here. */
export function storeRequestOf(commandName: string, input: CommandInput): StoreRequest {
  const operation = commandName.replace(/Command$/, "") as StoreOperation;
  if (!STORE_OPERATIONS.includes(operation))
    throw new Error(
      `${operation} is not a request a backup agent makes (it may make ${STORE_OPERATIONS.join(", ")})`,
    );
  return storeRequestFrom(
    {
      operation,
      key: input.Key ?? "",
      ...(input.UploadId !== undefined ? { uploadId: input.UploadId } : {}),
      ...(input.PartNumber !== undefined ? { partNumber: input.PartNumber } : {}),
      ...(input.ChecksumSHA256 !== undefined ? { checksumSHA256: input.ChecksumSHA256 } : {}),
    },
    (field) => {
      throw new Error(`${operation} of ${input.Key} lacks its ${field}`);
    },
  );
}

interface OutgoingRequest {
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query: Record<string, string | string[] | null>;
  headers: Record<string, string>;
}

/**
 * Sends every request of `client` as the broker presigned it: after the SDK signed it (with no
 * real key), the URL, query and signed headers become the broker's and the SDK's own signature
 * headers go. Runs on each attempt, so a retry gets a fresh URL.
 */
export function sendThroughBroker(client: S3Client, broker: StoreBroker): void {
  type Args = { request: unknown; input: unknown };
  const middleware =
    (next: (args: Args) => Promise<unknown>, context: { commandName?: string }) => async (args: Args) => {
      const request = args.request as OutgoingRequest;
      const presigned = await broker.presign(
        storeRequestOf(context.commandName ?? "", args.input as CommandInput),
      );
      const url = new URL(presigned.url);
      request.protocol = url.protocol;
      request.hostname = url.hostname;
      if (url.port) request.port = Number(url.port);
      else delete request.port;
      request.path = url.pathname;
      request.query = Object.fromEntries(url.searchParams);
      for (const name of Object.keys(request.headers)) {
        const lower = name.toLowerCase();
        if (lower === "authorization" || lower === "host" || lower.startsWith("x-amz-"))
          delete request.headers[name];
      }
      Object.assign(request.headers, presigned.headers, { host: url.host });
      return next(args);
    };
  client.middlewareStack.addRelativeTo(middleware as never, {
    relation: "after",
    toMiddleware: "httpSigningMiddleware",
    name: "brokeredRequest",
    override: true,
  });
}
