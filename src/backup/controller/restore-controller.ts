/**
 * The RuntimeRestore controller: a restore re-creates missing metadata (the Runtime stays Stopped)
 * and runs agent Jobs that replace each claim's content once every byte is verified. Status is
 * written at every step, and a failure names its reason; nothing is replaced by a failed restore.
 */
import type { KubernetesObject, V1Job } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  type ClusterClient,
  Controller,
  describeError,
  type Informer,
  isAlreadyExists,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
} from "../../kube/index.js";
import { type Runtime, startGateOf } from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import {
  RESTORE_FROM_ANNOTATION,
  RESTORE_NAME_LABEL,
  type RuntimeBackup,
  type RuntimeRestore,
} from "../api/backup.js";
import type { S3ObjectStore } from "../store/s3.js";
import { type AgentRuns, keyOf, now, POLL_MS, type Run, type Status } from "./agent-runs.js";
import { metadataKey } from "./layout.js";
import { getMetadata } from "./metadata.js";
import { byOwnerOfKind } from "./objects.js";

export interface RestoreControllerOptions {
  client: ClusterClient;
  store: S3ObjectStore;
  runs: AgentRuns;
  backups: Informer<RuntimeBackup>;
  restores: Informer<RuntimeRestore>;
  jobs: Informer<V1Job>;
  logger: Logger;
}

interface RestoreRun extends Run<RuntimeRestore> {
  backup: RuntimeBackup;
  /** The backup's status: Completed. */
  backedUp: Status<RuntimeBackup>;
}

export class RestoreController {
  private readonly controller: Controller;
  private readonly client: ClusterClient;
  private readonly store: S3ObjectStore;
  private readonly runs: AgentRuns;

  constructor(private readonly options: RestoreControllerOptions) {
    this.client = options.client;
    this.store = options.store;
    this.runs = options.runs;
    this.controller = new Controller({
      name: "runtime-restores",
      workers: 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(options.restores);
    // By owner reference, not by label: a label value holds 63 characters, a name up to 253.
    this.controller.watch(options.jobs, byOwnerOfKind("RuntimeRestore"));
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const run = this.runs.openRun(this.options.restores, "RuntimeRestore", ctx);
    if (!run) return reconcileDone();
    const { namespace, obj: restore } = run;
    const backup = this.options.backups.get(namespace, restore.spec.backup);
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
      await this.runs.begin(restore, "RuntimeRestore", status, { message: "restoring" });
    let key: Buffer;
    try {
      key = keyOf(backedUp, await this.runs.tenantKey(tenant, false));
    } catch (err) {
      return run.fail("KeyUnavailable", `the key of tenant ${tenant} cannot be read: ${describeError(err)}`);
    }
    let runtime = await this.runs.readRuntime(namespace, backup.spec.runtime);
    const inTheWay = await this.runtimeInTheWay(run, runtime);
    if (inTheWay) return inTheWay;
    if (backedUp.metadataObjects !== undefined) {
      const failed = await this.restoreMetadata(run, key, runtime);
      if (failed) return failed;
      runtime ??= await this.runs.readRuntime(namespace, backup.spec.runtime);
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
    const agents = await this.runs.prepareAgents(run, runtime, key, RESTORE_NAME_LABEL);
    if ("failed" in agents) return agents.failed;
    let done = 0;
    for (const [index, volume] of volumes.entries()) {
      const outcome = await this.runs.runAgent(run, agents, {
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
    if (status.message !== message)
      await this.runs.writeStatus(restore, "RuntimeRestore", { ...status, message });
    status.message = message;
  }

  /** Records the restore Completed, then starts the runtime if the restore asks for it. */
  private async finishRestore(run: RestoreRun, runtime: Runtime): Promise<ReconcileResult> {
    const { obj: restore, backedUp } = run;
    const volumes = backedUp.volumes ?? [];
    await this.runs.end(
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
