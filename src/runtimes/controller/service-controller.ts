/**
 * The RuntimeService controller: calls the plugin's init when a service appears or changes and
 * writes what it said (`status.capabilities`, condition Ready with the plugin's error when it
 * failed); keeps the image pre-pull DaemonSet in the service's runtimes cluster — one init
 * container per image the plugin's image-pull names (`command: ["true"]`: pulling is the point), a
 * pause container, placed by `spec.pods` on every eligible node — and drops the images image-cleanup
 * lets go. A service is deleted only once none of its runtimes is left (finalizer), and its
 * DaemonSet with it.
 */
import type { KubernetesObject, V1DaemonSet } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  addFinalizer,
  applyIfChanged,
  applyStatusUnlessGone,
  type ClusterClient,
  type Condition,
  Controller,
  describeError,
  findCondition,
  ignoreNotFound,
  isAlreadyExists,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  removeFinalizer,
  requeueAfter,
  sameStoredJson,
  setCondition,
} from "../../kube/index.js";
import { MANAGED_BY, MANAGED_BY_LABEL, TENANTS_API_VERSION } from "../../tenants/index.js";
import { fitLabel } from "../api/placement.js";
import type { RuntimeService, RuntimeServiceStatus } from "../api/runtime-service.js";
import { KubeconfigClients } from "../clusters.js";
import { BY_SERVICE, type RuntimesInformers } from "../informers.js";
import type { PluginRegistry } from "../plugins/registry.js";
import { RUNTIME_SERVICE_LABEL, type ServicePlugin } from "../plugins/spi.js";

export const SERVICE_FINALIZER = "tenantry.dev/runtimes-in-use";
/** The pause image the pre-pull DaemonSet's main container runs. */
export const DEFAULT_PAUSE_IMAGE = "registry.k8s.io/pause:3.10";
const PREPULL_LABEL = "tenantry.dev/prepull";
const MAX_IMAGES = 64;
/** image-pull is asked again this often (the images a plugin wants may change with its releases). */
const IMAGE_REFRESH_MS = 10 * 60_000;

export interface RuntimeServiceControllerOptions {
  client: ClusterClient;
  informers: RuntimesInformers;
  plugins: PluginRegistry;
  tenantryNamespace?: string;
  pauseImage?: string;
  logger: Logger;
  workers?: number;
}

export function prePullName(service: string): string {
  return fitLabel(`tenantry-prepull-${service}`);
}

export class RuntimeServiceController {
  private readonly controller: Controller;
  private readonly clients: KubeconfigClients;
  private readonly namespace: string;
  private readonly cluster: string;
  /** The plugin reference each service's init last answered for (init runs again when it changes). */
  private readonly initialized = new Map<string, string>();

  constructor(private readonly options: RuntimeServiceControllerOptions) {
    const { client, informers } = options;
    this.cluster = client.name;
    this.namespace = options.tenantryNamespace ?? "tenantry-system";
    this.clients = new KubeconfigClients(client, this.namespace);
    this.controller = new Controller({
      name: "runtime-services",
      workers: options.workers ?? 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(informers.services);
    // A service being deleted waits for its last runtime to go.
    this.controller.watch(informers.runtimes, (runtime) => {
      const service = informers.services.get(undefined, runtime.spec?.service ?? "");
      return service?.metadata?.deletionTimestamp
        ? [objectKey(this.cluster, undefined, service.metadata.name!)]
        : [];
    });
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const name = ctx.ref.name;
    const service = this.options.informers.services.get(undefined, name);
    if (!service) {
      this.initialized.delete(name);
      this.options.plugins.forget(name);
      return reconcileDone();
    }
    const status: RuntimeServiceStatus = structuredClone(service.status ?? {});
    try {
      if (service.metadata?.deletionTimestamp) {
        const outcome = await this.finalize(service, status);
        // Gone once its finalizer is removed: no status to write.
        if (outcome === "gone") return reconcileDone();
        await this.writeStatus(service, status);
        return outcome;
      }
      const outcome = await this.keep(service, status, ctx);
      await this.writeStatus(service, status);
      return outcome;
    } catch (err) {
      await this.writeStatus(service, status).catch((writeErr: unknown) =>
        ctx.logger.warn({ err: describeError(writeErr) }, "could not write a service's status"),
      );
      throw err;
    }
  }

  private async keep(
    service: RuntimeService,
    status: RuntimeServiceStatus,
    ctx: ReconcileContext,
  ): Promise<ReconcileResult> {
    const name = service.metadata!.name!;
    await addFinalizer(this.options.client.objects, serviceRef(service), SERVICE_FINALIZER);
    const generation = service.metadata?.generation ?? 0;
    status.observedGeneration = generation;
    const ref = JSON.stringify(service.spec.plugin);
    const ready = findCondition(status.conditions as Condition[] | undefined, "Ready");
    if (
      ready?.status !== "True" ||
      ready.observedGeneration !== generation ||
      this.initialized.get(name) !== ref
    ) {
      const transport = this.options.plugins.transportOf(service);
      try {
        const { capabilities } = await transport.init();
        status.capabilities = [...new Set(capabilities)].sort();
        this.condition(status, generation, {
          type: "Ready",
          status: "True",
          reason: "Initialized",
          message: `the plugin implements ${status.capabilities.join(", ") || "init only"}`,
        });
        this.initialized.set(name, ref);
      } catch (err) {
        delete status.capabilities;
        this.condition(status, generation, {
          type: "Ready",
          status: "False",
          reason: "InitFailed",
          message: describeError(err).slice(0, 4000),
        });
        throw err;
      }
    }
    // The view the runtimes use: only what init said the plugin implements.
    const plugin = this.options.plugins.pluginOf({ ...service, status });
    try {
      return await this.prePull(service, status, plugin, generation);
    } catch (err) {
      this.condition(status, generation, {
        type: "ImagesPulled",
        status: "False",
        reason: "PrePullFailed",
        message: describeError(err).slice(0, 4000),
      });
      ctx.logger.warn({ err: describeError(err) }, "image pre-pull failed");
      return requeueAfter(30_000);
    }
  }

  /** The pre-pull DaemonSet as image-pull and image-cleanup say, and whether it is done. */
  private async prePull(
    service: RuntimeService,
    status: RuntimeServiceStatus,
    plugin: ServicePlugin,
    generation: number,
  ): Promise<ReconcileResult> {
    const name = service.metadata!.name!;
    const client = await this.clientOf(service);
    const ref = {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: prePullName(name), namespace: this.namespace },
    };
    let current: V1DaemonSet | undefined;
    try {
      current = (await client.objects.read(ref)) as V1DaemonSet;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const present = (current?.spec?.template.spec?.initContainers ?? []).map((c) => c.image!).filter(Boolean);
    const defaults = (service.spec.defaults as Record<string, unknown> | undefined) ?? {};
    let images: string[] = [];
    if (plugin.imagePull) {
      const wanted = [
        ...new Set((await plugin.imagePull({ service: name, defaults, images: present })).images),
      ];
      const stale = present.filter((image) => !wanted.includes(image));
      const dropped = stale.length
        ? plugin.imageCleanup
          ? (await plugin.imageCleanup({ service: name, defaults, images: stale })).images
          : stale
        : [];
      images = [...wanted, ...stale.filter((image) => !dropped.includes(image))].slice(0, MAX_IMAGES);
    }
    if (images.length === 0) {
      if (current) await this.removeDaemonSet(client, ref);
      delete status.prePull;
      status.conditions = (status.conditions ?? []).filter((c) => c.type !== "ImagesPulled");
      return requeueAfter(IMAGE_REFRESH_MS);
    }
    await this.ensureNamespace(client);
    const desired = this.daemonSet(service, images, client === this.options.client);
    await applyIfChanged(client, desired, current as KubernetesObject | undefined);
    status.prePull = { daemonSet: `${this.namespace}/${prePullName(name)}`, images };
    const scheduled = current?.status?.desiredNumberScheduled ?? 0;
    const ready = current?.status?.numberReady ?? 0;
    const upToDate =
      !!current &&
      current.status?.observedGeneration === current.metadata?.generation &&
      sameStoredJson(present, images) &&
      ready >= scheduled;
    this.condition(status, generation, {
      type: "ImagesPulled",
      status: upToDate ? "True" : "False",
      reason: upToDate ? "Pulled" : "Pulling",
      message: `${images.length} image${images.length > 1 ? "s" : ""} on ${ready} of ${scheduled} eligible nodes`,
    });
    return requeueAfter(upToDate ? IMAGE_REFRESH_MS : 10_000);
  }

  private daemonSet(service: RuntimeService, images: string[], local: boolean): KubernetesObject {
    const name = service.metadata!.name!;
    const labels = { [PREPULL_LABEL]: fitLabel(name) };
    const pods = service.spec.pods ?? {};
    const small = { requests: { cpu: "1m", memory: "8Mi" }, limits: { cpu: "100m", memory: "64Mi" } };
    return {
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: {
        name: prePullName(name),
        namespace: this.namespace,
        labels: { ...labels, [RUNTIME_SERVICE_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY },
        ...(local
          ? {
              ownerReferences: [
                {
                  apiVersion: TENANTS_API_VERSION,
                  kind: "RuntimeService",
                  name,
                  uid: service.metadata!.uid!,
                  controller: true,
                  blockOwnerDeletion: false,
                },
              ],
            }
          : {}),
      },
      spec: {
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 0,
            // Each image pulled by a container that does nothing: the kubelet keeps the image.
            initContainers: images.map((image, i) => ({
              name: `pull-${i}`,
              image,
              command: ["true"],
              resources: small,
            })),
            containers: [
              { name: "pause", image: this.options.pauseImage ?? DEFAULT_PAUSE_IMAGE, resources: small },
            ],
            ...(pods.nodeSelector ? { nodeSelector: pods.nodeSelector } : {}),
            ...(pods.tolerations?.length ? { tolerations: pods.tolerations } : {}),
            ...(pods.priorityClassName ? { priorityClassName: pods.priorityClassName } : {}),
          },
        },
      },
    } as KubernetesObject;
  }

  private async finalize(
    service: RuntimeService,
    status: RuntimeServiceStatus,
  ): Promise<ReconcileResult | "gone"> {
    const name = service.metadata!.name!;
    if (!service.metadata?.finalizers?.includes(SERVICE_FINALIZER)) return reconcileDone();
    const left = this.options.informers.runtimes.byIndex(BY_SERVICE, name);
    if (left.length) {
      this.condition(status, service.metadata?.generation ?? 0, {
        type: "Ready",
        status: "False",
        reason: "Deleting",
        message: `deleted once its ${left.length} runtime${left.length > 1 ? "s are" : " is"} gone: ${left
          .slice(0, 5)
          .map((r) => `${r.metadata?.namespace}/${r.metadata?.name}`)
          .join(", ")}${left.length > 5 ? ", …" : ""}`,
      });
      return requeueAfter(30_000);
    }
    try {
      const client = await this.clientOf(service);
      await this.removeDaemonSet(client, {
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: { name: prePullName(name), namespace: this.namespace },
      });
    } catch (err) {
      // A runtimes cluster gone for good must not keep the service forever.
      this.options.logger.warn(
        { err: describeError(err), service: name },
        "could not remove the pre-pull DaemonSet",
      );
    }
    await removeFinalizer(this.options.client.objects, serviceRef(service), SERVICE_FINALIZER);
    this.initialized.delete(name);
    this.options.plugins.forget(name);
    return "gone";
  }

  private async clientOf(service: RuntimeService): Promise<ClusterClient> {
    return (await this.clients.of(service))?.client ?? this.options.client;
  }

  private async ensureNamespace(client: ClusterClient): Promise<void> {
    try {
      await client.core.readNamespace({ name: this.namespace });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await client.core.createNamespace({ body: { metadata: { name: this.namespace } } });
      } catch (createErr) {
        if (!isAlreadyExists(createErr)) throw createErr;
      }
    }
  }

  private async removeDaemonSet(
    client: ClusterClient,
    ref: KubernetesObject & { metadata: { name: string } },
  ) {
    await ignoreNotFound(client.objects.delete(ref));
  }

  private condition(
    status: RuntimeServiceStatus,
    generation: number,
    update: Omit<Condition, "lastTransitionTime" | "observedGeneration">,
  ): void {
    status.conditions = setCondition(
      status.conditions as Condition[] | undefined,
      { ...update, observedGeneration: generation },
      new Date(),
    );
  }

  private async writeStatus(service: RuntimeService, status: RuntimeServiceStatus): Promise<void> {
    if (sameStoredJson(status, service.status ?? {})) return;
    await applyStatusUnlessGone(this.options.client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeService",
      metadata: { name: service.metadata!.name! },
      status,
    });
  }
}

/** A cached RuntimeService as the object API addresses it (a list's items may come without kind). */
const serviceRef = (service: RuntimeService): RuntimeService => ({
  ...service,
  apiVersion: TENANTS_API_VERSION,
  kind: "RuntimeService",
});
