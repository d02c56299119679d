/**
 * Idle teardown and retention, per BackupPolicy: a Running runtime of the policy's service with no
 * request through the proxy (status.lastActivity, else its start) for `idle.timeoutSeconds` is
 * backed up (trigger Idle) and, only once that backup is Completed — stored and verified — stopped
 * (action Stop: its claims and secrets stay). Completed backups beyond `retention` per runtime are
 * deleted with their objects in the store.
 */
import { type KubernetesObject, PatchStrategy } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  type ClusterClient,
  describeError,
  Informer,
  isAlreadyExists,
  isNotFound,
  startInformers,
  stopInformers,
} from "../../kube/index.js";
import type { Runtime } from "../../runtimes/index.js";
import { fitLabel } from "../../runtimes/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { BACKUP_RUNTIME_LABEL, type BackupPolicy, type RuntimeBackup } from "../api/backup.js";
import { S3ObjectStore, type S3Settings } from "../store/s3.js";

export interface IdleControllerOptions {
  client: ClusterClient;
  store: S3Settings;
  logger: Logger;
  /** How often runtimes are looked at (default 15 s). */
  intervalMs?: number;
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

/** The backups beyond the newest `retention` Completed ones (failed ones are kept for their reason). */
export function beyondRetention(backups: RuntimeBackup[], retention: number): RuntimeBackup[] {
  const completed = backups
    .filter((b) => b.status?.phase === "Completed")
    .sort((a, b) => (b.status?.completionTime ?? "").localeCompare(a.status?.completionTime ?? ""));
  return completed.slice(retention);
}

export class IdleController {
  private readonly policies: Informer<BackupPolicy>;
  private readonly runtimes: Informer<Runtime>;
  private readonly store: S3ObjectStore;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(private readonly options: IdleControllerOptions) {
    this.policies = Informer.forResource<BackupPolicy>(options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "BackupPolicy",
    });
    this.runtimes = Informer.forResource<Runtime>(options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "Runtime",
    });
    this.store = new S3ObjectStore(options.store);
  }

  async start(): Promise<void> {
    await startInformers([this.policies, this.runtimes] as unknown as Informer<KubernetesObject>[]);
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .catch((err) => this.options.logger.error({ error: describeError(err) }, "idle pass failed"))
        .finally(() => {
          this.running = undefined;
        });
    }, this.options.intervalMs ?? 15_000);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
    await stopInformers([this.policies, this.runtimes] as unknown as Informer<KubernetesObject>[]);
    this.store.close();
  }

  /** One look at every runtime with a policy. */
  async pass(now = Date.now()): Promise<void> {
    const policies = new Map(this.policies.list().map((p) => [p.spec.service, p]));
    for (const runtime of this.runtimes.list()) {
      const policy = policies.get(runtime.spec.service);
      if (!policy) continue;
      const backups = this.options.backups
        .list()
        .filter(
          (b) =>
            b.metadata?.namespace === runtime.metadata?.namespace &&
            b.spec.runtime === runtime.metadata?.name,
        );
      try {
        await this.teardownIfIdle(runtime, policy, backups, now);
        await this.applyRetention(backups, policy.spec.retention);
      } catch (err) {
        this.options.logger.warn(
          { runtime: `${runtime.metadata?.namespace}/${runtime.metadata?.name}`, error: describeError(err) },
          "idle teardown or retention failed; retried at the next pass",
        );
      }
    }
  }

  private async teardownIfIdle(
    runtime: Runtime,
    policy: BackupPolicy,
    backups: RuntimeBackup[],
    now: number,
  ) {
    if (!isIdle(runtime, policy, now)) return;
    const used = lastUsed(runtime)!;
    // The idle backup of this idle period: taken after the last use.
    const idleBackup = backups.find(
      (b) => b.spec.trigger === "Idle" && Date.parse(String(b.metadata?.creationTimestamp ?? 0)) > used,
    );
    if (!idleBackup) {
      const name = fitLabel(`${runtime.metadata!.name}-idle-${Math.floor(now / 1000)}`);
      try {
        await this.options.client.objects.create({
          apiVersion: TENANTS_API_VERSION,
          kind: "RuntimeBackup",
          metadata: {
            name,
            namespace: runtime.metadata!.namespace!,
            labels: { [BACKUP_RUNTIME_LABEL]: runtime.metadata!.name! },
          },
          spec: {
            runtime: runtime.metadata!.name!,
            trigger: "Idle",
            ...(policy.spec.include ? { include: policy.spec.include } : {}),
          },
        } as KubernetesObject);
        this.options.logger.info(
          { runtime: runtime.metadata?.name, backup: name },
          "runtime idle: backing it up",
        );
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      return;
    }
    // Nothing is torn down unless its backup completed and was verified.
    if (idleBackup.status?.phase !== "Completed") return;
    await this.options.client.objects.patch(
      {
        apiVersion: TENANTS_API_VERSION,
        kind: "Runtime",
        metadata: { name: runtime.metadata!.name!, namespace: runtime.metadata!.namespace! },
        spec: { desiredState: "Stopped" },
      } as KubernetesObject,
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    this.options.logger.info(
      { runtime: runtime.metadata?.name, backup: idleBackup.metadata?.name },
      "idle runtime backed up and stopped",
    );
  }

  private async applyRetention(backups: RuntimeBackup[], retention: number): Promise<void> {
    for (const old of beyondRetention(backups, retention)) {
      const location = old.status?.location;
      if (location) await this.store.delete((await this.store.list(`${location}/`)).map((o) => o.key));
      try {
        await this.options.client.objects.delete({
          apiVersion: TENANTS_API_VERSION,
          kind: "RuntimeBackup",
          metadata: { name: old.metadata!.name!, namespace: old.metadata!.namespace! },
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }
}
