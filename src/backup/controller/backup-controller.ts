/**
 * The backup server (Vasilenko & Kurapati, §3.3): RuntimeBackup and RuntimeRestore controllers. A backup
 * writes the runtime's metadata to the store itself and spawns one agent Job per claim in the
 * runtime's namespace that streams the claim's data to the store (encrypted with the tenant's key,
 * verified by reading it back). A restore re-creates missing metadata (the Runtime stays Stopped)
 * and runs agent Jobs that replace each claim's content once every byte is verified. Status is
 * written at every step, and a failure names its reason; nothing is replaced by a failed restore.
 */
import { type KubernetesObject, PatchStrategy, type V1Job, type V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  applyStatus,
  type ClusterClient,
  Controller,
  componentCache,
  describeError,
  type Informer,
  type InformerCache,
  ignoreNotFound,
  isAlreadyExists,
  isNotFound,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  startInformers,
} from "../../kube/index.js";
import { RUNTIME_LABEL, type Runtime, type RuntimeService, startGateOf } from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { DEFAULT_AGENT_IMAGE } from "../agent/env.js";
import { type ArchiveRecord, recordKey } from "../agent/volume.js";
import {
  BACKUP_NAME_LABEL,
  BACKUP_RUNTIME_LABEL,
  type BackupPolicy,
  RESTORE_FROM_ANNOTATION,
  RESTORE_NAME_LABEL,
  type RuntimeBackup,
  type RuntimeRestore,
} from "../api/backup.js";
import { backupKey, newTenantKey } from "../crypto.js";
import { S3ObjectStore, type S3Settings } from "../store/s3.js";
import {
  AGENT_JOB_LABEL,
  type AgentJobOptions,
  agentJob,
  agentSecret,
  type JobOutcome,
  jobOutcome,
} from "./agent-jobs.js";
import {
  agentJobName,
  agentSecretName,
  backupLocation,
  manifestKey,
  metadataKey,
  tenantKeySecretName,
  volumeKey,
} from "./layout.js";
import { collectMetadata, getMetadata, putMetadata } from "./metadata.js";
import { byOwnerOfKind } from "./objects.js";
import { PolicyController } from "./policy-controller.js";
import { TeardownController } from "./teardown-controller.js";

export interface BackupControllerOptions {
  client: ClusterClient;
  /** The process's shared cache; without it the controllers watch on their own. */
  cache?: InformerCache;
  /** The object store every backup goes to. */
  store: S3Settings;
  /** tenantry's namespace: the tenants' keys are kept there. */
  namespace: string;
  /** The backup agents' broker (the runtimes Admin API, which serves it): undefined while there is none. */
  brokerUrl: () => string | undefined;
  /** The agent image (default ghcr.io/tenantry/backup-agent). */
  agentImage?: string;
  /** How often schedules, idle runtimes and retention are looked at (default 15 s). */
  idleIntervalMs?: number;
  logger: Logger;
}

const now = () => new Date().toISOString();
const POLL_MS = 2000;

type Status<T extends { status?: unknown }> = NonNullable<T["status"]>;
type Tracked = RuntimeBackup | RuntimeRestore;
type TrackedKind = "RuntimeBackup" | "RuntimeRestore";

type VolumeRecord = NonNullable<Status<RuntimeBackup>["volumes"]>[number];

/** One reconcile of a backup or restore that has not ended: what its steps share. */
interface Run<T extends Tracked> {
  namespace: string;
  name: string;
  obj: T;
  /** Its status, which the steps advance (and write as they go). */
  status: Status<T>;
  /** Ends it Failed, saying why. */
  fail: (reason: string, message: string) => Promise<ReconcileResult>;
}

interface BackupRun extends Run<RuntimeBackup> {
  runtime: Runtime;
}

interface RestoreRun extends Run<RuntimeRestore> {
  backup: RuntimeBackup;
  /** The backup's status: Completed. */
  backedUp: Status<RuntimeBackup>;
}

/** What the agent Jobs of one backup or restore share. */
type Agents = Pick<AgentJobOptions, "secret" | "ownerLabel" | "pods">;
/** What one claim's agent Job does: its index names the Job. */
type AgentWork = Pick<AgentJobOptions, "mode" | "claim" | "key" | "sha256"> & { index: number };

export class BackupControllers {
  readonly backups: Informer<RuntimeBackup>;
  readonly restores: Informer<RuntimeRestore>;
  private readonly jobs: Informer<V1Job>;
  private readonly runtimes: Informer<Runtime>;
  private readonly policies: Informer<BackupPolicy>;
  private readonly backupController: Controller;
  private readonly restoreController: Controller;
  private readonly policyController: PolicyController;
  private readonly teardowns: TeardownController;
  private readonly store: S3ObjectStore;
  private readonly client: ClusterClient;
  /** UIDs whose outcome this process wrote: a stale cache must not make them run (or fail) again. */
  private readonly finished = new Set<string>();
  private readonly release: () => Promise<void>;

  constructor(private readonly options: BackupControllerOptions) {
    this.client = options.client;
    const { cache, release } = componentCache(options);
    this.release = release;
    this.store = new S3ObjectStore(options.store);
    this.backups = cache.informer<RuntimeBackup>({ apiVersion: TENANTS_API_VERSION, kind: "RuntimeBackup" });
    this.restores = cache.informer<RuntimeRestore>({
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeRestore",
    });
    this.jobs = cache.informer<V1Job>({
      apiVersion: "batch/v1",
      kind: "Job",
      labelSelector: `${AGENT_JOB_LABEL}=true`,
    });
    this.runtimes = cache.informer<Runtime>({ apiVersion: TENANTS_API_VERSION, kind: "Runtime" });
    this.policies = cache.informer<BackupPolicy>({ apiVersion: TENANTS_API_VERSION, kind: "BackupPolicy" });
    this.backupController = new Controller({
      name: "runtime-backups",
      workers: 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcileBackup(ctx),
    });
    this.restoreController = new Controller({
      name: "runtime-restores",
      workers: 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcileRestore(ctx),
    });
    this.backupController.watch(this.backups);
    this.restoreController.watch(this.restores);
    // By owner reference, not by label: a label value holds 63 characters, a name up to 253.
    this.backupController.watch(this.jobs, byOwnerOfKind("RuntimeBackup"));
    this.restoreController.watch(this.jobs, byOwnerOfKind("RuntimeRestore"));
    this.policyController = new PolicyController({
      client: this.client,
      store: options.store,
      logger: options.logger,
      policies: this.policies,
      runtimes: this.runtimes,
      backups: this.backups,
      ...(options.idleIntervalMs ? { intervalMs: options.idleIntervalMs } : {}),
    });
    this.teardowns = new TeardownController({
      client: this.client,
      runtimes: this.runtimes,
      backups: this.backups,
      restores: this.restores,
      logger: options.logger,
    });
  }

  private get informers(): Informer<KubernetesObject>[] {
    return [
      this.backups,
      this.restores,
      this.jobs,
      this.runtimes,
      this.policies,
    ] as unknown as Informer<KubernetesObject>[];
  }

  async start(): Promise<void> {
    await startInformers(this.informers);
    await this.backupController.start();
    await this.restoreController.start();
    await this.teardowns.start();
    this.policyController.start();
  }

  async stop(): Promise<void> {
    await this.policyController.stop();
    await this.teardowns.stop();
    await this.backupController.stop();
    await this.restoreController.stop();
    await this.release();
    this.store.close();
  }

  /** The tenant's backup key, made (once) when its first backup is taken. */
  private async tenantKey(tenant: string, create: boolean): Promise<Buffer> {
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

  private async readRuntime(namespace: string, name: string): Promise<Runtime | undefined> {
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
  private openRun<T extends Tracked>(
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
  private async begin<T extends Tracked>(
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
  private async end<T extends Tracked>(
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

  private async writeStatus<T extends Tracked>(obj: T, kind: TrackedKind, status: Status<T>): Promise<void> {
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
  private async prepareAgents(
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
  private async runAgent(
    run: Run<Tracked>,
    agents: Agents,
    { index, ...work }: AgentWork,
  ): Promise<JobOutcome> {
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

  private async reconcileBackup(ctx: ReconcileContext): Promise<ReconcileResult> {
    const run = this.openRun(this.backups, "RuntimeBackup", ctx);
    if (!run) return reconcileDone();
    const { namespace, obj: backup } = run;
    const runtime = await this.readRuntime(namespace, backup.spec.runtime);
    if (!runtime)
      return run.fail("RuntimeNotFound", `runtime ${namespace}/${backup.spec.runtime} does not exist`);
    if (runtime.status?.cluster && runtime.status.cluster !== this.client.name)
      return run.fail(
        "RemoteCluster",
        `runtime ${backup.spec.runtime} runs in cluster ${runtime.status.cluster}, where its claims are: backups cover the runtimes of cluster ${this.client.name} only (an agent must run next to the claim it reads)`,
      );
    return this.backUp({ ...run, runtime });
  }

  /** The backup's steps in order; one the status records as done is skipped: a reconcile carries on. */
  private async backUp(run: BackupRun): Promise<ReconcileResult> {
    const { obj: backup, status, runtime } = run;
    const include = { metadata: true, volumes: true, ...(backup.spec.include ?? {}) };
    if (!status.phase || status.phase === "Pending") await this.beginBackup(run);
    let key: Buffer;
    try {
      key = keyOf(status, await this.tenantKey(runtime.spec.tenant, true));
    } catch (err) {
      return run.fail("KeyUnavailable", `the tenant's key could not be read or made: ${describeError(err)}`);
    }
    if (include.metadata && status.metadataObjects === undefined) {
      const failed = await this.backUpMetadata(run, key);
      if (failed) return failed;
    }
    if (include.volumes && !status.volumes) await this.recordClaims(run);
    const unfinished = await this.backUpVolumes(run, key);
    return unfinished ?? this.completeBackup(run);
  }

  /** Labels the backup and records its start: where in the store it goes, under a key of its own. */
  private async beginBackup({ obj: backup, name, status, runtime }: BackupRun): Promise<void> {
    await this.applyBackupLabel(backup);
    await this.begin(backup, "RuntimeBackup", status, {
      message: "backing up",
      tenant: runtime.spec.tenant,
      location: backupLocation(runtime, name),
      keyScope: "Backup",
    });
  }

  /** Writes the runtime's metadata to the store (the controller itself, no agent) and records its count. */
  private async backUpMetadata(run: BackupRun, key: Buffer): Promise<ReconcileResult | undefined> {
    const { status } = run;
    try {
      await this.store.ensureBucket();
      status.metadataObjects = await putMetadata(
        this.store,
        metadataKey(status.location!),
        await collectMetadata(this.client, run.runtime),
        key,
      );
    } catch (err) {
      return run.fail(
        "StoreUnavailable",
        `writing the metadata to ${this.store.description} failed: ${describeError(err)}`,
      );
    }
    await this.writeStatus(run.obj, "RuntimeBackup", status);
    return undefined;
  }

  /** Records the runtime's claims, each with the key of its archive: the agents' work list. */
  private async recordClaims({ namespace, obj: backup, status, runtime }: BackupRun): Promise<void> {
    const claims = await this.client.core.listNamespacedPersistentVolumeClaim({
      namespace,
      labelSelector: `${RUNTIME_LABEL}=${runtime.metadata!.name}`,
    });
    status.volumes = claims.items
      .map((c) => c.metadata!.name!)
      .sort()
      .map((claim) => ({ claim, key: volumeKey(status.location!, claim) }));
    await this.writeStatus(backup, "RuntimeBackup", status);
  }

  /** Runs an agent Job for each claim not yet archived; undefined once every archive is recorded. */
  private async backUpVolumes(run: BackupRun, key: Buffer): Promise<ReconcileResult | undefined> {
    const volumes = run.status.volumes ?? [];
    const pending = volumes.filter((v) => v.sha256 === undefined);
    if (pending.length === 0) return undefined;
    const agents = await this.prepareAgents(run, run.runtime, key, BACKUP_NAME_LABEL);
    if ("failed" in agents) return agents.failed;
    for (const volume of pending) {
      const outcome = await this.runAgent(run, agents, {
        mode: "backup",
        index: volumes.indexOf(volume),
        claim: volume.claim,
        key: volume.key,
      });
      const failed = await this.recordArchive(run, volume, outcome);
      if (failed) return failed;
    }
    if (volumes.some((v) => v.sha256 === undefined)) return requeueAfter(POLL_MS * 5);
    return undefined;
  }

  /** Where a claim's agent is: a failure fails the backup, a success puts its archive's record in the status. */
  private async recordArchive(
    run: BackupRun,
    volume: VolumeRecord,
    outcome: JobOutcome,
  ): Promise<ReconcileResult | undefined> {
    if (outcome.state === "failed")
      return run.fail("AgentFailed", `claim ${volume.claim}: ${outcome.message}`);
    if (outcome.state !== "succeeded") return undefined;
    let record: ArchiveRecord;
    try {
      record = JSON.parse(await this.readText(recordKey(volume.key))) as ArchiveRecord;
    } catch (err) {
      return run.fail(
        "NotVerified",
        `the record of claim ${volume.claim}'s archive cannot be read: ${describeError(err)}`,
      );
    }
    Object.assign(volume, { size: record.size, files: record.files, sha256: record.sha256 });
    await this.writeStatus(run.obj, "RuntimeBackup", run.status);
    return undefined;
  }

  /** Every part is in the store and verified: the manifest marks the backup complete. */
  private async completeBackup(run: BackupRun): Promise<ReconcileResult> {
    const { status } = run;
    const volumes = status.volumes ?? [];
    try {
      for (const volume of volumes) {
        if (!(await this.store.head(volume.key)))
          return run.fail("NotVerified", `the archive of claim ${volume.claim} is missing from the store`);
      }
      await this.store.put(manifestKey(status.location!), backupManifest(run, volumes));
    } catch (err) {
      return run.fail(
        "StoreUnavailable",
        `completing the backup in ${this.store.description} failed: ${describeError(err)}`,
      );
    }
    return this.end(
      run.obj,
      "RuntimeBackup",
      status,
      "Completed",
      "Completed",
      `backed up ${status.metadataObjects ?? 0} objects and ${volumes.length} claims (${volumes.reduce((n, v) => n + (v.size ?? 0), 0)} bytes), verified`,
    );
  }

  /** Labels the backup with its runtime, so that listing a runtime's backups reads an index. */
  private async applyBackupLabel(backup: RuntimeBackup): Promise<void> {
    if (backup.metadata?.labels?.[BACKUP_RUNTIME_LABEL] === backup.spec.runtime) return;
    await this.client.objects.patch(
      {
        apiVersion: TENANTS_API_VERSION,
        kind: "RuntimeBackup",
        metadata: {
          name: backup.metadata!.name!,
          namespace: backup.metadata!.namespace!,
          labels: { [BACKUP_RUNTIME_LABEL]: backup.spec.runtime },
        },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
  }

  private async readText(key: string): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of await this.store.get(key)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString();
  }

  private async reconcileRestore(ctx: ReconcileContext): Promise<ReconcileResult> {
    const run = this.openRun(this.restores, "RuntimeRestore", ctx);
    if (!run) return reconcileDone();
    const { namespace, obj: restore } = run;
    const backup = this.backups.get(namespace, restore.spec.backup);
    if (!backup)
      return run.fail("BackupNotFound", `backup ${namespace}/${restore.spec.backup} does not exist`);
    if (backup.status?.phase !== "Completed")
      return run.fail(
        "BackupNotCompleted",
        `backup ${restore.spec.backup} is ${backup.status?.phase ?? "Pending"}, not Completed`,
      );
    return this.restoreFrom({ ...run, backup, backedUp: backup.status });
  }

  /** The restore's steps: the runtime out of the way, its metadata back, then its claims' data. */
  private async restoreFrom(run: RestoreRun): Promise<ReconcileResult> {
    const { namespace, obj: restore, status, backup, backedUp } = run;
    const tenant = backedUp.tenant!;
    if (!status.phase || status.phase === "Pending")
      await this.begin(restore, "RuntimeRestore", status, { message: "restoring" });
    let key: Buffer;
    try {
      key = keyOf(backedUp, await this.tenantKey(tenant, false));
    } catch (err) {
      return run.fail("KeyUnavailable", `the key of tenant ${tenant} cannot be read: ${describeError(err)}`);
    }
    let runtime = await this.readRuntime(namespace, backup.spec.runtime);
    const inTheWay = await this.runtimeInTheWay(run, runtime);
    if (inTheWay) return inTheWay;
    if (backedUp.metadataObjects !== undefined) {
      const failed = await this.restoreMetadata(run, key, runtime);
      if (failed) return failed;
      runtime ??= await this.readRuntime(namespace, backup.spec.runtime);
    }
    if (!runtime)
      return run.fail(
        "RuntimeNotFound",
        `runtime ${backup.spec.runtime} does not exist and the backup holds no metadata`,
      );
    const unfinished = await this.restoreVolumes(run, key, runtime);
    return unfinished ?? this.finishRestore(run, runtime);
  }

  /** Whether the runtime is in the restore's way: one that is to run fails it, one still stopping is waited for. */
  private async runtimeInTheWay(
    run: RestoreRun,
    runtime: Runtime | undefined,
  ): Promise<ReconcileResult | undefined> {
    // A start held for this very restore (a runtime torn down while idle) waits for it.
    const heldForIt =
      runtime?.metadata?.annotations?.[RESTORE_FROM_ANNOTATION] === run.obj.spec.backup &&
      startGateOf(runtime) !== undefined &&
      runtime.status?.endpoint === undefined;
    if (
      runtime &&
      !heldForIt &&
      runtime.status?.phase !== "Stopped" &&
      runtime.spec.desiredState !== "Stopped"
    )
      return run.fail(
        "RuntimeRunning",
        `runtime ${run.backup.spec.runtime} is ${runtime.status?.phase ?? "starting"}: stop it first`,
      );
    if (runtime && !heldForIt && runtime.status?.phase !== "Stopped") return requeueAfter(POLL_MS);
    return undefined;
  }

  /** Creates the objects of the backup's metadata that are missing. */
  private async restoreMetadata(
    run: RestoreRun,
    key: Buffer,
    runtime: Runtime | undefined,
  ): Promise<ReconcileResult | undefined> {
    let archive: Awaited<ReturnType<typeof getMetadata>>;
    try {
      archive = await getMetadata(this.store, metadataKey(run.backedUp.location!), key);
    } catch (err) {
      return run.fail(
        "StoreUnavailable",
        `reading the metadata from ${this.store.description} failed: ${describeError(err)}`,
      );
    }
    // Only what is missing is created: a stopped runtime's own objects are left as they are.
    const missing = [
      ...(runtime
        ? []
        : [{ ...archive.runtime, spec: { ...archive.runtime.spec, desiredState: "Stopped" } }]),
      ...archive.secrets,
      ...archive.configMaps,
      ...archive.claims,
    ] as KubernetesObject[];
    for (const obj of missing) {
      try {
        await this.client.objects.create(obj);
      } catch (err) {
        if (!isAlreadyExists(err))
          return run.fail("MetadataRestore", `${obj.kind} ${obj.metadata?.name}: ${describeError(err)}`);
      }
    }
    return undefined;
  }

  /** Runs an agent Job for each claim of the backup; undefined once every one has succeeded. */
  private async restoreVolumes(
    run: RestoreRun,
    key: Buffer,
    runtime: Runtime,
  ): Promise<ReconcileResult | undefined> {
    const volumes = run.backedUp.volumes ?? [];
    if (volumes.length === 0) return undefined;
    const agents = await this.prepareAgents(run, runtime, key, RESTORE_NAME_LABEL);
    if ("failed" in agents) return agents.failed;
    let done = 0;
    for (const [index, volume] of volumes.entries()) {
      const outcome = await this.runAgent(run, agents, {
        mode: "restore",
        index,
        claim: volume.claim,
        key: volume.key,
        ...(volume.sha256 ? { sha256: volume.sha256 } : {}),
      });
      if (outcome.state === "failed")
        return run.fail("AgentFailed", `claim ${volume.claim}: ${outcome.message}`);
      if (outcome.state === "succeeded") done++;
    }
    if (done < volumes.length) {
      await this.recordRestoreProgress(run, `restored ${done} of ${volumes.length} claims`);
      return requeueAfter(POLL_MS * 5);
    }
    return undefined;
  }

  /** The restore's progress, written when it changed. */
  private async recordRestoreProgress({ obj: restore, status }: RestoreRun, message: string): Promise<void> {
    if (status.message !== message) await this.writeStatus(restore, "RuntimeRestore", { ...status, message });
    status.message = message;
  }

  /** Records the restore Completed, then starts the runtime if the restore asks for it. */
  private async finishRestore(run: RestoreRun, runtime: Runtime): Promise<ReconcileResult> {
    const { obj: restore, backedUp } = run;
    const volumes = backedUp.volumes ?? [];
    await this.end(
      restore,
      "RuntimeRestore",
      run.status,
      "Completed",
      "Completed",
      `restored ${backedUp.metadataObjects ?? 0} objects and ${volumes.length} claims from ${restore.spec.backup}, verified`,
    );
    if (restore.spec.startAfter) {
      await applyObject(this.client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "Runtime",
        metadata: { name: runtime.metadata!.name!, namespace: run.namespace },
        spec: { ...runtime.spec, desiredState: "Running", startRequestedAt: now() },
      } as KubernetesObject);
    }
    return reconcileDone();
  }
}

/** The key a backup is encrypted under: its own (derived), or the tenant's for backups from before. */
function keyOf(status: Status<RuntimeBackup>, tenantKey: Buffer): Buffer {
  return status.keyScope === "Backup" ? backupKey(tenantKey, status.location!) : tenantKey;
}

/** The backup's manifest: what it holds, written last. */
function backupManifest({ namespace, name, runtime, status }: BackupRun, volumes: VolumeRecord[]): Buffer {
  return Buffer.from(
    JSON.stringify({
      runtime: { namespace, name: runtime.metadata!.name, ...runtime.spec },
      backup: name,
      metadataObjects: status.metadataObjects,
      volumes,
      completedAt: now(),
    }),
  );
}
