/**
 * The runtimes monitor (Vasilenko & Kurapati §3.4): evaluates every MonitorRule against the pods, claims
 * and nodes in the informers' caches. Informer events and scheduled re-checks (a cut-off being
 * reached, a probe period passing) say which object to evaluate; each (rule, object) pair fires
 * one alert while its condition holds and resolves it when it ends. Firing alerts are kept in
 * the rules' status, so a new leader does not fire them again.
 */
import {
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  type V1Namespace,
  type V1Pod,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyStatusUnlessGone,
  type ClusterClient,
  Controller,
  type ControllerStats,
  componentCache,
  describeError,
  formatKubeTime,
  type Informer,
  type InformerCache,
  isNotFound,
  objectKey,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  setCondition,
  startInformers,
} from "../kube/index.js";
import { labelSelectorMatches } from "../multicluster/index.js";
import { RUNTIME_LABEL } from "../runtimes/index.js";
import { TENANT_LABEL, TENANTS_API_VERSION } from "../tenants/index.js";
import {
  type Alert,
  MONITOR_LIMITS,
  type MonitoredKind,
  type MonitorRule,
  type MonitorRuleStatus,
} from "./api/monitor-rule.js";
import { evaluateTimed, type MonitoredObject, type Verdict } from "./conditions.js";
import type { MonitorMetrics } from "./metrics.js";
import { type AlertNotification, WebhookNotifier, type WebhookNotifierOptions } from "./notifier.js";
import { Prober, renderEndpointUrl } from "./probe.js";
import { SecretCache } from "./secrets.js";
import { BackgroundTasks } from "./slots.js";

export const MONITOR_COMPONENT = "tenantry-monitor";
export const ALERT_FIRING_REASON = "MonitorAlertFiring";
export const ALERT_RESOLVED_REASON = "MonitorAlertResolved";
export const REMEDIATION_REASON = "MonitorRemediation";
export const REMEDIATION_FAILED_REASON = "MonitorRemediationFailed";

const API_VERSION: Record<MonitoredKind, string> = { Pod: "v1", PersistentVolumeClaim: "v1", Node: "v1" };
const KINDS: readonly MonitoredKind[] = ["Pod", "PersistentVolumeClaim", "Node"];
/** Re-check a little after a deadline so that it has surely passed. */
const RECHECK_MARGIN_MS = 200;

export interface MonitorOptions {
  client: ClusterClient;
  /** The process's shared cache; without it the monitor watches on its own. */
  cache?: InformerCache;
  metrics: MonitorMetrics;
  logger: Logger;
  /** Only rules with these labels (a label selector, e.g. for several monitors on one cluster). */
  ruleSelector?: string;
  /** Endpoint probes in flight at once (default 16). */
  probeConcurrency?: number;
  /** Webhook delivery tuning (capacity, retries, backoff). */
  webhooks?: Omit<Partial<WebhookNotifierOptions>, "secretOf" | "onOutcome" | "logger">;
  /** Objects evaluated at once (default 4). */
  workers?: number;
}

interface ActiveAlert extends Alert {
  rule: string;
  condition: string;
}

export class Monitor {
  private readonly client: ClusterClient;
  private readonly logger: Logger;
  readonly rules: Informer<MonitorRule>;
  private readonly objects: Record<MonitoredKind, Informer<KubernetesObject>>;
  private readonly namespaces: Informer<V1Namespace>;
  private readonly controllers: Record<MonitoredKind, Controller>;
  private readonly statusController: Controller;
  private readonly alerts = new Map<string, ActiveAlert>();
  private readonly prober: Prober;
  private readonly notifier: WebhookNotifier;
  private readonly secrets = new SecretCache((ref) => this.readSecret(ref));
  /** Alert Events being written: 8 at once, at most 10,000 waiting. */
  private readonly eventWrites = new BackgroundTasks(8, 10_000);
  private readonly release: () => Promise<void>;
  private readonly removeRuleHandler: () => void;

  constructor(private readonly options: MonitorOptions) {
    const { client } = options;
    this.client = client;
    this.logger = options.logger.child({ component: "monitor" });
    const { cache, release } = componentCache(options);
    this.release = release;
    this.rules = cache.informer<MonitorRule>({
      apiVersion: TENANTS_API_VERSION,
      kind: "MonitorRule",
      ...(options.ruleSelector ? { labelSelector: options.ruleSelector } : {}),
    });
    this.objects = {
      Pod: cache.informer({ apiVersion: "v1", kind: "Pod" }),
      PersistentVolumeClaim: cache.informer({ apiVersion: "v1", kind: "PersistentVolumeClaim" }),
      Node: cache.informer({ apiVersion: "v1", kind: "Node" }),
    };
    this.namespaces = cache.informer<V1Namespace>({
      apiVersion: "v1",
      kind: "Namespace",
      labelSelector: TENANT_LABEL,
    });
    const workers = options.workers ?? 4;
    this.controllers = Object.fromEntries(
      KINDS.map((kind) => {
        const controller = new Controller({
          name: `monitor-${kind.toLowerCase()}`,
          workers,
          logger: this.logger,
          reconcile: (_key, ctx) => this.evaluate(kind, ctx.ref.namespace, ctx.ref.name),
        });
        controller.watch(this.objects[kind]);
        return [kind, controller];
      }),
    ) as Record<MonitoredKind, Controller>;
    this.statusController = new Controller({
      name: "monitor-rule-status",
      logger: this.logger,
      reconcile: (_key, ctx) => this.writeStatus(ctx.ref.name),
    });
    this.statusController.watch(this.rules);
    this.removeRuleHandler = this.rules.addHandler({
      onAdd: (rule) => this.evaluateAll(rule.spec?.object),
      onUpdate: (oldRule, rule) => {
        if (oldRule.metadata?.generation === rule.metadata?.generation) return;
        this.evaluateAll(rule.spec?.object);
        if (oldRule.spec?.object !== rule.spec?.object) this.evaluateAll(oldRule.spec?.object);
      },
      onDelete: (rule) => this.dropAlertsOf(rule.metadata!.name!),
    });
    this.prober = new Prober({
      ...(options.probeConcurrency ? { concurrency: options.probeConcurrency } : {}),
      onResult: (key) => {
        const [, , namespace, name] = key.split("\n");
        this.controllers.Pod.enqueue(objectKey(client.name, namespace, name!));
      },
      observe: (seconds, ok) =>
        options.metrics.probeDuration.observe({ result: ok ? "ok" : "failed" }, seconds),
      logger: this.logger,
    });
    this.notifier = new WebhookNotifier({
      ...options.webhooks,
      secretOf: (ref) => this.secrets.get(ref),
      onOutcome: (outcome) => options.metrics.notifications.inc({ outcome }),
      logger: this.logger,
    });
  }

  /** Firing alerts, by rule. */
  firing(): ActiveAlert[] {
    return [...this.alerts.values()];
  }

  /** Each kind's evaluations so far (one per object and event or re-check) and what waits. */
  stats(): Record<MonitoredKind, ControllerStats> {
    return Object.fromEntries(KINDS.map((kind) => [kind, this.controllers[kind].stats()])) as Record<
      MonitoredKind,
      ControllerStats
    >;
  }

  async start(): Promise<void> {
    const informers = [
      this.rules,
      this.namespaces,
      ...Object.values(this.objects),
    ] as Informer<KubernetesObject>[];
    await startInformers(informers);
    // What fired under the previous leader is still firing: it must not fire again.
    for (const rule of this.rules.list()) {
      for (const alert of rule.status?.alerts ?? []) {
        const name = rule.metadata!.name!;
        this.alerts.set(alertId(name, alert.kind, alert.namespace, alert.name), {
          ...alert,
          rule: name,
          condition: rule.spec.condition,
        });
      }
    }
    this.options.metrics.useFiring(() => this.alerts.values());
    await this.statusController.start();
    for (const controller of Object.values(this.controllers)) await controller.start();
    this.logger.info({ rules: this.rules.list().length, firing: this.alerts.size }, "monitor started");
  }

  async stop(): Promise<void> {
    this.prober.stop();
    await Promise.all([...Object.values(this.controllers), this.statusController].map((c) => c.stop()));
    this.removeRuleHandler();
    await Promise.all([this.notifier.stop(), this.eventWrites.drain()]);
    await this.release();
  }

  private evaluateAll(kind: MonitoredKind | undefined): void {
    if (!kind) return;
    for (const obj of this.objects[kind].list()) {
      this.controllers[kind].enqueue(
        objectKey(this.client.name, obj.metadata?.namespace, obj.metadata!.name!),
      );
    }
  }

  private dropAlertsOf(rule: string): void {
    for (const [id, alert] of this.alerts) if (alert.rule === rule) this.alerts.delete(id);
  }

  /** Evaluates every rule of `kind` on one object (gone: every alert of it resolves). */
  private async evaluate(
    kind: MonitoredKind,
    namespace: string | undefined,
    name: string,
  ): Promise<ReconcileResult> {
    const obj = this.objects[kind].get(namespace, name) as MonitoredObject | undefined;
    const tenant = namespace
      ? this.namespaces.get(undefined, namespace)?.metadata?.labels?.[TENANT_LABEL]
      : undefined;
    const now = new Date();
    let recheckInMs: number | undefined;
    for (const rule of this.rules.list()) {
      if (rule.spec?.object !== kind) continue;
      const ruleName = rule.metadata!.name!;
      const id = alertId(ruleName, kind, namespace, name);
      const verdict: Verdict =
        obj && this.selects(rule, obj, tenant) ? this.verdictOf(rule, kind, obj, id, now) : { firing: false };
      if (verdict.recheckInMs !== undefined) {
        recheckInMs = Math.min(recheckInMs ?? Number.POSITIVE_INFINITY, verdict.recheckInMs);
      }
      const active = this.alerts.get(id);
      if (verdict.firing && !active) {
        await this.fire(rule, kind, { namespace, name, tenant }, obj!, verdict, now);
      } else if (!verdict.firing && active) {
        await this.resolve(rule, active, obj ? undefined : `the ${kind} is gone`, now);
      }
    }
    return recheckInMs === undefined
      ? reconcileDone()
      : requeueAfter(Math.ceil(recheckInMs) + RECHECK_MARGIN_MS);
  }

  private selects(rule: MonitorRule, obj: MonitoredObject, tenant: string | undefined): boolean {
    if (rule.spec.tenant && rule.spec.tenant !== tenant) return false;
    return !rule.spec.selector || labelSelectorMatches(rule.spec.selector, obj.metadata?.labels ?? {});
  }

  private verdictOf(
    rule: MonitorRule,
    kind: MonitoredKind,
    obj: MonitoredObject,
    id: string,
    now: Date,
  ): Verdict {
    const { condition, probe } = rule.spec;
    if (condition !== "endpoint-probe")
      return evaluateTimed(kind, condition, rule.spec.cutOffMinutes ?? 0, obj, now);
    const pod = obj as V1Pod;
    if (!probe || pod.status?.phase !== "Running" || !pod.status.podIP || pod.metadata?.deletionTimestamp) {
      this.prober.forget(id);
      return { firing: false };
    }
    let url: string;
    try {
      url = renderEndpointUrl(probe.endpointUrl, pod);
    } catch (err) {
      this.logger.warn({ rule: rule.metadata!.name, pod: id, err: describeError(err) }, "cannot probe");
      return { firing: false };
    }
    const startedAt = containersStartedAt(pod);
    const warmUpMs = startedAt ? startedAt.getTime() + probe.initialDelaySeconds * 1000 - now.getTime() : 0;
    if (warmUpMs > 0) return { firing: false, recheckInMs: warmUpMs };
    const periodMs = probe.periodSeconds * 1000;
    const result = this.prober.result(id);
    const age = result ? now.getTime() - result.at.getTime() : Number.POSITIVE_INFINITY;
    // A result for another URL (a new pod IP) says nothing about this one.
    const current = result && result.url === url ? result : undefined;
    if (!current || age >= periodMs) this.prober.request(id, url, probe);
    const recheckInMs = current ? Math.max(0, periodMs - age) : periodMs;
    if (!current || current.ok) return { firing: false, recheckInMs };
    return { firing: true, since: current.at, message: current.message, recheckInMs };
  }

  private async fire(
    rule: MonitorRule,
    kind: MonitoredKind,
    where: { namespace: string | undefined; name: string; tenant: string | undefined },
    obj: MonitoredObject,
    verdict: Verdict,
    now: Date,
  ): Promise<void> {
    const ruleName = rule.metadata!.name!;
    const alert: ActiveAlert = {
      rule: ruleName,
      condition: rule.spec.condition,
      kind,
      ...(where.namespace ? { namespace: where.namespace } : {}),
      name: where.name,
      ...(where.tenant ? { tenant: where.tenant } : {}),
      since: formatKubeTime(verdict.since ?? now),
      firedAt: formatKubeTime(now),
      message: (verdict.message ?? rule.spec.condition).slice(0, 1024),
    };
    this.alerts.set(alertId(ruleName, kind, where.namespace, where.name), alert);
    this.logger.info({ rule: ruleName, kind, ...where, message: alert.message }, "alert firing");
    this.notify(rule, alert, "firing");
    this.recordEventBeside(
      kind,
      obj,
      "Warning",
      ALERT_FIRING_REASON,
      `${ruleName} (${rule.spec.condition}): ${alert.message}`,
    );
    this.statusController.enqueue(objectKey(this.client.name, undefined, ruleName));
    const action = rule.spec.remediation?.action ?? "None";
    if (action !== "None" && kind === "Pod") await this.remediate(rule, action, obj as V1Pod);
  }

  private async resolve(
    rule: MonitorRule,
    alert: ActiveAlert,
    why: string | undefined,
    now: Date,
  ): Promise<void> {
    this.alerts.delete(alertId(alert.rule, alert.kind, alert.namespace, alert.name));
    const message = `${alert.rule} (${alert.condition}): resolved${why ? `, ${why}` : ""}`;
    this.logger.info(
      { rule: alert.rule, kind: alert.kind, namespace: alert.namespace, name: alert.name },
      "alert resolved",
    );
    const involved = { metadata: { name: alert.name, namespace: alert.namespace } } as MonitoredObject;
    const obj =
      (this.objects[alert.kind].get(alert.namespace, alert.name) as MonitoredObject | undefined) ?? involved;
    this.notify(rule, { ...alert, message }, "resolved", now);
    this.recordEventBeside(alert.kind, obj, "Normal", ALERT_RESOLVED_REASON, message);
    this.statusController.enqueue(objectKey(this.client.name, undefined, alert.rule));
  }

  private notify(
    rule: MonitorRule,
    alert: ActiveAlert,
    status: "firing" | "resolved",
    resolvedAt?: Date,
  ): void {
    const webhook = rule.spec.webhook;
    if (!webhook) return;
    const notification: AlertNotification = {
      status,
      rule: alert.rule,
      object: alert.kind,
      condition: alert.condition,
      target: {
        kind: alert.kind,
        ...(alert.namespace ? { namespace: alert.namespace } : {}),
        name: alert.name,
      },
      ...(alert.tenant ? { tenant: alert.tenant } : {}),
      cluster: this.client.name,
      since: alert.since,
      firedAt: alert.firedAt,
      ...(resolvedAt ? { resolvedAt: formatKubeTime(resolvedAt) } : {}),
      message: alert.message,
      ...(rule.spec.remediation?.action && rule.spec.remediation.action !== "None"
        ? { remediation: rule.spec.remediation.action }
        : {}),
    };
    this.notifier.enqueue(
      { url: webhook.url, ...(webhook.secretRef ? { secretRef: webhook.secretRef } : {}) },
      notification,
    );
  }

  /** Deletes the pod (DeletePod), or has its owner replace it (RestartPod); recorded either way. */
  private async remediate(rule: MonitorRule, action: "DeletePod" | "RestartPod", pod: V1Pod): Promise<void> {
    const name = pod.metadata!.name!;
    const namespace = pod.metadata!.namespace!;
    const ruleName = rule.metadata!.name!;
    const record = async (result: "done" | "failed" | "refused", message: string) => {
      this.options.metrics.remediations.inc({ action, result });
      const log = { rule: ruleName, action, pod: `${namespace}/${name}`, result };
      if (result === "done") this.logger.info(log, message);
      else this.logger.warn(log, message);
      await this.recordEvent(
        "Pod",
        pod,
        result === "done" ? "Normal" : "Warning",
        result === "done" ? REMEDIATION_REASON : REMEDIATION_FAILED_REASON,
        `${ruleName}: ${message}`,
      );
    };
    if (action === "RestartPod" && !pod.metadata?.ownerReferences?.some((o) => o.controller)) {
      await record("refused", "RestartPod: not restarted, no controller owns the pod to make a new one");
      return;
    }
    try {
      if (
        action === "DeletePod" &&
        rule.spec.remediation?.removeFinalizers &&
        pod.metadata?.finalizers?.length
      ) {
        await this.client.core.patchNamespacedPod(
          { name, namespace, body: { metadata: { finalizers: null } } },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        );
      }
      // A terminating pod whose finalizers were its last hold is gone already: that is the aim.
      await this.client.core
        .deleteNamespacedPod({
          name,
          namespace,
          ...(action === "DeletePod" ? { gracePeriodSeconds: 0 } : {}),
        })
        .catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
      const runtime = pod.metadata?.labels?.[RUNTIME_LABEL];
      await record(
        "done",
        action === "DeletePod"
          ? `DeletePod: deleted with no grace period${rule.spec.remediation?.removeFinalizers ? " and its finalizers removed" : ""}`
          : `RestartPod: deleted for its owner to replace${runtime ? ` (runtime ${runtime})` : ""}`,
      );
    } catch (err) {
      if (isNotFound(err)) return;
      await record("failed", `${action} failed: ${describeError(err)}`);
    }
  }

  private async writeStatus(ruleName: string): Promise<ReconcileResult> {
    const rule = this.rules.get(undefined, ruleName);
    if (!rule) return reconcileDone();
    const alerts = this.firing()
      .filter((a) => a.rule === ruleName)
      .sort((a, b) => a.firedAt.localeCompare(b.firedAt) || alertOrder(a).localeCompare(alertOrder(b)))
      .map(({ rule: _rule, condition: _condition, ...alert }) => alert);
    const status: MonitorRuleStatus = {
      observedGeneration: rule.metadata?.generation ?? 0,
      firing: alerts.length,
      alerts: alerts.slice(0, MONITOR_LIMITS.maxAlertsInStatus),
      conditions: setCondition(
        rule.status?.conditions,
        { type: "Ready", status: "True", reason: "Evaluating", message: `${alerts.length} alerts firing` },
        new Date(),
      ),
    };
    if (JSON.stringify(status) === JSON.stringify(rule.status)) return reconcileDone();
    await applyStatusUnlessGone(this.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "MonitorRule",
      metadata: { name: ruleName },
      status,
    });
    return reconcileDone();
  }

  /**
   * An alert's Event, written beside the evaluation: a worker waiting on each write would hold
   * back every alert queued behind it (the webhook, queued first, does not wait either).
   */
  private recordEventBeside(...args: Parameters<Monitor["recordEvent"]>): void {
    if (this.eventWrites.run(() => this.recordEvent(...args))) return;
    const [kind, obj, , reason] = args;
    this.logger.warn(
      { kind, name: obj.metadata?.name, reason, waiting: this.eventWrites.size },
      "too many Events waiting to be written: this one is dropped",
    );
  }

  private async recordEvent(
    kind: MonitoredKind,
    obj: MonitoredObject,
    type: "Normal" | "Warning",
    reason: string,
    message: string,
  ): Promise<void> {
    const name = obj.metadata!.name!;
    // Events of cluster-scoped objects (nodes) live in `default`, as the kubelet's do.
    const namespace = obj.metadata?.namespace ?? "default";
    const now = new Date();
    try {
      await this.client.core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${name}.`, namespace },
          involvedObject: {
            apiVersion: API_VERSION[kind],
            kind,
            name,
            ...(obj.metadata?.namespace ? { namespace: obj.metadata.namespace } : {}),
            ...(obj.metadata?.uid ? { uid: obj.metadata.uid } : {}),
          },
          reason,
          message: message.slice(0, 1024),
          type,
          source: { component: MONITOR_COMPONENT },
          reportingComponent: MONITOR_COMPONENT,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (err) {
      this.logger.warn({ err: describeError(err), reason, kind, name }, "could not record an Event");
    }
  }

  private async readSecret(ref: {
    namespace: string;
    name: string;
    key: string;
  }): Promise<Buffer | undefined> {
    try {
      const secret = await this.client.core.readNamespacedSecret({
        namespace: ref.namespace,
        name: ref.name,
      });
      const value = secret.data?.[ref.key];
      return value === undefined ? undefined : Buffer.from(value, "base64");
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}

/** When the pod's containers last (re)started: the latest start of a running container. */
function containersStartedAt(pod: V1Pod): Date | undefined {
  const starts = (pod.status?.containerStatuses ?? [])
    .map((status) => status.state?.running?.startedAt)
    .filter((at): at is Date => at !== undefined)
    .map((at) => new Date(at).getTime());
  return starts.length ? new Date(Math.max(...starts)) : undefined;
}

function alertId(rule: string, kind: string, namespace: string | undefined, name: string): string {
  return `${rule}\n${kind}\n${namespace ?? ""}\n${name}`;
}

const alertOrder = (a: Alert) => `${a.namespace ?? ""}/${a.name}`;
