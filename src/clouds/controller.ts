/**
 * The logical cloud controller: makes every cluster a LogicalCloud selects hold what the cloud
 * says (instantiate, update, auto-join) and removes exactly what it made from clusters it no
 * longer selects (terminate, rollback, a label removed, a cluster unregistered).
 *
 * Level-based: each reconcile computes, from the LogicalCloud, the registry and the status, which
 * clusters should hold the cloud, configures those (skipping clusters whose last configuration
 * is current) and cleans the others, all at once. During a first instantiation with the default
 * `Rollback` policy, a cluster that fails stops the others and the next reconcile removes the
 * cloud everywhere; with `Keep`, or once the cloud has reached every cluster, a failing cluster
 * is reported and retried with backoff until it converges or `stop` is asked.
 */
import { createHash } from "node:crypto";
import { type KubernetesObject, VersionApi } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type ClusterRegistry, ClusterUnavailable, providerOf } from "../clusters/index.js";
import {
  certificateDetails,
  classifyExpiry,
  DEFAULT_MAX_EXPIRATION_SECONDS,
  signCertificateRequest,
} from "../identity/index.js";
import {
  addFinalizer,
  applyObject,
  applyStatusUnlessGone,
  type ClusterClient,
  type Condition,
  Controller,
  describeError,
  formatKubeTime,
  ignoreNotFound,
  isNotFound,
  isTransportError,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  removeFinalizer,
  requeueAfter,
  resourceVersionOf,
  sameStoredJson,
  setCondition,
  statusCode,
} from "../kube/index.js";
import { createCertificateRequest } from "../pki/index.js";
import type {
  ActionRecord,
  CloudState,
  ClusterEntry,
  DeployedState,
  Lifecycle,
  LogicalCloud,
  LogicalCloudStatus,
  LogicalCloudUser,
  ResourceRef,
} from "./api/logical-cloud.js";
import { PROJECT_NAMESPACE_PREFIX } from "./api/project.js";
import {
  type CredentialData,
  certificateEntry,
  credentialsSecret,
  credentialsSecretName,
  decodeSecret,
  keyEntry,
  requestEntry,
} from "./credentials.js";
import type { CloudInformers } from "./informers.js";
import {
  cloudUsers,
  desiredObjects,
  LOGICAL_CLOUD_UID_LABEL,
  levelOf,
  MANAGED_KINDS,
  projectOfNamespace,
  refOf,
  sameObject,
} from "./plan.js";
import { type Selection, selectClusters } from "./selection.js";

/** On a LogicalCloud: its clusters are cleaned up before it goes. */
export const CLOUD_FINALIZER = "tenantry.dev/logical-cloud";
/** On a registered Cluster a logical cloud configured: removing it waits for the clean-up there. */
export const CLUSTER_FINALIZER = "tenantry.dev/logical-clouds";
/** Users' certificates last 30 days (the approval policy's maximum); renewed when a fifth is left. */
export const CERTIFICATE_SECONDS = DEFAULT_MAX_EXPIRATION_SECONDS;
const MAX_ACTIONS = 32;

export interface LogicalCloudControllerOptions {
  client: ClusterClient;
  registry: ClusterRegistry;
  informers: CloudInformers;
  logger: Logger;
  workers?: number;
  /** How often a configured cloud is applied again everywhere (drift, renewals). Default 5 min. */
  resyncMs?: number;
  /** Per cluster, how long to wait for a certificate to be signed. Default 30 s. */
  signTimeoutMs?: number;
  /** Longest wait between retries of a failing cluster. Default 30 s. */
  maxRetryDelayMs?: number;
}

/** A cluster's answer that retrying will not change by itself (a namespace taken, a refusal). */
class Refusal extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** A step of configuring a cluster that failed, with what it was doing. */
class StepError extends Error {
  constructor(
    step: string,
    readonly original: unknown,
  ) {
    super(`${step}: ${describeError(original)}`);
  }
}

interface Outcome {
  entry: ClusterEntry;
  /** New certificates signed by this cluster, by user. */
  certificates?: Record<string, string>;
  /** Whether it asks to be looked at again soon (failed, or still being removed). */
  retry: boolean;
  /** Not tried this time: its backoff has not passed (or retries are stopped). */
  skipped?: boolean;
}

/** What a reconcile works from: the cloud, its status as this controller knows it, and which clusters should hold it. */
interface Plan {
  cloud: LogicalCloud;
  uid: string;
  project: string;
  status: LogicalCloudStatus;
  lifecycle: Lifecycle | undefined;
  deleting: boolean;
  /** Whether the cloud should be on its clusters: an action other than Terminate, not rolled back. */
  wantUp: boolean;
  /** A first instantiation with the Rollback policy: a failing cluster has the cloud removed everywhere. */
  rollbackArmed: boolean;
  /** `stop` was asked: failing clusters are not tried again. */
  stopped: boolean;
  /** The clusters that should hold the cloud. */
  targets: Map<string, Selection>;
  /** What is wrong with the cloud's cluster references, for its message. */
  problems: string[];
  /** The status's entries by cluster, with the pending ones once they are recorded. */
  previous: Map<string, ClusterEntry>;
  /** The clusters to configure or clean up: the targets and those that may still hold something. */
  involved: string[];
}

async function step<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Refusal || err instanceof StepError) throw err;
    throw new StepError(what, err);
  }
}

function digestOf(value: unknown): string {
  return createHash("sha256").update(JSON.stringify(value)).digest("base64url").slice(0, 22);
}

function describeObject(o: {
  kind?: string;
  name?: string;
  namespace?: string;
  metadata?: { name?: string; namespace?: string };
}) {
  const name = o.name ?? o.metadata?.name;
  const ns = o.namespace ?? o.metadata?.namespace;
  return `${o.kind} ${ns ? `${ns}/` : ""}${name}`;
}

/** Each user's certificate for the cluster as the status lists it: newly signed, or the one kept. */
function certificateRefs(
  cluster: string,
  users: LogicalCloudUser[],
  certificates: Record<string, string>,
  data: CredentialData,
): ClusterEntry["certificates"] {
  return users.map((u) => ({
    user: u.userName,
    notAfter: formatKubeTime(
      certificateDetails(certificates[u.userName] ?? data[certificateEntry(u.userName, cluster)]!).notAfter,
    ),
  }));
}

/**
 * DCM's cloud state, true for every cluster: the last action's once every cluster got there (all
 * selected ones Ready, or all Removed), until then — and after a failure — the state before;
 * the Stopped states once `stop` was asked.
 */
export function cloudState(
  cloud: LogicalCloud,
  before: CloudState | undefined,
  deployed: DeployedState | undefined,
  deleting: boolean,
  stopped: boolean,
): CloudState {
  const lifecycle = cloud.spec.lifecycle;
  if (!lifecycle && !deleting) return "Created";
  if (deleting || lifecycle?.action === "Terminate") {
    if (deployed === "Terminated") return "Terminated";
    return stopped ? "TerminateStopped" : (before ?? "Created");
  }
  if (stopped) return "InstantiateStopped";
  if (deployed === "Instantiated") return lifecycle!.action === "Update" ? "Updated" : "Instantiated";
  return before ?? "Created";
}

/** The actions with the current one recorded (first when taken up) as far as it got. */
export function recordAction(
  actions: ActionRecord[],
  cloud: LogicalCloud,
  state: CloudState,
  deployed: DeployedState | undefined,
  now: number,
): ActionRecord[] {
  const lifecycle = cloud.spec.lifecycle;
  if (!lifecycle) return actions.slice(-MAX_ACTIONS);
  const at = actions.findIndex((a) => a.instance === lifecycle.instance);
  const record: ActionRecord = {
    action: lifecycle.action,
    state,
    ...(deployed ? { deployedStatus: deployed } : {}),
    instance: lifecycle.instance,
    time: actions[at]?.time ?? formatKubeTime(now),
    revision: actions[at]?.revision ?? cloud.metadata?.generation ?? 0,
  };
  const next = at < 0 ? [...actions, record] : actions.map((a, i) => (i === at ? record : a));
  return next.slice(-MAX_ACTIONS);
}

/** What the status says of the action: its message, and which instance settled, was rolled back and why. */
interface Progress {
  message: string;
  failure: string | undefined;
  rolledBackInstance: string | undefined;
  settledInstance: string | undefined;
}

/** The action's progress from what the target clusters came to, and from the status before. */
function progressOf(
  plan: Plan,
  entries: ClusterEntry[],
  byCluster: Map<string, ClusterEntry>,
  failed: ClusterEntry[],
): Progress {
  const { status, lifecycle, deleting, wantUp, rollbackArmed, stopped, targets, problems } = plan;
  let rolledBackInstance = status.rolledBackInstance;
  let settledInstance = status.settledInstance;
  // Why the instantiation that was rolled back failed: kept apart, so every message is made afresh.
  let failure = status.failure;
  let message: string;
  if (rollbackArmed && failed.length) {
    rolledBackInstance = lifecycle!.instance;
    failure = failed.map((e) => `cluster "${e.cluster}": ${e.message}`).join("; ");
    message = `instantiation failed and is being rolled back everywhere: ${failure}`;
  } else if (wantUp && [...targets.keys()].every((c) => byCluster.get(c)?.state === "Ready")) {
    settledInstance = lifecycle!.instance;
    failure = undefined;
    message = targets.size
      ? `configured on ${[...targets.keys()].join(", ")}`
      : "no cluster is selected: clusters matching its references join when registered or labelled";
  } else if (wantUp) {
    failure = undefined;
    const pendingNames = [...targets.keys()].filter(
      (c) => byCluster.get(c)?.state !== "Ready" && byCluster.get(c)?.state !== "Failed",
    );
    message = [
      failed.length
        ? `failed on ${failed.map((e) => `"${e.cluster}" (${e.reason}: ${e.message})`).join(", ")}${stopped ? "; retries stopped" : "; retrying"}`
        : "",
      pendingNames.length ? `configuring ${pendingNames.join(", ")}` : "",
    ]
      .filter(Boolean)
      .join("; ");
  } else {
    const left = entries.filter((e) => e.state !== "Removed");
    const rolledBack =
      !deleting && lifecycle && rolledBackInstance === lifecycle.instance && lifecycle.action !== "Terminate";
    const removing = `removing from ${left.map((e) => `"${e.cluster}"${e.message ? ` (${e.message})` : ""}`).join(", ")}`;
    if (rolledBack) {
      message = left.length
        ? `instantiation failed (${failure ?? "a cluster failed"}) and is being rolled back: ${removing}`
        : `instantiation failed (${failure ?? "a cluster failed"}) and was rolled back everywhere`;
    } else {
      failure = undefined;
      message = left.length
        ? removing
        : lifecycle
          ? "removed from every cluster"
          : "created; not instantiated";
    }
  }
  if (problems.length) message = `${message}; ${problems.join("; ")}`;
  return { message, failure, rolledBackInstance, settledInstance };
}

export class LogicalCloudController {
  private readonly controller: Controller;
  /** Releases registered Clusters being removed once no logical cloud holds anything there. */
  private readonly releaser: Controller;
  /** What was last applied to each (cloud, cluster), so an unchanged cluster costs no request. */
  private readonly applied = new Map<string, { digest: string; at: number }>();
  /** Per (cloud, cluster): how long to wait before trying a failing cluster again, and until when. */
  private readonly backoff = new Map<string, { delayMs: number; notBefore: number }>();
  /** The status this controller last wrote per cloud, with the resourceVersion it got. */
  private readonly written = new Map<string, { resourceVersion: bigint; status: LogicalCloudStatus }>();
  private readonly resyncMs: number;
  private readonly signTimeoutMs: number;
  private readonly maxRetryDelayMs: number;

  constructor(private readonly options: LogicalCloudControllerOptions) {
    this.resyncMs = options.resyncMs ?? 300_000;
    this.signTimeoutMs = options.signTimeoutMs ?? 30_000;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    const { informers, registry } = options;
    this.controller = new Controller({
      name: "logical-clouds",
      workers: options.workers ?? 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(informers.clouds);
    this.controller.watch(informers.credentials, (secret, cluster) => {
      const owner = secret.metadata?.ownerReferences?.find((o) => o.kind === "LogicalCloud");
      return owner ? [objectKey(cluster, secret.metadata!.namespace, owner.name)] : [];
    });
    // A cluster registered, labelled, unlabelled or removed: the clouds it may concern look again.
    this.controller.watch(registry.clusters, (changed) => this.cloudsConcerning(changed.metadata!.name!));
    this.releaser = new Controller({
      name: "logical-clouds-cluster-release",
      workers: 1,
      logger: options.logger,
      reconcile: (_key, ctx) => this.release(ctx.ref.name),
    });
    this.releaser.watch(registry.clusters);
    this.releaser.watch(informers.clouds, (cloud) =>
      (cloud.status?.clusters ?? []).map((e) => objectKey(registry.clusters.cluster, undefined, e.cluster)),
    );
  }

  async start(): Promise<void> {
    await this.controller.start();
    await this.releaser.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.controller.stop(), this.releaser.stop()]);
    this.applied.clear();
  }

  private cloudsConcerning(cluster: string): string[] {
    return this.options.informers.clouds
      .list()
      .filter(
        (c) =>
          (c.spec.clusterReferences ?? []).some((r) => r.clusterSelector || r.cluster === cluster) ||
          (c.status?.clusters ?? []).some((e) => e.cluster === cluster),
      )
      .map((c) => objectKey(this.options.informers.clouds.cluster, c.metadata!.namespace, c.metadata!.name!));
  }

  /**
   * One pass over a cloud, in stages: plan (the cloud, its status, which clusters should hold it),
   * apply (configure those, clean the others, keep the users' credentials), status (what every
   * cluster came to), then the finalizer once the cloud is gone everywhere, or when to look again.
   */
  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const plan = await this.plan(ctx);
    if (!plan) return reconcileDone();
    const { cloud } = plan;
    // Clusters about to be touched are recorded first: a crash half-way still leaves them known.
    const written = await this.recordPending(ctx.key, plan);

    const data = decodeSecret(this.options.informers.credentialsOf(cloud));
    const originalData = JSON.stringify(data);
    if (plan.wantUp && levelOf(cloud) === "1") await this.prepareUsers(cloud, data);
    const outcomes = await this.applyToClusters(ctx, plan, data);
    const credentials = await this.storeCredentials(plan, data, originalData, outcomes);

    const { entries, failed } = await this.reportStatus(ctx.key, plan, written, outcomes, credentials);
    const now = Date.now();
    this.updateBackoff(ctx, plan, outcomes, now);
    if (plan.deleting && entries.every((e) => e.state === "Removed")) {
      await this.releaseCloud(plan, entries);
      return reconcileDone();
    }
    return this.nextReconcile(plan, outcomes, failed, now);
  }

  /**
   * The plan: the cloud, its status as this controller knows it, and which clusters should hold it
   * and which should not any more. Undefined when there is nothing to do: the cloud is gone, or
   * outside a project's namespace (which its status then says).
   */
  private async plan(ctx: ReconcileContext): Promise<Plan | undefined> {
    const { namespace, name } = ctx.ref;
    const cloud = this.options.informers.clouds.get(namespace, name);
    if (!cloud) {
      this.written.delete(ctx.key);
      return undefined;
    }
    const uid = cloud.metadata!.uid!;
    const project = projectOfNamespace(namespace!, PROJECT_NAMESPACE_PREFIX);
    // What this controller last wrote, when the cache has not caught up with it yet.
    const status: LogicalCloudStatus = this.currentStatus(ctx.key, cloud);
    if (!project) {
      await this.writeStatus(ctx.key, cloud, status, {
        ...status,
        message: `a LogicalCloud belongs in a project's namespace (${PROJECT_NAMESPACE_PREFIX}<project>), not ${namespace}`,
      });
      return undefined;
    }
    const deleting = Boolean(cloud.metadata?.deletionTimestamp);
    const lifecycle = cloud.spec.lifecycle;
    if (!deleting && lifecycle && !cloud.metadata?.finalizers?.includes(CLOUD_FINALIZER)) {
      await addFinalizer(this.options.client.objects, cloud, CLOUD_FINALIZER);
    }
    const wantUp =
      !deleting &&
      !!lifecycle &&
      lifecycle.action !== "Terminate" &&
      status.rolledBackInstance !== lifecycle.instance;
    const { selected, problems } = selectClusters(cloud, this.options.registry);
    const targets = wantUp ? selected : new Map<string, Selection>();
    const previous = new Map((status.clusters ?? []).map((e) => [e.cluster, e]));
    const involved = [
      ...new Set([
        ...targets.keys(),
        ...[...previous.values()].filter((e) => e.state !== "Removed").map((e) => e.cluster),
      ]),
    ].sort();
    const rollbackArmed =
      wantUp &&
      lifecycle.action === "Instantiate" &&
      (lifecycle.onFailure ?? "Rollback") === "Rollback" &&
      status.settledInstance !== lifecycle.instance;
    const stopped = Boolean(lifecycle?.retriesStopped);
    if (lifecycle && status.instance !== lifecycle.instance) {
      // A new action starts afresh: no cluster waits out a backoff from the previous one.
      for (const at of [...this.backoff.keys()]) if (at.startsWith(`${uid}/`)) this.backoff.delete(at);
    }
    return {
      cloud,
      uid,
      project,
      status,
      lifecycle,
      deleting,
      wantUp,
      rollbackArmed,
      stopped,
      targets,
      problems,
      previous,
      involved,
    };
  }

  /** Adds the involved clusters the status does not list yet, as pending; returns the status as written. */
  private async recordPending(key: string, plan: Plan): Promise<LogicalCloudStatus> {
    const { cloud, status, targets, previous, involved } = plan;
    const fresh = involved.filter((c) => !previous.has(c));
    if (!fresh.length) return status;
    const pending = fresh.map((c) => this.pendingEntry(c, targets.get(c)));
    const written = await this.writeStatus(key, cloud, status, {
      ...status,
      clusters: [...(status.clusters ?? []), ...pending].sort((a, b) => a.cluster.localeCompare(b.cluster)),
    });
    for (const entry of pending) previous.set(entry.cluster, entry);
    return written;
  }

  /**
   * Configures every cluster that should hold the cloud and cleans up every other involved one,
   * all at once. With rollback armed, the first cluster that fails stops the others.
   */
  private async applyToClusters(ctx: ReconcileContext, plan: Plan, data: CredentialData): Promise<Outcome[]> {
    const { cloud, uid, project, targets, previous, involved, rollbackArmed, stopped } = plan;
    const abort = new AbortController();
    return Promise.all(
      involved.map(async (cluster): Promise<Outcome> => {
        const target = targets.get(cluster);
        const before = previous.get(cluster);
        // After `stop`, a cluster that failed stays as it is until the next action asks again; and
        // whatever wakes the cloud up meanwhile, a failing cluster is tried again only after its backoff.
        const failing = before && before.state === (target ? "Failed" : "Removing");
        if (failing && stopped) return { entry: before, retry: false, skipped: true };
        if (failing && (this.backoff.get(`${uid}/${cluster}`)?.notBefore ?? 0) > Date.now()) {
          return {
            entry: { ...before, ...(target ? { references: target.references } : {}) },
            retry: true,
            skipped: true,
          };
        }
        if (!target) return this.cleanup(cloud, cluster, before, ctx);
        const outcome = await this.configure(
          cloud,
          project,
          target,
          previous.get(cluster),
          data,
          abort.signal,
        );
        if (outcome.entry.state === "Failed" && rollbackArmed && !abort.signal.aborted) {
          abort.abort(new Refusal("Cancelled", `stopped: cluster "${cluster}" failed`));
        }
        return outcome;
      }),
    );
  }

  /** Writes the credentials Secret when what it should hold changed; returns what it holds. */
  private async storeCredentials(
    plan: Plan,
    data: CredentialData,
    originalData: string,
    outcomes: Outcome[],
  ): Promise<CredentialData> {
    const { cloud, wantUp, targets } = plan;
    // The Secret keeps the users' keys and requests, and certificates of the clusters that hold the cloud.
    const nextData: CredentialData = {};
    const users = levelOf(cloud) === "1" && wantUp ? cloudUsers(cloud) : [];
    for (const user of users) {
      for (const entry of [keyEntry(user.userName), requestEntry(user.userName)]) {
        if (data[entry] !== undefined) nextData[entry] = data[entry];
      }
    }
    for (const outcome of outcomes) {
      const cluster = outcome.entry.cluster;
      if (!targets.has(cluster)) continue;
      for (const user of users) {
        const entry = certificateEntry(user.userName, cluster);
        const cert = outcome.certificates?.[user.userName] ?? data[entry];
        if (cert !== undefined) nextData[entry] = cert;
      }
    }
    if (
      JSON.stringify(nextData) !== originalData &&
      (Object.keys(nextData).length || Object.keys(data).length)
    ) {
      await applyObject(this.options.client, credentialsSecret(cloud, nextData));
    }
    return nextData;
  }

  /**
   * Writes the cloud's status from what every cluster came to: its entries, message, states,
   * actions and Ready condition. Returns the entries and the target clusters that failed.
   */
  private async reportStatus(
    key: string,
    plan: Plan,
    written: LogicalCloudStatus,
    outcomes: Outcome[],
    credentials: CredentialData,
  ): Promise<{ entries: ClusterEntry[]; failed: ClusterEntry[] }> {
    const { cloud, status, lifecycle, deleting, wantUp, stopped, targets, previous } = plan;
    const now = Date.now();
    const byCluster = new Map(outcomes.map((o) => [o.entry.cluster, o.entry]));
    const entries = [...byCluster.values()]
      .filter((e) => e.state !== "Removed" || !wantUp)
      .concat(
        // Clusters removed earlier stay listed (as Removed) while the cloud is down.
        !wantUp
          ? [...previous.values()].filter((e) => e.state === "Removed" && !byCluster.has(e.cluster))
          : [],
      )
      .sort((a, b) => a.cluster.localeCompare(b.cluster));
    const failed = entries.filter(
      (e) => targets.has(e.cluster) && e.state === "Failed" && e.reason !== "Cancelled",
    );
    const { message, failure, rolledBackInstance, settledInstance } = progressOf(
      plan,
      entries,
      byCluster,
      failed,
    );
    const deployedStatus = this.deployedStatus(
      cloud,
      entries,
      targets,
      rolledBackInstance,
      deleting,
      stopped,
    );
    const state = cloudState(cloud, status.state, deployedStatus, deleting, stopped);
    const actions = recordAction(status.actions ?? [], cloud, state, deployedStatus, now);
    const generation = cloud.metadata?.generation;
    const conditions = setCondition(
      status.conditions as Condition[] | undefined,
      {
        type: "Ready",
        status: deployedStatus === "Instantiated" ? "True" : "False",
        reason: deployedStatus ?? "NotInstantiated",
        message: message.slice(0, 2000),
        observedGeneration: generation,
      },
      now,
    );
    await this.writeStatus(key, cloud, written, {
      observedGeneration: generation,
      state,
      ...(deployedStatus ? { deployedStatus } : {}),
      ...(lifecycle ? { instance: lifecycle.instance } : {}),
      ...(settledInstance ? { settledInstance } : {}),
      ...(rolledBackInstance ? { rolledBackInstance } : {}),
      ...(failure ? { failure: failure.slice(0, 2000) } : {}),
      message: message.slice(0, 4000),
      actions,
      clusters: entries,
      ...(Object.keys(credentials).length
        ? { credentialsSecret: credentialsSecretName(cloud.metadata!.name!) }
        : {}),
      conditions,
    });
    return { entries, failed };
  }

  /** Backoff per cluster: doubled after each failed try, forgotten after a success. */
  private updateBackoff(ctx: ReconcileContext, plan: Plan, outcomes: Outcome[], now: number): void {
    const { uid, previous } = plan;
    for (const outcome of outcomes) {
      const at = `${uid}/${outcome.entry.cluster}`;
      if (outcome.skipped) continue;
      const was = previous.get(outcome.entry.cluster);
      if (
        outcome.entry.state === "Failed" &&
        (was?.state !== "Failed" || was.reason !== outcome.entry.reason)
      ) {
        ctx.logger.info(
          { cluster: outcome.entry.cluster, reason: outcome.entry.reason, message: outcome.entry.message },
          "logical cloud not configured on a cluster",
        );
      }
      if (!outcome.retry) this.backoff.delete(at);
      else {
        const delayMs = Math.min((this.backoff.get(at)?.delayMs ?? 500) * 2, this.maxRetryDelayMs);
        this.backoff.set(at, { delayMs, notBefore: now + delayMs });
      }
    }
  }

  /** A cloud being deleted and removed from every cluster: its finalizer and what is kept of it go. */
  private async releaseCloud(plan: Plan, entries: ClusterEntry[]): Promise<void> {
    const { cloud, uid } = plan;
    await removeFinalizer(this.options.client.objects, cloud, CLOUD_FINALIZER);
    for (const e of entries) {
      this.applied.delete(`${uid}/${e.cluster}`);
      this.backoff.delete(`${uid}/${e.cluster}`);
    }
  }

  /** When to look at the cloud again: soon to roll back, after the nearest backoff, or at the next resync. */
  private nextReconcile(
    plan: Plan,
    outcomes: Outcome[],
    failed: ClusterEntry[],
    now: number,
  ): ReconcileResult {
    const { uid, wantUp, rollbackArmed, stopped } = plan;
    if (rollbackArmed && failed.length) return requeueAfter(100);
    const waits = outcomes
      .filter((o) => o.retry)
      .map((o) => (this.backoff.get(`${uid}/${o.entry.cluster}`)?.notBefore ?? now) - now);
    if (waits.length && !stopped) return requeueAfter(Math.max(100, Math.min(...waits)));
    return wantUp ? requeueAfter(this.resyncMs) : reconcileDone();
  }

  private deployedStatus(
    cloud: LogicalCloud,
    entries: ClusterEntry[],
    targets: Map<string, Selection>,
    rolledBackInstance: string | undefined,
    deleting: boolean,
    stopped: boolean,
  ): DeployedState | undefined {
    const lifecycle = cloud.spec.lifecycle;
    if (!lifecycle && !deleting) return undefined;
    if (deleting || lifecycle?.action === "Terminate") {
      if (entries.every((e) => e.state === "Removed")) return "Terminated";
      return stopped ? "TerminateFailed" : "Terminating";
    }
    if (rolledBackInstance === lifecycle!.instance) return "InstantiateFailed";
    const states = [...targets.keys()].map((c) => entries.find((e) => e.cluster === c)?.state);
    if (states.every((s) => s === "Ready")) return "Instantiated";
    if (states.some((s) => s === "Failed")) return "InstantiateFailed";
    return "Instantiating";
  }

  private pendingEntry(cluster: string, target: Selection | undefined): ClusterEntry {
    const registered = target?.cluster ?? this.options.registry.get(cluster);
    return {
      cluster,
      clusterProvider: registered ? providerOf(registered) : "",
      ...(target ? { references: target.references } : {}),
      state: target ? "Pending" : "Removing",
      connectivity: "Unknown",
      since: formatKubeTime(Date.now()),
    };
  }

  private entryOf(
    cluster: string,
    target: Selection | undefined,
    previous: ClusterEntry | undefined,
    fields: Omit<ClusterEntry, "cluster" | "clusterProvider" | "references" | "since">,
  ): ClusterEntry {
    const base = this.pendingEntry(cluster, target);
    const changed = previous?.state !== fields.state || previous?.reason !== fields.reason;
    return {
      ...base,
      clusterProvider: base.clusterProvider || previous?.clusterProvider || "",
      ...fields,
      since: changed ? formatKubeTime(Date.now()) : (previous?.since ?? base.since),
    };
  }

  /** Keys and requests of the users who bring none; a user's own request replaces what was signed for the old one. */
  private async prepareUsers(cloud: LogicalCloud, data: CredentialData): Promise<void> {
    for (const user of cloudUsers(cloud)) {
      const name = user.userName;
      const dropCertificates = () => {
        for (const entry of Object.keys(data)) {
          if (entry.startsWith(`${name}.`) && entry.endsWith(".crt")) delete data[entry];
        }
      };
      if (user.certificateRequest) {
        if (data[requestEntry(name)] !== user.certificateRequest || data[keyEntry(name)] !== undefined) {
          dropCertificates();
          delete data[keyEntry(name)];
          data[requestEntry(name)] = user.certificateRequest;
        }
      } else if (!data[keyEntry(name)] || !data[requestEntry(name)]) {
        dropCertificates();
        const made = await createCertificateRequest(name, []);
        data[keyEntry(name)] = made.keyPem;
        data[requestEntry(name)] = made.csrPem;
      }
    }
  }

  /** Whether a certificate in the Secret is still good to hand out (valid, not due for renewal). */
  private certificateCurrent(certPem: string | undefined): boolean {
    if (!certPem) return false;
    try {
      const details = certificateDetails(certPem);
      return classifyExpiry(details.notBefore, details.notAfter).state === "valid";
    } catch {
      return false;
    }
  }

  /**
   * Makes a cluster hold the cloud: nothing is sent when its last configuration is current;
   * else the namespace is claimed, the objects applied, what an earlier configuration made and
   * this one no longer wants removed, and the users' certificates signed where due.
   */
  private async configure(
    cloud: LogicalCloud,
    project: string,
    target: Selection,
    previous: ClusterEntry | undefined,
    data: CredentialData,
    signal: AbortSignal,
  ): Promise<Outcome> {
    const cluster = target.cluster.metadata!.name!;
    const started = Date.now();
    const memoKey = `${cloud.metadata!.uid}/${cluster}`;
    const { registry } = this.options;
    const level = levelOf(cloud);
    const users = level === "1" ? cloudUsers(cloud) : [];
    const objects = level === "1" ? desiredObjects(cloud, project) : [];
    const certsCurrent = users.every((u) =>
      this.certificateCurrent(data[certificateEntry(u.userName, cluster)]),
    );
    const digest = this.configurationDigest(cloud, cluster, objects, users, data);
    const memo = this.applied.get(memoKey);
    if (
      previous?.state === "Ready" &&
      certsCurrent &&
      memo?.digest === digest &&
      Date.now() - memo.at < this.resyncMs
    ) {
      return { entry: { ...previous, references: target.references }, retry: false };
    }
    const ready = (
      fields: Pick<ClusterEntry, "resources" | "certificates">,
      certificates?: Record<string, string>,
    ): Outcome => {
      this.applied.set(memoKey, { digest, at: Date.now() });
      return {
        entry: this.entryOf(cluster, target, previous, {
          state: "Ready",
          connectivity: "Available",
          applyMs: Date.now() - started,
          ...fields,
        }),
        ...(certificates ? { certificates } : {}),
        retry: false,
      };
    };
    try {
      signal.throwIfAborted();
      const client = registry.clientOf(cluster);
      await step("holding the registered cluster", () => this.holdCluster(cluster));
      if (level === "0") {
        await step("reaching the cluster", () => client.kubeConfig.makeApiClient(VersionApi).getCode());
        return ready({ resources: [] });
      }
      const [namespace, ...rest] = objects;
      await this.claimNamespace(client, cloud, cluster, namespace!);
      signal.throwIfAborted();
      await step(`applying ${describeObject(namespace!)}`, () => applyObject(client, namespace!));
      await Promise.all(rest.map((o) => step(`applying ${describeObject(o)}`, () => applyObject(client, o))));
      signal.throwIfAborted();
      await this.removeUnwanted(client, cloud, cluster, previous, objects);
      const certificates = await this.signCertificates(client, cloud, cluster, users, data, signal);
      return ready(
        {
          resources: objects.map((o) => refOf(o, "Applied")),
          certificates: certificateRefs(cluster, users, certificates, data),
        },
        certificates,
      );
    } catch (err) {
      this.applied.delete(memoKey);
      return { entry: this.failedEntry(cluster, target, previous, objects, err, signal), retry: true };
    }
  }

  /** What a cluster's configuration depends on: when it is unchanged, nothing needs sending. */
  private configurationDigest(
    cloud: LogicalCloud,
    cluster: string,
    objects: KubernetesObject[],
    users: LogicalCloudUser[],
    data: CredentialData,
  ): string {
    return digestOf({
      objects,
      level: levelOf(cloud),
      requests: users.map((u) => data[requestEntry(u.userName)]),
      credentials: this.options.registry.credentialsVersion(cluster),
      action: cloud.spec.lifecycle?.instance,
    });
  }

  /** The cloud's namespace is free in the cluster, or already the cloud's and not being deleted. */
  private async claimNamespace(
    client: ClusterClient,
    cloud: LogicalCloud,
    cluster: string,
    namespace: KubernetesObject,
  ): Promise<void> {
    await step(`reading Namespace ${namespace.metadata!.name}`, async () => {
      let existing: Awaited<ReturnType<typeof client.core.readNamespace>> | undefined;
      try {
        existing = await client.core.readNamespace({ name: namespace.metadata!.name! });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (existing && existing.metadata?.labels?.[LOGICAL_CLOUD_UID_LABEL] !== cloud.metadata!.uid) {
        throw new Refusal(
          "NamespaceConflict",
          `namespace "${namespace.metadata!.name}" already exists in cluster "${cluster}" and is not this logical cloud's`,
        );
      }
      if (existing?.metadata?.deletionTimestamp) {
        throw new StepError(
          `namespace "${namespace.metadata!.name}"`,
          new Error("is still being deleted from an earlier termination"),
        );
      }
    });
  }

  /** Deletes from the cluster what an earlier configuration made that `objects` no longer has, and logs what changed. */
  private async removeUnwanted(
    client: ClusterClient,
    cloud: LogicalCloud,
    cluster: string,
    previous: ClusterEntry | undefined,
    objects: KubernetesObject[],
  ): Promise<void> {
    // What an earlier configuration made and this one no longer wants: as recorded, or, after a
    // failure (when what was made may not all be recorded), everything carrying the cloud's uid.
    const made =
      previous?.state === "Failed"
        ? await step("listing what the logical cloud made", () => this.labelled(client, cloud.metadata!.uid!))
        : (previous?.resources ?? []);
    const stale = made.filter((r) => !objects.some((o) => sameObject({ ...o, ...o.metadata }, r)));
    await Promise.all(
      stale.map((r) => step(`deleting ${describeObject(r)}`, () => this.deleteRef(client, r))),
    );
    this.options.logger.debug(
      {
        cloud: `${cloud.metadata!.namespace}/${cloud.metadata!.name}`,
        cluster,
        applied: objects.length,
        removed: stale.map((r) => describeObject(r)),
        previous: (previous?.resources ?? []).length,
      },
      "logical cloud configured on a cluster",
    );
  }

  /** Has the cluster sign a certificate for each user whose certificate there is missing or due; returns them by user. */
  private async signCertificates(
    client: ClusterClient,
    cloud: LogicalCloud,
    cluster: string,
    users: LogicalCloudUser[],
    data: CredentialData,
    signal: AbortSignal,
  ): Promise<Record<string, string>> {
    const certificates: Record<string, string> = {};
    await Promise.all(
      users.map(async (user) => {
        const current = data[certificateEntry(user.userName, cluster)];
        if (this.certificateCurrent(current)) return;
        const signed = await step(`signing a certificate for "${user.userName}"`, () =>
          signCertificateRequest(client.kubeConfig, {
            username: user.userName,
            certificateRequest: data[requestEntry(user.userName)]!,
            allowedGroups: [cloud.metadata!.name!],
            expirationSeconds: CERTIFICATE_SECONDS,
            timeoutMs: this.signTimeoutMs,
            signal,
          }),
        );
        certificates[user.userName] = signed.certPem;
      }),
    );
    return certificates;
  }

  private failedEntry(
    cluster: string,
    target: Selection | undefined,
    previous: ClusterEntry | undefined,
    objects: { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } }[],
    err: unknown,
    signal?: AbortSignal,
    state: "Failed" | "Removing" = "Failed",
  ): ClusterEntry {
    const cause = err instanceof StepError ? err.original : err;
    let reason = "Refused";
    let connectivity: ClusterEntry["connectivity"] = "Available";
    let message = describeError(err);
    if (signal?.aborted) {
      // Another cluster failed first: whatever this one was doing was stopped for the rollback.
      reason = "Cancelled";
      message = signal.reason instanceof Refusal ? signal.reason.message : "stopped";
    } else if (err instanceof Refusal) {
      reason = err.reason;
    } else if (cause instanceof ClusterUnavailable) {
      reason = cause.reason;
      connectivity = "Unknown";
      message = cause.message;
    } else if (isTransportError(cause)) {
      reason = "Unreachable";
      connectivity = "Retrying";
    } else if (statusCode(cause) === undefined) {
      reason = "Failed";
    }
    const known = previous?.resources ?? [];
    return this.entryOf(cluster, target, previous, {
      state,
      connectivity,
      reason,
      message: message.slice(0, 2000),
      // What it wants (Applied if an earlier configuration made it), and what earlier ones made and
      // it no longer wants: still there until a configuration succeeds and removes it.
      resources: [
        ...objects.map((o) => ({
          ...refOf(o as never, "Pending"),
          state: known.some((r) => sameObject({ ...o, ...o.metadata }, r) && r.state === "Applied")
            ? ("Applied" as const)
            : ("Pending" as const),
        })),
        ...known.filter((r) => !objects.some((o) => sameObject({ ...o, ...o.metadata }, r))),
      ],
    });
  }

  private async deleteRef(
    client: ClusterClient,
    ref: { apiVersion: string; kind: string; name: string; namespace?: string },
  ): Promise<void> {
    await ignoreNotFound(
      client.objects.delete(
        {
          apiVersion: ref.apiVersion,
          kind: ref.kind,
          metadata: { name: ref.name, ...(ref.namespace ? { namespace: ref.namespace } : {}) },
        },
        undefined,
        undefined,
        undefined,
        undefined,
        "Background",
      ),
    );
  }

  /**
   * Removes from a cluster everything the cloud made there: every object of the kinds it makes
   * that carries its uid label (also what a crashed attempt made and never recorded), and nothing
   * else. Removed once its namespace is gone.
   */
  private async cleanup(
    cloud: LogicalCloud,
    cluster: string,
    previous: ClusterEntry | undefined,
    ctx: ReconcileContext,
  ): Promise<Outcome> {
    const { registry } = this.options;
    const uid = cloud.metadata!.uid!;
    const registered = registry.get(cluster);
    const done = (message?: string): Outcome => {
      this.applied.delete(`${uid}/${cluster}`);
      return {
        entry: this.entryOf(cluster, undefined, previous, {
          state: "Removed",
          connectivity: registered ? "Available" : "Unknown",
          ...(message ? { message } : {}),
          resources: (previous?.resources ?? []).map((r) => ({ ...r, state: "Deleted" })),
        }),
        retry: false,
      };
    };
    if (!registered)
      return done(`cluster "${cluster}" is no longer registered: what the logical cloud made there was left`);
    if (levelOf(cloud) === "0") return done();
    try {
      const client = registry.clientOf(cluster);
      const made = await this.labelled(client, uid);
      for (const ref of made.filter((r) => r.state !== "Deleted")) {
        await step(`deleting ${describeObject(ref)}`, () => this.deleteRef(client, ref));
      }
      const namespaceLeft = made.some((r) => r.kind === "Namespace");
      if (namespaceLeft) {
        return {
          entry: this.entryOf(cluster, undefined, previous, {
            state: "Removing",
            connectivity: "Available",
            reason: "NamespaceTerminating",
            message: `waiting for namespace "${cloud.spec.namespace}" to be deleted`,
            resources: previous?.resources ?? [],
          }),
          retry: true,
        };
      }
      return done();
    } catch (err) {
      ctx.logger.info({ cluster, error: describeError(err) }, "logical cloud clean-up failed, retrying");
      return {
        entry: this.failedEntry(cluster, undefined, previous, [], err, undefined, "Removing"),
        retry: true,
      };
    }
  }

  /** Every object of the kinds a logical cloud makes that carries its uid, in the order they are removed. */
  private async labelled(client: ClusterClient, uid: string): Promise<ResourceRef[]> {
    const found: ResourceRef[] = [];
    for (const kind of MANAGED_KINDS) {
      const list = await step(`listing ${kind.kind}s`, () =>
        client.objects.list(
          kind.apiVersion,
          kind.kind,
          undefined,
          undefined,
          undefined,
          undefined,
          undefined,
          `${LOGICAL_CLOUD_UID_LABEL}=${uid}`,
        ),
      );
      for (const item of list.items) {
        found.push({
          ...refOf({ ...item, apiVersion: kind.apiVersion, kind: kind.kind }, "Applied"),
          ...(item.metadata?.deletionTimestamp ? { state: "Deleted" as const } : {}),
        });
      }
    }
    return found;
  }

  /** Puts this controller's finalizer on a registered cluster before anything is made there. */
  private async holdCluster(name: string): Promise<void> {
    const cluster = this.options.registry.get(name);
    if (!cluster || cluster.metadata?.finalizers?.includes(CLUSTER_FINALIZER)) return;
    await addFinalizer(this.options.client.objects, cluster, CLUSTER_FINALIZER);
  }

  /** A registered cluster being removed is let go once no logical cloud has anything left there. */
  private async release(name: string): Promise<ReconcileResult> {
    const cluster = this.options.registry.get(name);
    if (!cluster?.metadata?.deletionTimestamp || !cluster.metadata.finalizers?.includes(CLUSTER_FINALIZER)) {
      return reconcileDone();
    }
    const holding = this.options.informers.clouds
      .list()
      .filter((c) => (c.status?.clusters ?? []).some((e) => e.cluster === name && e.state !== "Removed"));
    if (holding.length) return requeueAfter(2_000);
    await removeFinalizer(this.options.client.objects, cluster, CLUSTER_FINALIZER);
    this.options.logger.info({ cluster: name }, "no logical cloud holds the cluster any more: released");
    return reconcileDone();
  }

  /**
   * The cloud's status as this controller knows it: the cached one, unless this controller wrote a
   * newer one the cache has not received yet (a reconcile started by an earlier event must not undo
   * what the previous reconcile recorded, such as the objects it made).
   */
  private currentStatus(key: string, cloud: LogicalCloud): LogicalCloudStatus {
    const known = this.written.get(key);
    const cached = resourceVersionOf(cloud);
    if (known && cached !== undefined && known.resourceVersion > cached) return known.status;
    this.written.delete(key);
    return cloud.status ?? {};
  }

  /** Writes `status` unless it is what `current` already says; returns what the cloud's status now is. */
  private async writeStatus(
    key: string,
    cloud: LogicalCloud,
    current: LogicalCloudStatus,
    status: LogicalCloudStatus,
  ): Promise<LogicalCloudStatus> {
    if (sameStoredJson(status, current)) return current;
    const stored = await applyStatusUnlessGone<KubernetesObject & { status: LogicalCloudStatus }>(
      this.options.client,
      {
        apiVersion: cloud.apiVersion,
        kind: cloud.kind,
        metadata: { name: cloud.metadata!.name!, namespace: cloud.metadata!.namespace! },
        status,
      },
    );
    if (!stored) return current;
    const resourceVersion = resourceVersionOf(stored);
    if (resourceVersion !== undefined) this.written.set(key, { resourceVersion, status });
    return status;
  }
}

export type { ResourceRef };
