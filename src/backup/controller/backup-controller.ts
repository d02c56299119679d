/**
 * The backup server (Vasilenko & Kurapati, §3.3): RuntimeBackup and RuntimeRestore controllers. A backup
 * writes the runtime's metadata to the store itself and spawns one agent Job per claim in the
 * runtime's namespace that streams the claim's data to the store (encrypted with the tenant's key,
 * verified by reading it back). A restore re-creates missing metadata (the Runtime stays Stopped)
 * and runs agent Jobs that replace each claim's content once every byte is verified. Status is
 * written at every step, and a failure names its reason; nothing is replaced by a failed restore.
 * The restore's steps are in restore-controller.ts, what both share in agent-runs.ts.
 */
import { type KubernetesObject, PatchStrategy, type V1Job } from "@kubernetes/client-node";
import {
  type ClusterClient,
  Controller,
  componentCache,
  describeError,
  type Informer,
  type InformerCache,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  startInformers,
} from "../../kube/index.js";
import { RUNTIME_LABEL, type Runtime } from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { type ArchiveRecord, recordKey } from "../agent/volume.js";
import {
  BACKUP_NAME_LABEL,
  BACKUP_RUNTIME_LABEL,
  type BackupPolicy,
  type RuntimeBackup,
  type RuntimeRestore,
} from "../api/backup.js";
import { backupInformers } from "../informers.js";
import { S3ObjectStore, type S3Settings } from "../store/s3.js";
import type { JobOutcome } from "./agent-jobs.js";
import {
  AgentRuns,
  type AgentRunsOptions,
  keyOf,
  now,
  POLL_MS,
  type Run,
  type Status,
} from "./agent-runs.js";
import { backupLocation, manifestKey, metadataKey, volumeKey } from "./layout.js";
import { collectMetadata, putMetadata } from "./metadata.js";
import { byOwnerOfKind } from "./objects.js";
import { PolicyController } from "./policy-controller.js";
import { RestoreController } from "./restore-controller.js";
import { TeardownController } from "./teardown-controller.js";

export interface BackupControllerOptions extends AgentRunsOptions {
  /** The process's shared cache; without it the controllers watch on their own. */
  cache?: InformerCache;
  /** The object store every backup goes to. */
  store: S3Settings;
  /** How often schedules, idle runtimes and retention are looked at (default 15 s). */
  idleIntervalMs?: number;
}

type VolumeRecord = NonNullable<Status<RuntimeBackup>["volumes"]>[number];

interface BackupRun extends Run<RuntimeBackup> {
  runtime: Runtime;
}

export class BackupControllers {
  readonly backups: Informer<RuntimeBackup>;
  readonly restores: Informer<RuntimeRestore>;
  private readonly jobs: Informer<V1Job>;
  private readonly runtimes: Informer<Runtime>;
  private readonly policies: Informer<BackupPolicy>;
  private readonly backupController: Controller;
  private readonly restoreController: RestoreController;
  private readonly policyController: PolicyController;
  private readonly teardowns: TeardownController;
  private readonly store: S3ObjectStore;
  private readonly client: ClusterClient;
  private readonly runs: AgentRuns;
  private readonly release: () => Promise<void>;

  constructor(options: BackupControllerOptions) {
    this.client = options.client;
    const { cache, release } = componentCache(options);
    this.release = release;
    this.store = new S3ObjectStore(options.store);
    ({ backups: this.backups, restores: this.restores, jobs: this.jobs } = backupInformers(cache));
    this.runtimes = cache.informer<Runtime>({ apiVersion: TENANTS_API_VERSION, kind: "Runtime" });
    this.policies = cache.informer<BackupPolicy>({ apiVersion: TENANTS_API_VERSION, kind: "BackupPolicy" });
    this.runs = new AgentRuns(options, this.store, this.jobs);
    this.backupController = new Controller({
      name: "runtime-backups",
      workers: 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcileBackup(ctx),
    });
    this.backupController.watch(this.backups);
    // By owner reference, not by label: a label value holds 63 characters, a name up to 253.
    this.backupController.watch(this.jobs, byOwnerOfKind("RuntimeBackup"));
    this.restoreController = new RestoreController({
      client: this.client,
      store: this.store,
      runs: this.runs,
      backups: this.backups,
      restores: this.restores,
      jobs: this.jobs,
      logger: options.logger,
    });
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

  private async reconcileBackup(ctx: ReconcileContext): Promise<ReconcileResult> {
    const run = this.runs.openRun(this.backups, "RuntimeBackup", ctx);
    if (!run) return reconcileDone();
    const { namespace, obj: backup } = run;
    const runtime = await this.runs.readRuntime(namespace, backup.spec.runtime);
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
      key = keyOf(status, await this.runs.tenantKey(runtime.spec.tenant, true));
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
    await this.runs.begin(backup, "RuntimeBackup", status, {
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
    await this.runs.writeStatus(run.obj, "RuntimeBackup", status);
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
    await this.runs.writeStatus(backup, "RuntimeBackup", status);
  }

  /** Runs an agent Job for each claim not yet archived; undefined once every archive is recorded. */
  private async backUpVolumes(run: BackupRun, key: Buffer): Promise<ReconcileResult | undefined> {
    const volumes = run.status.volumes ?? [];
    const pending = volumes.filter((v) => v.sha256 === undefined);
    if (pending.length === 0) return undefined;
    const agents = await this.runs.prepareAgents(run, run.runtime, key, BACKUP_NAME_LABEL);
    if ("failed" in agents) return agents.failed;
    for (const volume of pending) {
      const outcome = await this.runs.runAgent(run, agents, {
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
    await this.runs.writeStatus(run.obj, "RuntimeBackup", run.status);
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
    return this.runs.end(
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
