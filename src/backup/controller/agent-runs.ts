/**
 * What the RuntimeBackup and RuntimeRestore controllers share: a run from its start to its outcome
 * (written once), the tenant's key, the runtime, and the agent Jobs with their Secret.
 */
import type { KubernetesObject, V1Job, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  applyStatus,
  type ClusterClient,
  describeError,
  type Informer,
  ignoreNotFound,
  isAlreadyExists,
  isNotFound,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
} from "../../kube/index.js";
import type { Runtime, RuntimeService } from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { DEFAULT_AGENT_IMAGE } from "../agent/env.js";
import type { RuntimeBackup, RuntimeRestore } from "../api/backup.js";
import { backupKey, newTenantKey } from "../crypto.js";
import type { S3ObjectStore } from "../store/s3.js";
import { type AgentJobOptions, agentJob, agentSecret, type JobOutcome, jobOutcome } from "./agent-jobs.js";
import { agentJobName, agentSecretName, tenantKeySecretName } from "./layout.js";

/** What a run needs of the controllers' options (BackupControllerOptions). */
export interface AgentRunsOptions {
  client: ClusterClient;
  /** tenantry's namespace: the tenants' keys are kept there. */
  namespace: string;
  /** The backup agents' broker (the runtimes Admin API, which serves it): undefined while there is none. */
  brokerUrl: () => string | undefined;
  /** The agent image (default ghcr.io/tenantry/backup-agent). */
  agentImage?: string;
  logger: Logger;
}

export const now = () => new Date().toISOString();
export const POLL_MS = 2000;

export type Status<T extends { status?: unknown }> = NonNullable<T["status"]>;
type Tracked = RuntimeBackup | RuntimeRestore;
type TrackedKind = "RuntimeBackup" | "RuntimeRestore";

/** One reconcile of a backup or restore that has not ended: what its steps share. */
export interface Run<T extends Tracked> {
  namespace: string;
  name: string;
  obj: T;
  /** Its status, which the steps advance (and write as they go). */
  status: Status<T>;
  /** Ends it Failed, saying why. */
  fail: (reason: string, message: string) => Promise<ReconcileResult>;
}

/** What the agent Jobs of one backup or restore share. */
type Agents = Pick<AgentJobOptions, "secret" | "ownerLabel" | "pods">;
/** What one claim's agent Job does: its index names the Job. */
type AgentWork = Pick<AgentJobOptions, "mode" | "claim" | "key" | "sha256"> & { index: number };

/** The runs of backups and restores (one for both controllers: they share what has finished). */
export class AgentRuns {
  private readonly client: ClusterClient;
  /** UIDs whose outcome this process wrote: a stale cache must not make them run (or fail) again. */
  private readonly finished = new Set<string>();

  /** `jobs`: the agent Jobs (by their label); `store`: where the backups are. */
  constructor(
    private readonly options: AgentRunsOptions,
    private readonly store: S3ObjectStore,
    private readonly jobs: Informer<V1Job>,
  ) {
    this.client = options.client;
  }

  /** The tenant's backup key, made (once) when its first backup is taken. */
  async tenantKey(tenant: string, create: boolean): Promise<Buffer> {
    const name = tenantKeySecretName(tenant);
    const namespace = this.options.namespace;
    try {
      const secret = await this.client.core.readNamespacedSecret({ name, namespace });
      return Buffer.from(secret.data?.key ?? "", "base64");
    } catch (err) {
      if (!isNotFound(err) || !create) throw err;
    }
    const key = newTenantKey();
    try {
      await this.client.core.createNamespacedSecret({
        namespace,
        body: {
          metadata: { name, namespace, labels: { "tenantry.dev/tenant": tenant } },
          type: "Opaque",
          data: { key: key.toString("base64") },
        } as V1Secret,
      });
      return key;
    } catch (err) {
      // Another worker made it first: use theirs.
      if (isAlreadyExists(err)) return this.tenantKey(tenant, false);
      throw err;
    }
  }

  async readRuntime(namespace: string, name: string): Promise<Runtime | undefined> {
    try {
      return (await this.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "Runtime",
        metadata: { name, namespace },
      })) as Runtime;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private async readService(name: string): Promise<RuntimeService | undefined> {
    try {
      return (await this.client.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "RuntimeService",
        metadata: { name },
      })) as RuntimeService;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** The backup or restore a reconcile works on, unless it is gone, going or has ended. */
  openRun<T extends Tracked>(
    informer: Informer<T>,
    kind: TrackedKind,
    ctx: ReconcileContext,
  ): Run<T> | undefined {
    const { namespace, name } = ctx.ref;
    const obj = informer.get(namespace, name);
    if (!obj || obj.metadata?.deletionTimestamp || this.finished.has(obj.metadata!.uid!)) return undefined;
    const status = { ...(obj.status ?? {}) } as Status<T>;
    if (status.phase === "Completed" || status.phase === "Failed") return undefined;
    const fail = (reason: string, message: string) => this.end(obj, kind, status, "Failed", reason, message);
    return { namespace: namespace!, name, obj, status, fail };
  }

  /** Pending → Running: the start is recorded before any work, so a restart carries on from it. */
  async begin<T extends Tracked>(
    obj: T,
    kind: TrackedKind,
    status: Status<T>,
    fields: Partial<Status<T>>,
  ): Promise<void> {
    Object.assign(status, { phase: "Running", reason: "Started", startTime: now(), ...fields });
    await this.writeStatus(obj, kind, status);
  }

  /**
   * Running → Completed or Failed: its agent Jobs and their Secret go (a failure to remove them is
   * logged: the outcome stands), then the outcome is written, once.
   */
  async end<T extends Tracked>(
    obj: T,
    kind: TrackedKind,
    status: Status<T>,
    phase: "Completed" | "Failed",
    reason: string,
    message: string,
  ): Promise<ReconcileResult> {
    await this.removeAgentSecret(obj, kind).catch((err: unknown) =>
      this.options.logger.warn(
        { [kind]: `${obj.metadata?.namespace}/${obj.metadata?.name}`, error: describeError(err) },
        "could not remove the agent Jobs and their Secret",
      ),
    );
    await this.writeStatus(obj, kind, { ...status, phase, reason, message, completionTime: now() });
    await this.abortOpenUploads(obj, kind);
    return reconcileDone();
  }

  /**
   * Once a backup has ended its agents get no more URLs, and the uploads they left open go: the
   * URLs they still hold for them (parts, completion) then change nothing.
   */
  private async abortOpenUploads(obj: Tracked, kind: TrackedKind): Promise<void> {
    const location = kind === "RuntimeBackup" ? (obj as RuntimeBackup).status?.location : undefined;
    if (!location) return;
    try {
      const aborted = await this.store.abortUploads(`${location}/`);
      if (aborted)
        this.options.logger.info(
          { RuntimeBackup: `${obj.metadata?.namespace}/${obj.metadata?.name}`, aborted },
          "aborted the uploads its agents left open",
        );
    } catch (err) {
      this.options.logger.warn(
        { RuntimeBackup: `${obj.metadata?.namespace}/${obj.metadata?.name}`, error: describeError(err) },
        "could not abort the uploads its agents left open",
      );
    }
  }

  async writeStatus<T extends Tracked>(obj: T, kind: TrackedKind, status: Status<T>): Promise<void> {
    if (status.phase === "Completed" || status.phase === "Failed") this.finished.add(obj.metadata!.uid!);
    await applyStatus(this.client, {
      apiVersion: TENANTS_API_VERSION,
      kind,
      metadata: { name: obj.metadata!.name!, namespace: obj.metadata!.namespace! },
      status: { ...status, observedGeneration: obj.metadata?.generation },
    } as KubernetesObject & { status: unknown });
  }

  /** The agents' Secret: the broker's URL and the key of this backup (the agents need no more). */
  private async ensureAgentSecret(owner: KubernetesObject, key: Buffer): Promise<string> {
    const brokerUrl = this.options.brokerUrl();
    if (!brokerUrl)
      throw new Error(
        "the runtimes Admin API, which brokers the agents' requests to the store, is not serving",
      );
    const name = agentSecretName(owner.metadata!.name!);
    await applyObject(this.client, agentSecret(name, owner.metadata!.namespace!, brokerUrl, key, owner));
    return name;
  }

  /**
   * Removes the agent Jobs (and their pods, which hold the claims and the tokens the broker takes)
   * and the agent Secret (the backup's key) when the outcome is about to be recorded.
   */
  private async removeAgentSecret(owner: Tracked, kind: TrackedKind): Promise<void> {
    for (const job of this.jobs.inNamespace(owner.metadata!.namespace!)) {
      if (!job.metadata?.ownerReferences?.some((ref) => ref.kind === kind && ref.uid === owner.metadata?.uid))
        continue;
      await ignoreNotFound(
        this.client.objects.delete(
          {
            apiVersion: "batch/v1",
            kind: "Job",
            metadata: { name: job.metadata!.name!, namespace: job.metadata!.namespace! },
          },
          undefined,
          undefined,
          undefined,
          undefined,
          "Background",
        ),
      );
    }
    await ignoreNotFound(
      this.client.core.deleteNamespacedSecret({
        name: agentSecretName(owner.metadata!.name!),
        namespace: owner.metadata!.namespace!,
      }),
    );
  }

  private async ensureJob(job: V1Job): Promise<V1Job> {
    const cached = this.jobs.get(job.metadata!.namespace, job.metadata!.name!);
    if (cached) return cached;
    try {
      return (await this.client.objects.create(job)) as V1Job;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      return (await this.client.objects.read(
        job as KubernetesObject & { metadata: { name: string } },
      )) as V1Job;
    }
  }

  /** What a run's agent Jobs share: its Secret (the broker's URL and the key), where the runtime's pods run. */
  async prepareAgents(
    run: Run<Tracked>,
    runtime: Runtime,
    key: Buffer,
    ownerLabel: string,
  ): Promise<Agents | { failed: ReconcileResult }> {
    const service = await this.readService(runtime.spec.service);
    try {
      const secret = await this.ensureAgentSecret(run.obj, key);
      return { secret, ownerLabel, pods: service?.spec.pods };
    } catch (err) {
      return { failed: await run.fail("AgentSecret", describeError(err)) };
    }
  }

  /** Makes one claim's agent Job if it is missing, and says where it is. */
  async runAgent(run: Run<Tracked>, agents: Agents, { index, ...work }: AgentWork): Promise<JobOutcome> {
    const job = await this.ensureJob(
      agentJob({
        ...work,
        name: agentJobName(run.name, index),
        namespace: run.namespace,
        image: this.options.agentImage ?? DEFAULT_AGENT_IMAGE,
        owner: run.obj,
        ...agents,
      }),
    );
    return jobOutcome(this.client, job);
  }
}

/** The key a backup is encrypted under: its own (derived), or the tenant's for backups from before. */
export function keyOf(status: Status<RuntimeBackup>, tenantKey: Buffer): Buffer {
  return status.keyScope === "Backup" ? backupKey(tenantKey, status.location!) : tenantKey;
}
