/**
 * The NamespaceOffloading controller (Liqo thesis, figure 6.2, steps 1–2): turns each
 * NamespaceOffloading into replication requests in the NamespaceMaps of the peers its
 * clusterSelector selects, again whenever virtual nodes come, go or change labels; on deletion
 * withdraws them and keeps the finalizer until every replica is gone (6.1.3). Also creates the
 * default NamespaceOffloading for namespaces that carry the offloading label (4.3).
 */
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  addFinalizer,
  type ClusterClient,
  type Controller,
  ignoreNotFound,
  isAlreadyExists,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  removeFinalizer,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { NAMESPACE_OFFLOADING_NAME, type NamespaceMap, type NamespaceOffloading } from "../api/offloading.js";
import { type MulticlusterInformers, offloadingController } from "../informers.js";
import { selectorMatches } from "../selectors.js";
import { PEERING_LABEL } from "../virtual-node.js";
import {
  CREATED_BY_LABEL_ANNOTATION,
  OFFLOADED_NAMESPACE_LABEL,
  OFFLOADING_ENABLED_LABEL,
  OFFLOADING_ENABLED_VALUE,
  OFFLOADING_FINALIZER,
} from "./labels.js";
import { remoteNamespaceName } from "./names.js";
import { clusterSelectorOf } from "./pod-placement.js";
import { namespacesOfMap, peeringOfMap } from "./replicas.js";

export interface OffloadingControllerOptions {
  client: ClusterClient;
  informers: MulticlusterInformers;
  clusterId: string;
  logger: Logger;
  workers?: number;
}

/** Peerings whose virtual node the offloading's clusterSelector selects. */
export function selectedPeerings(
  offloading: NamespaceOffloading,
  informers: MulticlusterInformers,
): Set<string> {
  const selector = clusterSelectorOf(offloading.spec);
  const selected = new Set<string>();
  for (const node of informers.virtualNodes.list()) {
    const peering = node.metadata?.labels?.[PEERING_LABEL];
    if (peering && informers.peerings.get(undefined, peering) && selectorMatches(selector, node)) {
      selected.add(peering);
    }
  }
  return selected;
}

export class OffloadingController {
  private readonly controller: Controller;
  private readonly cluster: string;

  constructor(private readonly options: OffloadingControllerOptions) {
    const { informers } = options;
    this.cluster = options.client.name;
    this.controller = offloadingController("namespace-offloading", options, 4, (ctx) => this.reconcile(ctx));
    this.controller.watch(informers.offloadings);
    this.controller.watch(informers.labelledNamespaces, (ns) => [this.key(ns.metadata!.name!)]);
    this.controller.watch(informers.offloadedNamespaces, (ns) => [this.key(ns.metadata!.name!)]);
    // A virtual node joining, leaving or relabelled may change every offloading's selection.
    const everyOffloading = () => informers.offloadings.list().map((o) => this.key(o.metadata!.namespace!));
    this.controller.watch(informers.virtualNodes, everyOffloading);
    this.controller.watch(informers.peerings, everyOffloading);
    // Map changes: to withdraw requests and to release finalizers once replicas are gone.
    this.controller.watch(informers.maps, (map) => namespacesOfMap(map).map((ns) => this.key(ns)));
  }

  start(): Promise<void> {
    return this.controller.start();
  }

  stop(): Promise<void> {
    return this.controller.stop();
  }

  private key(namespace: string): string {
    return objectKey(this.cluster, namespace, NAMESPACE_OFFLOADING_NAME);
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const namespace = ctx.ref.namespace!;
    const { informers } = this.options;
    await this.followNamespaceLabel(namespace, ctx);
    const offloading = informers.offloadingOf(namespace);
    if (!offloading || offloading.metadata?.deletionTimestamp) {
      await this.markOffloaded(namespace, false);
      await this.setRequests(namespace, new Map());
      if (offloading && !this.anyReplica(namespace))
        await removeFinalizer(this.options.client.objects, offloading, OFFLOADING_FINALIZER);
      return reconcileDone();
    }
    await addFinalizer(this.options.client.objects, offloading, OFFLOADING_FINALIZER);
    await this.markOffloaded(namespace, true);
    const remote = remoteNamespaceName(offloading.spec, namespace, this.options.clusterId);
    const requests = new Map<string, string>();
    // An impossible name is reported by the status controller; no peer is asked for it.
    if (remote.name)
      for (const peering of selectedPeerings(offloading, informers)) requests.set(peering, remote.name);
    await this.setRequests(namespace, requests);
    return reconcileDone();
  }

  /** Puts the namespace in (or out of) the pod webhook's scope. A merge patch: the tenant controller applies the namespace's other labels. */
  private async markOffloaded(namespace: string, offloaded: boolean): Promise<void> {
    const marked = this.options.informers.offloadedNamespaces.get(undefined, namespace) !== undefined;
    if (marked === offloaded) return;
    await ignoreNotFound(
      this.options.client.core.patchNamespace(
        {
          name: namespace,
          body: { metadata: { labels: { [OFFLOADED_NAMESPACE_LABEL]: offloaded ? "true" : null } } },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      ),
    );
  }

  /** Makes `namespace` requested exactly in the maps of `requests` (peering → remote name). */
  private async setRequests(namespace: string, requests: Map<string, string>): Promise<void> {
    const patches: Promise<unknown>[] = [];
    for (const map of this.options.informers.maps.list()) {
      const wanted = requests.get(peeringOfMap(map)) ?? null;
      const current = map.spec?.desiredMapping?.[namespace] ?? null;
      if (wanted === current) continue;
      patches.push(this.patchDesired(map, namespace, wanted));
    }
    await Promise.all(patches);
  }

  private async patchDesired(map: NamespaceMap, namespace: string, remote: string | null): Promise<void> {
    try {
      // A merge patch touches one key only: offloadings of other namespaces write the same map concurrently.
      await this.options.client.objects.patchRaw(
        {
          apiVersion: TENANTS_API_VERSION,
          kind: "NamespaceMap",
          metadata: { name: map.metadata!.name!, namespace: map.metadata!.namespace! },
          spec: { desiredMapping: { [namespace]: remote } },
        } as never,
        PatchStrategy.MergePatch,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /** Whether any map still holds (or is removing) a replica of `namespace`. */
  private anyReplica(namespace: string): boolean {
    return this.options.informers.maps
      .list()
      .some(
        (m) => m.spec?.desiredMapping?.[namespace] !== undefined || m.status?.currentMapping?.[namespace],
      );
  }

  /** The namespace label asks for the default offloading; removing the label withdraws it. */
  private async followNamespaceLabel(namespace: string, ctx: ReconcileContext): Promise<void> {
    const { informers, client } = this.options;
    const labelled =
      informers.labelledNamespaces.get(undefined, namespace)?.metadata?.labels?.[OFFLOADING_ENABLED_LABEL] ===
      OFFLOADING_ENABLED_VALUE;
    const offloading = informers.offloadingOf(namespace);
    if (labelled && !offloading) {
      try {
        await client.objects.create({
          apiVersion: TENANTS_API_VERSION,
          kind: "NamespaceOffloading",
          metadata: {
            name: NAMESPACE_OFFLOADING_NAME,
            namespace,
            annotations: { [CREATED_BY_LABEL_ANNOTATION]: "true" },
          },
          spec: {},
        } as never);
        ctx.logger.info({ namespace }, "default NamespaceOffloading created for the namespace label");
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
    } else if (
      !labelled &&
      offloading?.metadata?.annotations?.[CREATED_BY_LABEL_ANNOTATION] === "true" &&
      !offloading.metadata.deletionTimestamp
    ) {
      await client.objects.delete(offloading).catch((err) => {
        if (!isNotFound(err)) throw err;
      });
      ctx.logger.info({ namespace }, "NamespaceOffloading removed with the namespace label");
    }
  }
}
