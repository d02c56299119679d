/**
 * The backup agents' broker, served on the runtimes Admin API (which runtime pods already reach):
 * `POST /backup-agent/v1/presign` with the agent pod's projected service-account token (audience
 * `tenantry-backup-agent`) answers one presigned URL for one store request the agent's grant allows
 * (see grants.ts), working for five minutes. The store's own keys stay in tenantry's process; the
 * agent's namespace holds no credential of the store. Runs on every replica (its caches are its own).
 */
import type { KubernetesObject, V1Job } from "@kubernetes/client-node";
import { type Static, Type } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { StringEnum } from "../../apis/index.js";
import {
  type ClusterClient,
  componentCache,
  type Informer,
  type InformerCache,
  isNotFound,
  startInformers,
} from "../../kube/index.js";
import type { AdminRouteContext, AdminRoutes, PodCaller } from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { BACKUP_AGENT_AUDIENCE } from "../agent/env.js";
import type { RuntimeBackup, RuntimeRestore } from "../api/backup.js";
import { backupInformers } from "../informers.js";
import {
  type PresignedRequest,
  STORE_OPERATIONS,
  type StoreRequest,
  storeRequestFrom,
  WRITE_OPERATIONS,
} from "../store/presigned.js";
import { PRESIGNED_URL_SECONDS, S3ObjectStore, type S3Settings } from "../store/s3.js";
import { type GrantSources, grantOf } from "./grants.js";
import { PRESIGN_PATH } from "./paths.js";

/** The most parts one upload may have (S3's limit). */
const MAX_PARTS = 10_000;

export const PresignBody = Type.Object(
  {
    operation: StringEnum(STORE_OPERATIONS, { description: "The store request, named like the S3 API's." }),
    key: Type.String({ description: "The object's key.", minLength: 1, maxLength: 1024 }),
    uploadId: Type.Optional(
      Type.String({
        description: "The multipart upload (all but GetObject and CreateMultipartUpload).",
        minLength: 1,
        maxLength: 1024,
      }),
    ),
    partNumber: Type.Optional(
      Type.Integer({ description: "UploadPart: the part's number.", minimum: 1, maximum: MAX_PARTS }),
    ),
    checksumSHA256: Type.Optional(
      Type.String({
        description: "UploadPart: the part's SHA-256, base64 (the store takes no other bytes).",
        pattern: "^[A-Za-z0-9+/]{43}=$",
      }),
    ),
  },
  { additionalProperties: false, description: "One store request a backup agent asks tenantry to sign." },
);
type PresignBody = Static<typeof PresignBody>;

const PresignedBody = Type.Object({
  url: Type.String({ description: "The presigned URL." }),
  headers: Type.Record(Type.String(), Type.String(), {
    description: "Headers signed with it: send them exactly.",
  }),
  expiresAt: Type.String({ format: "date-time", description: "When the URL stops working." }),
});

export interface BackupBrokerOptions {
  client: ClusterClient;
  /** The process's shared cache; without it the broker watches on its own. */
  cache?: InformerCache;
  /** The store, with its keys: only tenantry's process holds them. */
  store: S3Settings;
  /** How long a URL works (default 300 s). */
  urlSeconds?: number;
  logger: Logger;
}

export class BackupBroker {
  private readonly backups: Informer<RuntimeBackup>;
  private readonly restores: Informer<RuntimeRestore>;
  private readonly jobs: Informer<V1Job>;
  private readonly store: S3ObjectStore;
  private readonly sources: GrantSources;
  private readonly release: () => Promise<void>;

  constructor(private readonly options: BackupBrokerOptions) {
    const { cache, release } = componentCache(options);
    this.release = release;
    this.store = new S3ObjectStore(options.store);
    ({ backups: this.backups, restores: this.restores, jobs: this.jobs } = backupInformers(cache));
    // The caches answer; an object they do not show yet (or show before it started) is read once:
    // an agent may ask before its Job or its backup's Running reached this replica's cache.
    const started = (obj?: RuntimeBackup | RuntimeRestore) =>
      obj?.status?.phase !== undefined && obj.status.phase !== "Pending";
    this.sources = {
      job: (namespace, name) =>
        this.readThrough(this.jobs.get(namespace, name), (job) => job !== undefined, {
          apiVersion: "batch/v1",
          kind: "Job",
          metadata: { namespace, name },
        }),
      backup: (namespace, name) =>
        this.readThrough(this.backups.get(namespace, name), started, {
          apiVersion: TENANTS_API_VERSION,
          kind: "RuntimeBackup",
          metadata: { namespace, name },
        }),
      restore: (namespace, name) =>
        this.readThrough(this.restores.get(namespace, name), started, {
          apiVersion: TENANTS_API_VERSION,
          kind: "RuntimeRestore",
          metadata: { namespace, name },
        }),
    };
  }

  private get informers(): Informer<KubernetesObject>[] {
    return [this.backups, this.restores, this.jobs] as unknown as Informer<KubernetesObject>[];
  }

  async start(): Promise<void> {
    await startInformers(this.informers);
  }

  async stop(): Promise<void> {
    await this.release();
    this.store.close();
  }

  private async readThrough<T extends KubernetesObject>(
    cached: T | undefined,
    settled: (obj: T | undefined) => boolean,
    ref: KubernetesObject & { metadata: { name: string; namespace: string } },
  ): Promise<T | undefined> {
    if (settled(cached)) return cached;
    try {
      return (await this.options.client.objects.read(ref)) as T;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The broker's route, for the runtimes Admin API. */
  readonly routes: AdminRoutes = (api, context) => {
    api.post(
      PRESIGN_PATH,
      {
        schema: {
          summary:
            "Backup agents only (their pod's projected token, audience tenantry-backup-agent): one presigned URL for one request of the store, within the agent's own backup or restore.",
          body: PresignBody,
          response: { 200: PresignedBody },
        },
      },
      async (request) => this.presign(request, context),
    );
  };

  private async presign(request: FastifyRequest, context: AdminRouteContext): Promise<PresignedRequest> {
    const wanted = storeRequestOf(request.body as PresignBody, context);
    const pod = await context.podCaller(request, BACKUP_AGENT_AUDIENCE);
    const decided = await grantOf(pod.pod, pod.namespace, this.sources);
    const refuse = (detail: string) => {
      this.options.logger.warn(
        { audit: "backup-agent-refused", pod: podName(pod), operation: wanted.operation, key: wanted.key },
        detail,
      );
      return context.problem(403, "forbidden", detail);
    };
    if (!decided.ok) throw refuse(decided.detail);
    const { grant } = decided;
    if (!grant.keys.includes(wanted.key))
      throw refuse(
        `the agent of ${grant.kind} ${grant.owner} may reach ${grant.keys.join(" and ")} only, not ${wanted.key}`,
      );
    if (WRITE_OPERATIONS.has(wanted.operation) && !grant.writes)
      throw refuse(`the agent of ${grant.kind} ${grant.owner} only reads: ${wanted.operation} is a write`);
    return this.store.presign(wanted, this.options.urlSeconds ?? PRESIGNED_URL_SECONDS);
  }
}

const podName = (pod: PodCaller) => `${pod.namespace}/${pod.pod.metadata?.name}`;

/** The body as a store request; a field its operation needs and lacks is named. */
function storeRequestOf(body: PresignBody, context: AdminRouteContext): StoreRequest {
  return storeRequestFrom(body, (field) => {
    throw context.problem(400, "invalid request", `body ${field}: ${body.operation} needs it`, { field });
  });
}
