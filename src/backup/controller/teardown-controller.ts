/**
 * Idle teardown with action Delete, after the policy controller stopped the runtime and named its
 * Idle backup (annotation tenantry.dev/idle-teardown), and the restore at its next start:
 *
 * 1. Stopped: the Idle backup is taken (metadata and volumes, whatever the policy includes).
 * 2. Completed (stored and verified): the Runtime is marked with the backup it restores from
 *    (tenantry.dev/restore-from) before anything goes, then its claims, Secrets and ConfigMaps are
 *    deleted. The Runtime stays, Stopped, its start gate saying why. A failed backup removes
 *    nothing: the runtime stays stopped with its data, and its gate says why.
 * 3. Started again (desiredState Running): its start gate holds the runtime controller while a
 *    RuntimeRestore of that backup puts the objects and the volumes' data back; the gate carries
 *    the restore's progress (shown in the start's Volumes step), then goes, and the runtime starts.
 *    A failed restore fails that start with the reason; the backup stays, and the next start
 *    tries again.
 *
 * A runtime started again before its objects were removed simply starts: its gate goes.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  type ClusterClient,
  Controller,
  type Informer,
  ignoreNotFound,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
} from "../../kube/index.js";
import {
  fitLabel,
  RUNTIME_LABEL,
  RUNTIME_START_GATE_ANNOTATION,
  type Runtime,
  type StartGate,
  startGateOf,
} from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import {
  BACKUP_RUNTIME_LABEL,
  IDLE_TEARDOWN_ANNOTATION,
  RESTORE_FROM_ANNOTATION,
  type RuntimeBackup,
  type RuntimeRestore,
} from "../api/backup.js";
import { byLabel, createIfMissing, patchRuntime, runtimeBackupOf } from "./objects.js";
import { isFinished } from "./schedule.js";

export interface TeardownControllerOptions {
  client: ClusterClient;
  runtimes: Informer<Runtime>;
  backups: Informer<RuntimeBackup>;
  restores: Informer<RuntimeRestore>;
  logger: Logger;
}

/** What a teardown removes, and a restore puts back: the runtime's own kept objects. */
const TORN_DOWN_KINDS = [
  { kind: "PersistentVolumeClaim", list: "listNamespacedPersistentVolumeClaim" },
  { kind: "Secret", list: "listNamespacedSecret" },
  { kind: "ConfigMap", list: "listNamespacedConfigMap" },
] as const;

const WAIT_MS = 2000;

/** The RuntimeRestore of one start (a generation) of a torn-down runtime. */
export const restoreNameOf = (runtime: Runtime) =>
  fitLabel(`${runtime.metadata!.name}-restore-${runtime.metadata?.generation ?? 0}`);

export class TeardownController {
  private readonly controller: Controller;
  private readonly client: ClusterClient;

  constructor(private readonly options: TeardownControllerOptions) {
    this.client = options.client;
    this.controller = new Controller({
      name: "runtime-teardowns",
      workers: 2,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(options.runtimes);
    this.controller.watch(options.backups, byLabel(BACKUP_RUNTIME_LABEL));
    this.controller.watch(options.restores, byLabel(BACKUP_RUNTIME_LABEL));
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const runtime = this.options.runtimes.get(ctx.ref.namespace, ctx.ref.name);
    if (!runtime || runtime.metadata?.deletionTimestamp) return reconcileDone();
    const annotations = runtime.metadata?.annotations ?? {};
    const restoreFrom = annotations[RESTORE_FROM_ANNOTATION];
    if (restoreFrom) {
      return runtime.spec.desiredState === "Running"
        ? this.restoreBeforeStart(runtime, restoreFrom)
        : this.removeObjects(runtime, restoreFrom);
    }
    const idleBackup = annotations[IDLE_TEARDOWN_ANNOTATION];
    if (idleBackup) return this.backUpStopped(runtime, idleBackup);
    return reconcileDone();
  }

  /** Step 1 and the turn to step 2: back up the stopped runtime; mark it once the backup is verified. */
  private async backUpStopped(runtime: Runtime, name: string): Promise<ReconcileResult> {
    if (runtime.spec.desiredState === "Running") {
      // Started again before anything was removed: its data is all there.
      await this.annotate(runtime, {
        [IDLE_TEARDOWN_ANNOTATION]: null,
        [RUNTIME_START_GATE_ANNOTATION]: null,
      });
      return reconcileDone();
    }
    if (runtime.status?.phase !== "Stopped") return reconcileDone();
    const backup = this.options.backups.get(runtime.metadata!.namespace, name);
    if (!backup) {
      // A restore needs both: the objects to create again and the data to put in them.
      await createIfMissing(
        this.client,
        runtimeBackupOf(runtime, name, "Idle", { metadata: true, volumes: true }),
      );
      return reconcileDone();
    }
    const phase = backup.status?.phase;
    if (phase === "Failed") {
      return this.gate(runtime, {
        reason: "IdleBackupFailed",
        message: `stopped while idle, but its backup ${name} failed (${backup.status?.reason}: ${backup.status?.message}): its volumes were kept, and its next start resumes with them`,
      });
    }
    if (phase !== "Completed") return reconcileDone();
    // Marked before anything goes: whatever happens next, the next start restores from it.
    await this.annotate(runtime, {
      [RESTORE_FROM_ANNOTATION]: name,
      [IDLE_TEARDOWN_ANNOTATION]: null,
      [RUNTIME_START_GATE_ANNOTATION]: JSON.stringify({
        reason: "IdleTornDown",
        message: `torn down while idle: backed up to ${name} (verified), its volumes, Secrets and ConfigMaps removed; its next start restores them`,
      } satisfies StartGate),
    });
    this.options.logger.info(
      { runtime: runtime.metadata?.name, backup: name },
      "idle runtime backed up; removing its objects",
    );
    return reconcileDone();
  }

  /** Step 2: the stopped runtime's claims, Secrets and ConfigMaps go (its backup is verified). */
  private async removeObjects(runtime: Runtime, backupName: string): Promise<ReconcileResult> {
    if (runtime.status?.phase !== "Stopped") return reconcileDone();
    const backup = this.options.backups.get(runtime.metadata!.namespace, backupName);
    // Nothing is removed unless its backup completed and was verified.
    if (backup?.status?.phase !== "Completed") return reconcileDone();
    if (this.restoresOf(runtime).some((r) => !isFinished(r))) return requeueAfter(WAIT_MS);
    const namespace = runtime.metadata!.namespace!;
    const labelSelector = `${RUNTIME_LABEL}=${runtime.metadata!.name}`;
    for (const { kind, list } of TORN_DOWN_KINDS) {
      const found = await this.client.core[list]({ namespace, labelSelector });
      for (const item of found.items as KubernetesObject[]) {
        if (item.metadata?.deletionTimestamp) continue;
        await ignoreNotFound(
          this.client.objects.delete({
            apiVersion: "v1",
            kind,
            metadata: { name: item.metadata!.name!, namespace },
          }),
        );
      }
    }
    return reconcileDone();
  }

  /** Step 3: restore, reporting through the start gate, then let the start go on. */
  private async restoreBeforeStart(runtime: Runtime, backupName: string): Promise<ReconcileResult> {
    const namespace = runtime.metadata!.namespace!;
    const name = restoreNameOf(runtime);
    const restore = this.options.restores.get(namespace, name);
    if (!restore && !this.options.backups.get(namespace, backupName)) {
      // Deleted by hand: no start can bring the data back; only a person may decide to go on without.
      return this.gate(runtime, {
        reason: "BackupNotFound",
        message: `its data is in backup ${backupName}, which no longer exists: remove its annotations ${RESTORE_FROM_ANNOTATION} and ${RUNTIME_START_GATE_ANNOTATION} to start it without its data`,
        failedGeneration: runtime.metadata?.generation ?? 0,
      });
    }
    if (!restore) {
      // Claims still going from the teardown would be found "already there" and never bind.
      const claims = await this.client.core.listNamespacedPersistentVolumeClaim({
        namespace,
        labelSelector: `${RUNTIME_LABEL}=${runtime.metadata!.name}`,
      });
      if (claims.items.some((c) => c.metadata?.deletionTimestamp)) {
        await this.gate(runtime, {
          reason: "Restoring",
          message: `waiting for the claims of the torn-down runtime to be gone before restoring from ${backupName}`,
        });
        return requeueAfter(WAIT_MS);
      }
      await createIfMissing(this.client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "RuntimeRestore",
        metadata: { name, namespace, labels: { [BACKUP_RUNTIME_LABEL]: runtime.metadata!.name! } },
        spec: { backup: backupName, startAfter: false },
      } as KubernetesObject);
      return this.gate(runtime, { reason: "Restoring", message: `restoring from backup ${backupName}` });
    }
    const phase = restore.status?.phase;
    if (phase === "Completed") {
      this.options.logger.info(
        { runtime: runtime.metadata?.name, backup: backupName },
        "torn-down runtime restored; starting it",
      );
      await this.annotate(runtime, {
        [RESTORE_FROM_ANNOTATION]: null,
        [RUNTIME_START_GATE_ANNOTATION]: null,
      });
      return reconcileDone();
    }
    if (phase === "Failed") {
      return this.gate(runtime, {
        reason: "RestoreFailed",
        message: `restoring from backup ${backupName} failed (${restore.status?.reason}): ${restore.status?.message}; the backup is kept, start it again to retry`,
        failedGeneration: runtime.metadata?.generation ?? 0,
      });
    }
    return this.gate(runtime, {
      reason: "Restoring",
      message: `restoring from backup ${backupName}: ${restore.status?.message ?? "waiting"}`,
    });
  }

  private restoresOf(runtime: Runtime): RuntimeRestore[] {
    return this.options.restores
      .list()
      .filter(
        (r) =>
          r.metadata?.namespace === runtime.metadata?.namespace &&
          r.metadata?.labels?.[BACKUP_RUNTIME_LABEL] === runtime.metadata?.name,
      );
  }

  /** Sets the runtime's start gate when it says something new. */
  private async gate(runtime: Runtime, gate: StartGate): Promise<ReconcileResult> {
    const current = startGateOf(runtime);
    if (
      current?.reason !== gate.reason ||
      current.message !== gate.message ||
      current.failedGeneration !== gate.failedGeneration
    )
      await this.annotate(runtime, { [RUNTIME_START_GATE_ANNOTATION]: JSON.stringify(gate) });
    return reconcileDone();
  }

  private annotate(runtime: Runtime, annotations: Record<string, string | null>): Promise<void> {
    return patchRuntime(this.client, runtime, { annotations });
  }
}
