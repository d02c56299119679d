/**
 * What a BackupPolicy asks of its service's runtimes, looked at every pass (15 s by default):
 *
 * - Schedule: a cron schedule's backup of each runtime (trigger Scheduled) when its next slot after
 *   the runtime's last backup has come; slots missed while tenantry was down make one backup.
 * - Idle: a Running runtime with no request through the proxy (status.lastActivity, else its start)
 *   for `idle.timeoutSeconds` is torn down. Stop: it is backed up (trigger Idle) and, only once that
 *   backup is Completed, stopped; its claims and Secrets stay. Delete: it is stopped first (so the
 *   backup is consistent), then the teardown controller backs it up and removes its claims, Secrets
 *   and ConfigMaps once the backup is verified; its next start restores them.
 * - Retention: completed backups beyond `retention` per runtime are deleted with their objects in
 *   the store (failed ones beyond as many too), except the backup a torn-down runtime restores from.
 *
 * Runtimes that run in another cluster (their service's spec.cluster) are left alone: their claims
 * are there, out of reach of agents of this cluster. The policy's status says whether its schedule
 * can be used (condition Ready), which clusters' runtimes it leaves alone, and when scheduled
 * backups were last made.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyStatus,
  type ClusterClient,
  type Condition,
  describeError,
  findCondition,
  type Informer,
  ignoreNotFound,
  setCondition,
} from "../../kube/index.js";
import {
  fitLabel,
  RUNTIME_START_GATE_ANNOTATION,
  type Runtime,
  type StartGate,
} from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import {
  type BackupPolicy,
  IDLE_TEARDOWN_ANNOTATION,
  RESTORE_FROM_ANNOTATION,
  type RuntimeBackup,
} from "../api/backup.js";
import { S3ObjectStore, type S3Settings } from "../store/s3.js";
import { createIfMissing, patchRuntime, runtimeBackupOf } from "./objects.js";
import { checkSchedule, dueRun, InvalidSchedule } from "./schedule.js";

export interface PolicyControllerOptions {
  client: ClusterClient;
  store: S3Settings;
  logger: Logger;
  /** How often runtimes are looked at (default 15 s). */
  intervalMs?: number;
  policies: Informer<BackupPolicy>;
  runtimes: Informer<Runtime>;
  backups: Informer<RuntimeBackup>;
}

/** When the runtime was last used: its last proxied request, else when it last started. */
export function lastUsed(runtime: Runtime): number | undefined {
  const time = runtime.status?.lastActivity ?? runtime.status?.startedAt;
  return time ? Date.parse(time) : undefined;
}

/** Whether the runtime is idle under the policy at `now`. */
export function isIdle(runtime: Runtime, policy: BackupPolicy, now: number): boolean {
  const idle = policy.spec.idle;
  if (!idle || idle.action === "None" || runtime.status?.phase !== "Running") return false;
  if (runtime.spec.desiredState !== "Running") return false;
  const used = lastUsed(runtime);
  return used !== undefined && now - used >= idle.timeoutSeconds * 1000;
}

/** The cluster a runtime runs in when it is not `home` (its claims are there, out of the agents' reach). */
export function remoteClusterOf(runtime: Runtime, home: string): string | undefined {
  const cluster = runtime.status?.cluster;
  return cluster && cluster !== home ? cluster : undefined;
}

/** Whether the runtime's data lives in a backup now (or is on its way there): nothing to schedule. */
export function isTornDown(runtime: Runtime): boolean {
  const annotations = runtime.metadata?.annotations ?? {};
  return RESTORE_FROM_ANNOTATION in annotations || IDLE_TEARDOWN_ANNOTATION in annotations;
}

/**
 * The backups retention deletes: completed ones beyond the newest `retention`, failed ones beyond
 * the newest `retention` (a failing schedule does not pile them up), never one `keep` names
 * (`<namespace>/<name>`).
 */
export function beyondRetention(
  backups: readonly RuntimeBackup[],
  retention: number,
  keep: ReadonlySet<string> = new Set(),
): RuntimeBackup[] {
  const newestFirst = (phase: string, time: (b: RuntimeBackup) => string) =>
    backups
      .filter((b) => b.status?.phase === phase && !keep.has(`${b.metadata?.namespace}/${b.metadata?.name}`))
      .sort((a, b) => time(b).localeCompare(time(a)))
      .slice(retention);
  return [
    ...newestFirst("Completed", (b) => b.status?.completionTime ?? ""),
    ...newestFirst("Failed", (b) => b.status?.completionTime ?? String(b.metadata?.creationTimestamp ?? "")),
  ];
}

/** `2026-11-26T09:05:00Z` → `202611260905`, for names of scheduled backups. */
const slotName = (slot: Date) => slot.toISOString().slice(0, 16).replace(/[-T:]/g, "");
const created = (obj: KubernetesObject) =>
  obj.metadata?.creationTimestamp ? new Date(String(obj.metadata.creationTimestamp)) : new Date(0);

export class PolicyController {
  private readonly store: S3ObjectStore;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(private readonly options: PolicyControllerOptions) {
    this.store = new S3ObjectStore(options.store);
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .catch((err) => this.options.logger.error({ error: describeError(err) }, "policy pass failed"))
        .finally(() => {
          this.running = undefined;
        });
    }, this.options.intervalMs ?? 15_000);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    this.store.close();
  }

  /** One look at every policy and every runtime with a policy. */
  async pass(now = Date.now()): Promise<void> {
    const policies = new Map<string, BackupPolicy>();
    const scheduled = new Set<string>();
    /** Per service: the other clusters its runtimes run in (left alone, as the policy says). */
    const elsewhere = new Map<string, Set<string>>();
    for (const policy of this.options.policies.list()) {
      policies.set(policy.spec.service, policy);
    }
    const runtimes = this.options.runtimes.list();
    const restoringFrom = new Set<string>();
    for (const r of runtimes) {
      const backup = r.metadata?.annotations?.[RESTORE_FROM_ANNOTATION];
      if (backup) restoringFrom.add(`${r.metadata?.namespace}/${backup}`);
    }
    for (const runtime of runtimes) {
      const policy = policies.get(runtime.spec.service);
      if (!policy || runtime.metadata?.deletionTimestamp) continue;
      const remote = remoteClusterOf(runtime, this.options.client.name);
      if (remote) {
        elsewhere.set(runtime.spec.service, (elsewhere.get(runtime.spec.service) ?? new Set()).add(remote));
        continue;
      }
      const backups = this.options.backups
        .list()
        .filter(
          (b) =>
            b.metadata?.namespace === runtime.metadata?.namespace &&
            b.spec.runtime === runtime.metadata?.name,
        );
      try {
        await this.teardownIfIdle(runtime, policy, backups, now);
        if (await this.scheduleIfDue(runtime, policy, backups, now)) scheduled.add(policy.metadata!.name!);
        await this.applyRetention(backups, policy.spec.retention, restoringFrom);
      } catch (err) {
        this.options.logger.warn(
          { runtime: `${runtime.metadata?.namespace}/${runtime.metadata?.name}`, error: describeError(err) },
          "idle teardown, schedule or retention failed; retried at the next pass",
        );
      }
    }
    for (const policy of policies.values()) {
      const remote = [...(elsewhere.get(policy.spec.service) ?? [])].sort();
      await this.writePolicyStatus(policy, scheduled.has(policy.metadata!.name!), remote, now).catch((err) =>
        this.options.logger.warn(
          { policy: policy.metadata?.name, error: describeError(err) },
          "could not write a backup policy's status",
        ),
      );
    }
  }

  private async writePolicyStatus(
    policy: BackupPolicy,
    scheduledNow: boolean,
    remoteClusters: string[],
    now: number,
  ): Promise<void> {
    const remote = remoteClusters.length
      ? `; runtimes in cluster ${remoteClusters.join(", ")} are neither backed up nor torn down (backups cover the runtimes of cluster ${this.options.client.name} only)`
      : "";
    let ready: { status: "True" | "False"; reason: string; message: string } = {
      status: "True",
      reason: "Valid",
      message: `${policy.spec.schedule ? `backups on schedule "${policy.spec.schedule}" (UTC)` : "no schedule"}${remote}`,
    };
    if (policy.spec.schedule) {
      try {
        checkSchedule(policy.spec.schedule);
      } catch (err) {
        if (!(err instanceof InvalidSchedule)) throw err;
        ready = { status: "False", reason: "InvalidSchedule", message: err.message };
      }
    }
    const status = policy.status ?? {};
    const previous = findCondition(status.conditions as Condition[] | undefined, "Ready");
    const generation = policy.metadata?.generation;
    if (
      !scheduledNow &&
      previous?.status === ready.status &&
      previous.reason === ready.reason &&
      previous.message === ready.message &&
      previous.observedGeneration === generation
    )
      return;
    await applyStatus(this.options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "BackupPolicy",
      metadata: { name: policy.metadata!.name! },
      status: {
        observedGeneration: generation,
        ...(scheduledNow
          ? { lastScheduleTime: new Date(now).toISOString().replace(/\.\d+Z$/, "Z") }
          : status.lastScheduleTime
            ? { lastScheduleTime: status.lastScheduleTime }
            : {}),
        conditions: setCondition(
          status.conditions as Condition[] | undefined,
          { type: "Ready", ...ready, observedGeneration: generation ?? 0 },
          now,
        ),
      },
    } as KubernetesObject & { status: unknown });
  }

  private async createBackup(
    runtime: Runtime,
    name: string,
    trigger: "Idle" | "Scheduled",
    include: BackupPolicy["spec"]["include"],
  ): Promise<void> {
    if (await createIfMissing(this.options.client, runtimeBackupOf(runtime, name, trigger, include)))
      this.options.logger.info({ runtime: runtime.metadata?.name, backup: name, trigger }, "backing up");
  }

  /** A scheduled backup when one is due; whether one was made. */
  private async scheduleIfDue(
    runtime: Runtime,
    policy: BackupPolicy,
    backups: RuntimeBackup[],
    now: number,
  ): Promise<boolean> {
    const schedule = policy.spec.schedule;
    if (!schedule || isTornDown(runtime)) return false;
    const since = new Date(Math.max(created(policy).getTime(), created(runtime).getTime()));
    let slot: Date | undefined;
    try {
      slot = dueRun(schedule, backups, since, new Date(now));
    } catch (err) {
      if (err instanceof InvalidSchedule) return false; // said on the policy's status
      throw err;
    }
    if (!slot) return false;
    // Named by its slot: two passes (or replicas) making the same slot's backup make one.
    const name = fitLabel(`${runtime.metadata!.name}-sched-${slotName(slot)}`);
    await this.createBackup(runtime, name, "Scheduled", policy.spec.include);
    return true;
  }

  private async teardownIfIdle(
    runtime: Runtime,
    policy: BackupPolicy,
    backups: RuntimeBackup[],
    now: number,
  ) {
    if (!isIdle(runtime, policy, now) || isTornDown(runtime)) return;
    const idle = policy.spec.idle!;
    const name = fitLabel(`${runtime.metadata!.name}-idle-${Math.floor(now / 1000)}`);
    if (idle.action === "Delete") {
      // Stopped first, so that the backup holds what the volumes hold at the end; the teardown
      // controller backs it up and removes its objects only once the backup is verified.
      const gate: StartGate = {
        reason: "IdleTeardown",
        message: `no request for ${idle.timeoutSeconds} s: stopped to be backed up (${name}); its volumes are removed once the backup is verified and restored at its next start`,
      };
      await patchRuntime(this.options.client, runtime, {
        annotations: {
          [IDLE_TEARDOWN_ANNOTATION]: name,
          [RUNTIME_START_GATE_ANNOTATION]: JSON.stringify(gate),
        },
        spec: { desiredState: "Stopped" },
      });
      this.options.logger.info(
        { runtime: runtime.metadata?.name, backup: name },
        "runtime idle: tearing it down",
      );
      return;
    }
    const used = lastUsed(runtime)!;
    // The idle backup of this idle period: taken after the last use.
    const idleBackup = backups.find((b) => b.spec.trigger === "Idle" && created(b).getTime() > used);
    if (!idleBackup) return this.createBackup(runtime, name, "Idle", policy.spec.include);
    // Nothing is torn down unless its backup completed and was verified.
    if (idleBackup.status?.phase !== "Completed") return;
    await patchRuntime(this.options.client, runtime, { spec: { desiredState: "Stopped" } });
    this.options.logger.info(
      { runtime: runtime.metadata?.name, backup: idleBackup.metadata?.name },
      "idle runtime backed up and stopped",
    );
  }

  private async applyRetention(
    backups: RuntimeBackup[],
    retention: number,
    keep: ReadonlySet<string>,
  ): Promise<void> {
    for (const old of beyondRetention(backups, retention, keep)) {
      const location = old.status?.location;
      if (location) await this.store.delete((await this.store.list(`${location}/`)).map((o) => o.key));
      await ignoreNotFound(
        this.options.client.objects.delete({
          apiVersion: TENANTS_API_VERSION,
          kind: "RuntimeBackup",
          metadata: { name: old.metadata!.name!, namespace: old.metadata!.namespace! },
        }),
      );
    }
  }
}
