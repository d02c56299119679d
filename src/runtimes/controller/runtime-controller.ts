/**
 * The Runtime controller: turns each Runtime into a running pod and back, level-based.
 *
 * A start (the first, a resume, or a retry after a failure) gets a new route token, written before
 * the plugin's deploy-service is called; the namespace is made ready; the plugin's YAML is checked
 * (see manifest.ts) and server-side applied — objects in the Runtime's own cluster are owned by it;
 * the start is then followed through its steps (Namespace, Volumes, Scheduled, Pulling, Ready) until
 * a pod answers, whose IP, with the plugin's port and path, is the endpoint. A start that does not
 * get there within the service's startTimeoutSeconds fails. A plugin that fails, times out or
 * returns YAML that is refused fails the start with its message, and nothing of it is left.
 *
 * Stopped: the workload and its Services go (claims, Secrets, ConfigMaps stay), deregister-service
 * is called, and the route token goes with the session. Deleted: a finalizer holds the Runtime
 * until everything it created (claims and Secrets too, in whichever cluster) is deleted and
 * deregister-service was called.
 *
 * Status is the controller's except `lastActivity`, written with server-side apply of its own fields
 * (runtime-status.ts), also when a reconcile fails.
 */
import type { KubernetesObject, V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  addFinalizer,
  applyObject,
  type ClusterClient,
  Controller,
  describeError,
  exponentialDelay,
  findCondition,
  formatKubeTime,
  ignoreNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  removeFinalizer,
  requeueAfter,
  statusCode,
} from "../../kube/index.js";
import { TENANTS_API_VERSION, type Tenant } from "../../tenants/index.js";
import { RUNTIMES_AUDIENCE } from "../admin/callers.js";
import {
  culledOf,
  RUNTIME_FINALIZER,
  RUNTIME_PAUSED_ANNOTATION,
  type Runtime,
  type StartGate,
  startGateOf,
} from "../api/runtime.js";
import { DEFAULT_RUNTIME_AGENT_IMAGE, type RuntimeService } from "../api/runtime-service.js";
import { KubeconfigClients } from "../clusters.js";
import { recordRuntimeEvent } from "../events.js";
import { serverName } from "../hub/models.js";
import { BY_SERVICE, BY_USER, type RuntimesInformers } from "../informers.js";
import type { PluginRegistry } from "../plugins/registry.js";
import { PluginError, RUNTIME_LABEL, type RuntimeRegistration, type ServicePlugin } from "../plugins/spi.js";
import { AnsweringChecks } from "./answering.js";
import { cullDecision, cullingLimits, cullRuntime } from "./culling.js";
import {
  ALLOWED_KINDS,
  buildManifest,
  ENDPOINT_ANNOTATION,
  kindOf,
  type Manifest,
  ManifestError,
} from "./manifest.js";
import { NamespaceNotReady, RuntimeNamespaces } from "./namespaces.js";
import { observe } from "./progress.js";
import { type OwnedStatus, StatusDraft, withLastWritten } from "./runtime-status.js";
import {
  revokeSingleUserTokens,
  type SingleUserServer,
  singleUserSecret,
  singleUserSecretName,
} from "./singleuser.js";
import { BY_RUNTIME, runtimeIndexKey, type Target, Targets } from "./targets.js";

const COMPONENT = "tenantry-runtimes-controller";
const DEFAULT_START_TIMEOUT_SECONDS = 300;
/** How often a start is looked at while nothing signals progress (image pulls report by events). */
const PROGRESS_POLL_MS = 2_000;
/** The longest a culling deadline is waited for before the runtime is looked at again. */
const MAX_RECHECK_MS = 6 * 3600_000;
/** deregister-service is tried this many times (1 s, 2 s, 4 s … apart) before the controller goes on without it. */
const DEREGISTER_ATTEMPTS = 5;

export interface RuntimeControllerOptions {
  /** The cluster the Runtime and RuntimeService objects live in. */
  client: ClusterClient;
  informers: RuntimesInformers;
  plugins: PluginRegistry;
  /** A tenant by name, in the Runtime objects' cluster (mirrored into other runtimes clusters). */
  tenantOf: (name: string) => Tenant | undefined;
  /** tenantry's namespace: where the runtimes proxy runs and kubeconfig Secrets are. */
  tenantryNamespace?: string;
  /** Base URL of the Admin API as runtime pods reach it (their agent's stop URL). */
  adminUrl: () => string | undefined;
  /** Audience of the agents' tokens (default `tenantry-runtimes`). */
  audience?: string;
  /**
   * How late proxy activity may reach `status.lastActivity` (the proxy's write interval, default
   * 30 s): an idle runtime is culled that much after its idle timeout, so no request is missed.
   */
  activityLagMs?: number;
  /**
   * What else culls this runtime when idle (a BackupPolicy backing it up first), if anything: idle
   * culling is then left to it (a maximum age still applies).
   */
  idleCulledBy?: (runtime: Runtime) => string | undefined;
  logger: Logger;
  workers?: number;
}

type Outcome = ReconcileResult;

/** An apply the API server refused for good (admission, quota, an invalid object): the start fails. */
function refused(err: unknown): boolean {
  const code = statusCode(err);
  return code !== undefined && code >= 400 && code < 500 && code !== 409 && code !== 429;
}

export class RuntimeController {
  private readonly controller: Controller;
  private readonly targets: Targets;
  private readonly answering: AnsweringChecks;
  private readonly namespaces: RuntimeNamespaces;
  private readonly logger: Logger;
  /** The status last written per runtime key, until the cache shows it. */
  private readonly written = new Map<string, { uid: string; status: OwnedStatus; finalized?: boolean }>();
  /** Failed deregister-service calls per runtime key, for the retry schedule. */
  private readonly deregisterFailures = new Map<string, number>();
  private readonly cluster: string;
  private readonly tenantryNamespace: string;

  constructor(private readonly options: RuntimeControllerOptions) {
    const { client, informers } = options;
    this.cluster = client.name;
    this.logger = options.logger.child({ component: "runtime-controller" });
    const tenantryNamespace = options.tenantryNamespace ?? "tenantry-system";
    this.tenantryNamespace = tenantryNamespace;
    const lookAgain = (object: KubernetesObject) => {
      const runtime = object.metadata?.labels?.[RUNTIME_LABEL];
      if (runtime) this.controller.enqueue(objectKey(this.cluster, object.metadata!.namespace!, runtime));
    };
    this.answering = new AnsweringChecks(lookAgain);
    this.targets = new Targets(
      client,
      new KubeconfigClients(client, tenantryNamespace),
      (_cluster, object, gone) => {
        if (gone && object.metadata?.uid) this.answering.forget(object.metadata.uid);
        lookAgain(object);
      },
      this.logger,
    );
    this.namespaces = new RuntimeNamespaces({
      tenantOf: options.tenantOf,
      tenantryNamespace,
      homeCluster: this.cluster,
      cachedNamespace: (name) => informers.tenantNamespaces.get(undefined, name),
    });
    this.controller = new Controller({
      name: "runtimes",
      workers: options.workers ?? 16,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(informers.runtimes);
    // A service's change (its plugin answered init, its placement changed) concerns its runtimes.
    this.controller.watch(informers.services, (service) =>
      informers.runtimes
        .byIndex(BY_SERVICE, service.metadata!.name!)
        .map((r) => objectKey(this.cluster, r.metadata!.namespace!, r.metadata!.name!)),
    );
  }

  async start(): Promise<void> {
    await this.targets.start();
    await this.controller.start();
  }

  async stop(): Promise<void> {
    await this.controller.stop();
    this.answering.stop();
    await this.targets.stop();
  }

  stats() {
    return this.controller.stats();
  }

  private async reconcile(ctx: ReconcileContext): Promise<Outcome> {
    const { namespace, name } = ctx.ref;
    const cached = this.options.informers.runtimes.get(namespace, name);
    if (!cached) {
      this.deregisterFailures.delete(ctx.key);
      this.written.delete(ctx.key);
      return reconcileDone();
    }
    if (cached.metadata?.annotations?.[RUNTIME_PAUSED_ANNOTATION] === "true") {
      ctx.logger.debug({ runtime: ctx.key }, "paused: left alone");
      return reconcileDone();
    }
    // Acting on a cache that has not seen the last status write would start a start twice, or
    // clean up and call deregister-service again for a runtime already let go.
    const last = this.written.get(ctx.key);
    if (last?.finalized && last.uid === cached.metadata?.uid) return reconcileDone();
    const behind = last?.uid === cached.metadata?.uid ? withLastWritten(cached, last?.status) : undefined;
    if (!behind) this.written.delete(ctx.key);
    const runtime = behind ?? cached;
    const status = new StatusDraft(runtime, (written) =>
      this.written.set(ctx.key, { uid: runtime.metadata!.uid!, status: written }),
    );
    try {
      const outcome = await this.reconcileRuntime(runtime, status, ctx);
      await status.write(this.options.client);
      return outcome;
    } catch (err) {
      // Status is written even when the reconcile fails: the phase stays, the reason says why.
      status.status.reason = "Retrying";
      status.status.message = `${describeError(err)}; retrying`.slice(0, 32_000);
      await status
        .write(this.options.client)
        .catch((writeErr: unknown) =>
          ctx.logger.warn({ err: describeError(writeErr) }, "could not write a runtime's status"),
        );
      throw err;
    }
  }

  private async reconcileRuntime(
    runtime: Runtime,
    status: StatusDraft,
    ctx: ReconcileContext,
  ): Promise<Outcome> {
    const service = this.options.informers.services.get(undefined, runtime.spec.service);
    if (runtime.metadata?.deletionTimestamp) return this.finalize(runtime, service, status, ctx);
    await addFinalizer(this.options.client.objects, runtimeRef(runtime), RUNTIME_FINALIZER);
    if (!service) {
      status.set("Failed", "ServiceNotFound", `there is no RuntimeService ${runtime.spec.service}`);
      status.endSession();
      status.status.observedGeneration = status.generation;
      return reconcileDone();
    }
    let target: Target;
    try {
      target = await this.targets.of(service);
    } catch (err) {
      status.status.reason = "ClusterUnreachable";
      status.status.message = describeError(err);
      return requeueAfter(10_000);
    }
    status.status.cluster = target.name;
    if (runtime.spec.desiredState === "Stopped")
      return this.stopRuntime(runtime, service, target, status, ctx);
    return this.run(runtime, service, target, status, ctx);
  }

  // --- running ---------------------------------------------------------------------------------

  private async run(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    ctx: ReconcileContext,
  ): Promise<Outcome> {
    const generation = status.generation;
    const current = status.status;
    // A failed start stays failed until someone asks again (a new generation).
    if (current.phase === "Failed" && current.observedGeneration === generation) return reconcileDone();
    const ended = current.phase === "Failed" || current.phase === "Stopped" || current.phase === "Stopping";
    if (!current.route?.token || ended) {
      status.beginStart();
      // The token is known before the plugin is called: its basePath names it.
      await status.write(this.options.client);
    }
    current.observedGeneration = generation;
    const timeoutMs = (service.spec.startTimeoutSeconds ?? DEFAULT_START_TIMEOUT_SECONDS) * 1000;
    const elapsed = Date.now() - Date.parse(current.startTime ?? new Date().toISOString());
    const remaining = timeoutMs - elapsed;
    const deployed = findCondition(current.conditions, "Deployed");
    if (!(deployed?.status === "True" && deployed.observedGeneration === generation)) {
      const gate = startGateOf(runtime);
      if (gate) return this.waitForGate(runtime, service, target, status, gate);
      let outcome: Outcome | undefined;
      try {
        outcome = await this.deploy(runtime, service, target, status, ctx);
      } catch (err) {
        // Retried with backoff, but not past the start's deadline.
        if (remaining > 0) throw err;
        status.set("Starting", "Retrying", describeError(err));
        return this.timeOut(runtime, service, target, status, timeoutMs);
      }
      if (outcome)
        return outcome.kind === "requeueAfter" && remaining <= 0
          ? this.timeOut(runtime, service, target, status, timeoutMs)
          : outcome;
    }
    return this.follow(runtime, service, target, status, timeoutMs, remaining);
  }

  /**
   * Another part of tenantry holds the start (its gate): the start waits in its Volumes step,
   * without a deadline — the deadline counts from the gate's last word — until the gate goes, or
   * fails for this generation.
   */
  private async waitForGate(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    gate: StartGate,
  ): Promise<Outcome> {
    if (gate.failedGeneration === status.generation) {
      status.step("Volumes", { state: "Failed", message: gate.message });
      return this.fail(runtime, service, target, status, gate.reason, gate.message, {});
    }
    const shown = status.status.steps?.find((s) => s.name === "Volumes");
    if (shown?.message !== gate.message) status.status.startTime = formatKubeTime(new Date());
    status.step("Volumes", { state: "InProgress", message: gate.message });
    status.set("Starting", gate.reason, gate.message);
    status.condition("Ready", { status: "False", reason: gate.reason, message: gate.message });
    // The gate's next change brings the runtime back.
    return reconcileDone();
  }

  /** Namespace, deploy-service, checks, apply. Undefined when deployed; an outcome when not (yet). */
  private async deploy(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    ctx: ReconcileContext,
  ): Promise<Outcome | undefined> {
    const serviceNotReady = await this.waitForService(runtime, service, target, status);
    if (serviceNotReady) return serviceNotReady;
    const namespaceNotReady = await this.prepareNamespace(runtime, service, target, status);
    if (namespaceNotReady) return namespaceNotReady;

    const registration = this.registration(runtime, target, status.status.route?.token);
    const plugin = this.options.plugins.pluginOf(service);
    let manifest: Manifest;
    try {
      manifest = await this.renderManifest(runtime, service, target, plugin, registration);
    } catch (err) {
      return this.renderFailed(runtime, service, target, status, registration, err);
    }

    const notApplied = await this.applyManifest(
      runtime,
      service,
      target,
      status,
      ctx,
      manifest,
      registration,
    );
    if (notApplied) return notApplied;
    this.recordApplied(target, status, ctx, manifest);
    return undefined;
  }

  /**
   * The service's plugin must have answered init: undefined once it has; while it has not, an
   * outcome that waits; when it said it cannot, the start fails.
   */
  private async waitForService(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
  ): Promise<Outcome | undefined> {
    const ready = findCondition(service.status?.conditions, "Ready");
    const current = ready?.observedGeneration === service.metadata?.generation;
    if (ready?.status === "False" && current) {
      // Its plugin did not answer init: this start fails with what it said.
      const why = `service ${service.metadata?.name} is not ready: ${ready.message}`;
      return this.fail(runtime, service, target, status, "ServiceNotReady", why, {});
    }
    if (ready?.status !== "True" || !current) {
      const why = `waiting for the plugin of service ${service.metadata?.name} to answer init`;
      status.set("Starting", "WaitingForService", why);
      status.step("Namespace", { state: "Pending", message: why });
      // The service's next status change brings this runtime back; the start timeout still runs.
      return requeueAfter(10_000);
    }
    return undefined;
  }

  /** The runtime's namespace made ready (for its tenant and user when segregated): undefined once it is, else an outcome. */
  private async prepareNamespace(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
  ): Promise<Outcome | undefined> {
    const { namespace } = runtime.metadata as { namespace: string };
    const tenant = runtime.spec.tenant;
    const segregated = (service.spec.namespaceMode ?? "Segregated") === "Segregated";
    try {
      const message = await this.namespaces.ensure(
        target,
        namespace,
        segregated ? { tenant, user: runtime.spec.user } : undefined,
      );
      status.step("Namespace", { state: "Done", message });
    } catch (err) {
      const message = describeError(err);
      status.step("Namespace", { state: "InProgress", message });
      status.set("Starting", "NamespaceNotReady", message);
      if (err instanceof NamespaceNotReady) return requeueAfter(5_000);
      throw err;
    }
    return undefined;
  }

  /** The plugin's deploy-service YAML, checked and completed for this runtime (manifest.ts). */
  private async renderManifest(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    plugin: ServicePlugin,
    registration: RuntimeRegistration,
  ): Promise<Manifest> {
    const { namespace, name } = runtime.metadata as { namespace: string; name: string };
    const result = await plugin.deployService({
      registration,
      config: (runtime.spec.config as Record<string, unknown> | undefined) ?? {},
    });
    const singleUser = service.spec.jupyterhub
      ? await this.singleUser(runtime, target, registration)
      : undefined;
    return buildManifest(result, {
      ...(singleUser ? { singleUser } : {}),
      namespace,
      name,
      service: service.metadata!.name!,
      ...(target.local ? { owner: this.ownerOf(runtime) } : {}),
      ...(service.spec.pods ? { pods: service.spec.pods } : {}),
      stopUrl: this.adminUrl(runtime, "stop"),
      audience: this.options.audience ?? RUNTIMES_AUDIENCE,
      ...(service.spec.agent
        ? {
            agent: {
              spec: service.spec.agent,
              image: service.spec.agent.image ?? DEFAULT_RUNTIME_AGENT_IMAGE,
              reportUrl: this.adminUrl(runtime, "activity"),
            },
          }
        : {}),
    });
  }

  /** A single-user server's settings and this start's token Secret (singleuser.ts). */
  private async singleUser(runtime: Runtime, target: Target, registration: RuntimeRegistration) {
    const base = (this.options.adminUrl() ?? "").replace(/\/+$/, "");
    const server: SingleUserServer = {
      user: runtime.spec.user,
      server: serverName(runtime, this.options.informers.runtimes.byIndex(BY_USER, runtime.spec.user)),
      prefix: registration.basePath,
      apiUrl: `${base}/hub/api`,
      secretName: singleUserSecretName(runtime.metadata!.name!),
    };
    const secret = await singleUserSecret(
      this.options.client,
      this.tenantryNamespace,
      target.client,
      runtime,
      server,
    );
    return { server, secret };
  }

  /** deploy-service failed or its YAML was refused: the start fails with why. */
  private async renderFailed(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    registration: RuntimeRegistration,
    err: unknown,
  ): Promise<Outcome> {
    if (err instanceof ManifestError) {
      return this.fail(
        runtime,
        service,
        target,
        status,
        "InvalidManifest",
        `the plugin's YAML was refused: ${err.message}`,
        {
          registration,
        },
      );
    }
    const message = err instanceof PluginError ? err.message : `plugin deploy-service: ${describeError(err)}`;
    return this.fail(runtime, service, target, status, "PluginFailed", message, {});
  }

  /**
   * The manifest's objects applied in the target cluster: undefined when all were. When one is not,
   * what this start created is removed, and the start fails if the API server refused it for good;
   * other errors are thrown (retried).
   */
  private async applyManifest(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    ctx: ReconcileContext,
    manifest: Manifest,
    registration: RuntimeRegistration,
  ): Promise<Outcome | undefined> {
    // What an earlier start made stays if this one fails (a resumed runtime's claims and Secrets).
    const existed = new Set((status.status.objects ?? []).map(objectId));
    try {
      // What a pod refers to (claims, Secrets, ConfigMaps) first, then the workload and its
      // Services; each group at once, since a start waits on every round trip.
      const [refs, rest] = [
        manifest.objects.filter((o) => kindOf(o)?.kept),
        manifest.objects.filter((o) => !kindOf(o)?.kept),
      ];
      for (const group of [refs, rest]) {
        // Every apply settled before a failure is handled: the clean-up below sees all of them.
        const results = await Promise.allSettled(group.map((object) => applyObject(target.client, object)));
        const failed = results.find((r) => r.status === "rejected");
        if (failed) throw failed.reason;
      }
    } catch (err) {
      const failed = describeError(err);
      ctx.logger.warn(
        { err: failed },
        "applying a runtime's objects failed: removing what this start created",
      );
      await this.remove(
        target,
        manifest.objects.filter((o) => kindOf(o)?.kept !== true || !existed.has(objectId(o))),
      );
      if (refused(err)) {
        return this.fail(
          runtime,
          service,
          target,
          status,
          "Refused",
          `the runtime's objects were refused: ${failed}`,
          {
            registration,
          },
        );
      }
      throw err;
    }
    return undefined;
  }

  /** The applied objects (and the kept ones of earlier starts) in the status, and the start Deployed. */
  private recordApplied(
    target: Target,
    status: StatusDraft,
    ctx: ReconcileContext,
    manifest: Manifest,
  ): void {
    const applied = manifest.objects.map((o) => ({
      apiVersion: o.apiVersion!,
      kind: o.kind!,
      name: o.metadata!.name!,
    }));
    const kept = (status.status.objects ?? []).filter(
      (o) => kindOf(o)?.kept && !applied.some((a) => a.kind === o.kind && a.name === o.name),
    );
    status.status.objects = [...applied, ...kept].slice(0, 64);
    ctx.logger.info(
      { cluster: target.name, objects: applied.length, sinceStartMs: sinceStart(status.status.startTime) },
      "runtime deployed",
    );
    status.condition("Deployed", {
      status: "True",
      reason: "Applied",
      message: `${applied.length} objects applied in cluster ${target.name}`,
    });
  }

  /** Follows a deployed start until a pod answers; a start that takes too long fails. */
  private async follow(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    timeoutMs: number,
    remaining: number,
  ): Promise<Outcome> {
    const key = runtimeIndexKey(runtime.metadata!.namespace!, runtime.metadata!.name!);
    const pods = target.pods.byIndex(BY_RUNTIME, key);
    const claims = target.claims.byIndex(BY_RUNTIME, key);
    // Until the first answer only: afterwards the kubelet's probes alone say whether it still answers.
    const answered = (pod: V1Pod) => this.answering.answered(pod, status.status.startedAt ? 0 : remaining);
    let progress = observe({ pods, claims, answered });
    // The kubelet's events tell a long pull's progress: not read (a list call) for a pod just
    // created, whose containers usually start before the next look (PROGRESS_POLL_MS).
    if (
      progress.pod &&
      progress.steps.Pulling.state === "InProgress" &&
      ageMs(progress.pod) >= PROGRESS_POLL_MS
    ) {
      progress = observe({ pods, claims, answered, events: await this.podEvents(target, progress.pod) });
    }
    for (const [name, report] of Object.entries(progress.steps))
      status.step(name as keyof typeof progress.steps, report);
    const current = status.status;
    if (progress.ready) {
      const pod = pods.find((p) => p.metadata?.name === progress.ready!.pod)!;
      const url = endpointUrl(pod, progress.ready.ip);
      const wasRunning = current.phase === "Running";
      current.endpoint = { url, pod: progress.ready.pod };
      if (!wasRunning || !current.startedAt) current.startedAt = formatKubeTime(new Date());
      status.set("Running", "Ready", `answering at ${url}`);
      status.condition("Ready", {
        status: "True",
        reason: "PodReady",
        message: `pod ${progress.ready.pod} is ready`,
      });
      if (!wasRunning) {
        this.logger.info(
          {
            runtime: `${runtime.metadata?.namespace}/${runtime.metadata?.name}`,
            sinceStartMs: sinceStart(current.startTime),
          },
          "runtime running",
        );
        // Not awaited: the Ready status is what a waiting user needs, the Event can follow it.
        void recordRuntimeEvent(
          this.options.client,
          runtime,
          { reason: "Running", message: `pod ${progress.ready.pod} answers at ${url}`, component: COMPONENT },
          this.logger,
        );
      }
      return this.cullOrWait(runtime, service, status);
    }
    delete current.endpoint;
    const waiting = progress.waiting ?? { step: "Ready", message: "waiting for the pod" };
    status.set(
      "Starting",
      current.startedAt ? "NotReady" : "Starting",
      `${waiting.step}: ${waiting.message}`,
    );
    status.condition("Ready", {
      status: "False",
      reason: current.startedAt ? "PodNotReady" : "Starting",
      message: waiting.message,
    });
    // Once it has answered, a pod that stops answering is waited for without a deadline.
    if (!current.startedAt && remaining <= 0)
      return this.timeOut(runtime, service, target, status, timeoutMs);
    if (current.startedAt) return requeueAfter(30_000);
    return requeueAfter(Math.max(100, Math.min(remaining, PROGRESS_POLL_MS)));
  }

  // --- culling ---------------------------------------------------------------------------------

  /** A running runtime past its idle timeout or maximum age is stopped; otherwise looked at again then. */
  private async cullOrWait(runtime: Runtime, service: RuntimeService, status: StatusDraft): Promise<Outcome> {
    const view = { status: { ...status.status, lastActivity: runtime.status?.lastActivity } };
    const decision = cullDecision(
      view,
      cullingLimits(service, runtime, this.options.idleCulledBy),
      Date.now(),
      this.options.activityLagMs ?? 30_000,
    );
    if (!decision.cull) {
      if (decision.recheckMs === undefined) return reconcileDone();
      // Activity or a change brings it back sooner; far deadlines are looked at again within hours.
      return requeueAfter(Math.min(decision.recheckMs + 50, MAX_RECHECK_MS));
    }
    const culled = await cullRuntime(this.options.client, runtime, decision.message, this.logger, COMPONENT);
    // Changed meanwhile (activity written, a stop): decided again on the new version.
    return culled ? reconcileDone() : requeueAfter(200);
  }

  private async timeOut(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    timeoutMs: number,
  ): Promise<Outcome> {
    const message = status.status.message ?? "";
    // The plugin is told only of a start it deployed.
    const deployed = findCondition(status.status.conditions, "Deployed")?.status === "True";
    return this.fail(
      runtime,
      service,
      target,
      status,
      "StartTimeout",
      `not running after ${timeoutMs / 1000} s (startTimeoutSeconds): ${message}`,
      {
        ...(deployed ? { registration: this.registration(runtime, target, status.status.route?.token) } : {}),
        teardown: true,
      },
    );
  }

  /**
   * The start failed: its workload goes (data stays, as for a stop), the plugin is told the session
   * is over if it was deployed, and the runtime is Failed until asked to start again.
   */
  private async fail(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    reason: string,
    message: string,
    { registration, teardown = false }: { registration?: RuntimeRegistration; teardown?: boolean },
  ): Promise<Outcome> {
    if (teardown) await this.removeWorkload(target, runtime);
    if (registration) {
      const plugin = this.options.plugins.pluginOf(service);
      if (plugin.deregisterService) {
        await plugin
          .deregisterService(registration)
          .catch((err: unknown) =>
            this.warn(
              runtime,
              "DeregisterFailed",
              `deregister-service after a failed start: ${describeError(err)}`,
            ),
          );
      }
    }
    status.failStep(message);
    status.set("Failed", reason, message);
    status.endSession();
    status.condition("Ready", { status: "False", reason, message });
    status.condition("Deployed", { status: "False", reason, message });
    status.status.observedGeneration = status.generation;
    await this.warn(runtime, reason, message);
    return reconcileDone();
  }

  // --- stopping --------------------------------------------------------------------------------

  private async stopRuntime(
    runtime: Runtime,
    service: RuntimeService,
    target: Target,
    status: StatusDraft,
    ctx: ReconcileContext,
  ): Promise<Outcome> {
    const current = status.status;
    // A gate on a stopped runtime says why it stopped (torn down while idle, its data in a backup).
    const why = startGateOf(runtime) ??
      culledOf(runtime) ?? {
        reason: "Stopped",
        message: "stopped; volumes and secrets kept: the next start resumes with them",
      };
    if (
      current.phase === "Stopped" &&
      current.observedGeneration === status.generation &&
      current.reason === why.reason &&
      current.message === why.message
    )
      return reconcileDone();
    await this.removeWorkload(target, runtime);
    // As JupyterHub at a server's stop: its API token and the OAuth tokens for it are revoked.
    if (service.spec.jupyterhub)
      await revokeSingleUserTokens(this.options.client, this.tenantryNamespace, runtime);
    delete current.endpoint;
    delete current.startedAt;
    status.condition("Ready", { status: "False", reason: "Stopped", message: "the runtime is stopped" });
    status.condition("Deployed", {
      status: "False",
      reason: "Stopped",
      message: "deployment and service removed; volumes and secrets kept",
    });
    current.observedGeneration = status.generation;
    if (current.route?.token) {
      const retry = await this.deregister(
        ctx.key,
        runtime,
        service,
        this.registration(runtime, target, current.route.token),
      );
      if (retry) {
        status.set("Stopping", "Deregistering", retry.message);
        return requeueAfter(retry.ms);
      }
      status.endSession();
    }
    const left = target.pods.byIndex(
      BY_RUNTIME,
      runtimeIndexKey(runtime.metadata!.namespace!, runtime.metadata!.name!),
    );
    if (left.length) {
      status.set(
        "Stopping",
        "PodsTerminating",
        `waiting for pod ${left.map((p) => p.metadata?.name).join(", ")} to stop`,
      );
      return requeueAfter(5_000);
    }
    status.resetSteps();
    status.set("Stopped", why.reason, why.message);
    return reconcileDone();
  }

  // --- deleting --------------------------------------------------------------------------------

  private async finalize(
    runtime: Runtime,
    service: RuntimeService | undefined,
    status: StatusDraft,
    ctx: ReconcileContext,
  ): Promise<Outcome> {
    if (!runtime.metadata?.finalizers?.includes(RUNTIME_FINALIZER)) {
      status.gone = true;
      return reconcileDone();
    }
    status.set("Deleting", "Deleting", "deleting everything the runtime created");
    status.endSession();
    // Without its service the runtimes cluster is unknown: only this cluster can be cleaned.
    const target = service ? await this.targets.of(service) : this.targets.local;
    await this.removeAll(target, runtime);
    await revokeSingleUserTokens(this.options.client, this.tenantryNamespace, runtime);
    if (service) {
      const token = runtime.status?.route?.token;
      const retry = await this.deregister(
        ctx.key,
        runtime,
        service,
        this.registration(runtime, target, token),
      );
      if (retry) {
        status.status.message = retry.message;
        return requeueAfter(retry.ms);
      }
    } else {
      ctx.logger.warn(
        { service: runtime.spec.service },
        "the runtime's service is gone: deregister-service skipped",
      );
    }
    const resourceVersion = await status.write(this.options.client);
    status.gone = true;
    await removeFinalizer(
      this.options.client.objects,
      runtimeRef(runtime),
      RUNTIME_FINALIZER,
      resourceVersion,
    );
    this.written.set(ctx.key, { uid: runtime.metadata.uid!, status: status.status, finalized: true });
    return reconcileDone();
  }

  // --- helpers ---------------------------------------------------------------------------------

  /**
   * deregister-service, tried again on a schedule when it fails and given up (with a Warning Event)
   * after a few attempts, so that a broken plugin cannot keep a runtime from stopping or going.
   * Undefined when done (or given up); when to try again otherwise.
   */
  private async deregister(
    key: string,
    runtime: Runtime,
    service: RuntimeService,
    registration: RuntimeRegistration,
  ): Promise<{ ms: number; message: string } | undefined> {
    const plugin = this.options.plugins.pluginOf(service);
    if (!plugin.deregisterService) return undefined;
    try {
      await plugin.deregisterService(registration);
      this.deregisterFailures.delete(key);
      return undefined;
    } catch (err) {
      const attempts = (this.deregisterFailures.get(key) ?? 0) + 1;
      const message = `deregister-service failed (attempt ${attempts} of ${DEREGISTER_ATTEMPTS}): ${describeError(err)}`;
      if (attempts >= DEREGISTER_ATTEMPTS) {
        this.deregisterFailures.delete(key);
        await this.warn(runtime, "DeregisterFailed", `${message}; going on without it`);
        return undefined;
      }
      this.deregisterFailures.set(key, attempts);
      return { ms: exponentialDelay(attempts - 1, 1000, 60_000), message };
    }
  }

  private registration(runtime: Runtime, target: Target, token: string | undefined): RuntimeRegistration {
    return {
      user: runtime.spec.user,
      tenant: runtime.spec.tenant,
      service: runtime.spec.service,
      instance: runtime.spec.instance,
      namespace: runtime.metadata!.namespace!,
      name: runtime.metadata!.name!,
      cluster: target.name,
      basePath: token ? `/r/${token}/` : "",
    };
  }

  /** `<Admin API>/services/<user>/<service>/<instance>/<action>`, as runtime pods reach it. */
  private adminUrl(runtime: Runtime, action: "stop" | "activity"): string {
    const base = (this.options.adminUrl() ?? "").replace(/\/+$/, "");
    const { user, service, instance } = runtime.spec;
    return `${base}/services/${encodeURIComponent(user)}/${service}/${instance}/${action}`;
  }

  private ownerOf(runtime: Runtime): V1OwnerReference {
    return {
      apiVersion: TENANTS_API_VERSION,
      kind: "Runtime",
      name: runtime.metadata!.name!,
      uid: runtime.metadata!.uid!,
      controller: true,
      blockOwnerDeletion: false,
    };
  }

  private async podEvents(target: Target, pod: V1Pod) {
    try {
      const list = await target.client.core.listNamespacedEvent({
        namespace: pod.metadata!.namespace!,
        fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${pod.metadata!.name}`,
      });
      return list.items
        .filter(
          (e) => !pod.metadata?.uid || !e.involvedObject.uid || e.involvedObject.uid === pod.metadata.uid,
        )
        .sort((a, b) => eventTime(a) - eventTime(b));
    } catch (err) {
      this.logger.debug({ err: describeError(err) }, "could not read a runtime pod's events");
      return [];
    }
  }

  /** The workload and its Services (what a stop removes). */
  private removeWorkload(target: Target, runtime: Runtime): Promise<void> {
    return this.removeLabelled(target, runtime, (kind) => !kind.kept);
  }

  /** Everything the runtime created (what a deletion removes). */
  private removeAll(target: Target, runtime: Runtime): Promise<void> {
    return this.removeLabelled(target, runtime, () => true);
  }

  private async removeLabelled(
    target: Target,
    runtime: Runtime,
    which: (kind: (typeof ALLOWED_KINDS)[number]) => boolean,
  ): Promise<void> {
    const namespace = runtime.metadata!.namespace!;
    const selector = `${RUNTIME_LABEL}=${runtime.metadata!.name}`;
    const found: KubernetesObject[] = [];
    for (const kind of ALLOWED_KINDS.filter(which)) {
      const list = await target.client.objects.list(
        kind.apiVersion,
        kind.kind,
        namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        selector,
      );
      for (const item of list.items) {
        if (!item.metadata?.deletionTimestamp)
          found.push({ ...item, apiVersion: kind.apiVersion, kind: kind.kind });
      }
    }
    await this.remove(target, found);
  }

  private async remove(target: Target, objects: KubernetesObject[]): Promise<void> {
    for (const object of objects) {
      await ignoreNotFound(
        target.client.objects.delete(
          {
            apiVersion: object.apiVersion,
            kind: object.kind,
            metadata: { name: object.metadata!.name!, namespace: object.metadata!.namespace! },
          },
          undefined,
          undefined,
          undefined,
          undefined,
          "Background",
        ),
      );
    }
  }

  /** Sets the Runtime's finalizers; the resourceVersion makes it fail on a concurrent change (retried). */
  private warn(runtime: Runtime, reason: string, message: string): Promise<void> {
    return recordRuntimeEvent(
      this.options.client,
      runtime,
      { reason, message, type: "Warning", component: COMPONENT },
      this.logger,
    );
  }
}

function objectId(object: { kind?: string; name?: string; metadata?: { name?: string } }): string {
  return `${object.kind}/${object.metadata?.name ?? object.name}`;
}

function sinceStart(startTime: string | undefined): number | undefined {
  return startTime ? Date.now() - Date.parse(startTime) : undefined;
}

function eventTime(event: {
  lastTimestamp?: Date | string;
  eventTime?: Date | string;
  metadata?: { creationTimestamp?: Date | string };
}) {
  return Date.parse(String(event.lastTimestamp ?? event.eventTime ?? event.metadata?.creationTimestamp ?? 0));
}

/** `http://<pod IP>:<port><path>` from the pod's endpoint annotation (or its first container port). */
/** How long ago a pod was created (its timestamp has whole seconds). */
function ageMs(pod: V1Pod): number {
  return Date.now() - Date.parse(String(pod.metadata?.creationTimestamp ?? new Date().toISOString()));
}

export function endpointUrl(pod: V1Pod, ip: string): string {
  let endpoint: { port?: number; path?: string } = {};
  try {
    endpoint = JSON.parse(pod.metadata?.annotations?.[ENDPOINT_ANNOTATION] ?? "{}");
  } catch {
    endpoint = {};
  }
  const port = endpoint.port ?? pod.spec?.containers.flatMap((c) => c.ports ?? [])[0]?.containerPort ?? 80;
  const host = ip.includes(":") ? `[${ip}]` : ip;
  return `http://${host}:${port}${endpoint.path ?? ""}`;
}

/** A cached Runtime as the object API addresses it (a list's items may come without kind). */
const runtimeRef = (runtime: Runtime): Runtime => ({
  ...runtime,
  apiVersion: TENANTS_API_VERSION,
  kind: "Runtime",
});
