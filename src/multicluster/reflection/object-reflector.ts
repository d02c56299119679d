/**
 * Keeps a copy of every Service, ConfigMap or Secret (one reflector per kind) of an offloaded
 * namespace in each of its replica namespaces. Keys are `<peering>/<namespace>/<name>`: one per
 * object and peer, so a peer that is down backs off alone. `<peering>/<namespace>/*` prunes the
 * copies whose source is gone.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  applyObject,
  type ClusterClient,
  Controller,
  describeError,
  Informer,
  isNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
  requeueAfter,
  statusCode,
} from "../../kube/index.js";
import type { NamespaceMap } from "../api/offloading.js";
import { acceptedReplica, acceptedReplicas, type NamespaceReplica } from "../offloading/replicas.js";
import type { PeerClients } from "../peer-clients.js";
import { originSelector } from "./labels.js";
import {
  isReflected,
  LOCAL_FIELD_SELECTORS,
  type ReflectedKind,
  reflectedCopy,
} from "./object-translation.js";
import { newlyAccepted, REMOTE_RATE_LIMITER } from "./replicas.js";

/** Not a valid object name: the key that prunes a replica namespace. */
const PRUNE = "*";

export interface ObjectReflectorOptions {
  kind: ReflectedKind;
  client: ClusterClient;
  logger: Logger;
  originClusterId: string;
  peerClients: PeerClients;
  /** NamespaceMaps (tenantry's namespace), shared. */
  maps: Informer<NamespaceMap>;
  /** How often every replica namespace is pruned even when nothing was deleted. Default 5 minutes. */
  pruneIntervalMs?: number;
  workers?: number;
  /** The local objects of the kind from a shared cache (started and stopped by its owner), instead of an own informer. */
  shared?: Informer<KubernetesObject>;
}

export class ObjectReflector {
  private readonly kind: ReflectedKind;
  private readonly logger: Logger;
  private readonly objects: Informer<KubernetesObject>;
  private readonly controller: Controller;
  private readonly pruneIntervalMs: number;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: ObjectReflectorOptions) {
    this.kind = options.kind;
    this.logger = options.logger.child({ component: "object-reflection", kind: options.kind });
    this.pruneIntervalMs = options.pruneIntervalMs ?? 300_000;
    const fieldSelector = LOCAL_FIELD_SELECTORS[this.kind];
    this.objects =
      options.shared ??
      Informer.forResource<KubernetesObject>(
        options.client,
        { apiVersion: "v1", kind: this.kind, ...(fieldSelector ? { fieldSelector } : {}) },
        { logger: this.logger },
      );
    this.controller = new Controller({
      name: `reflect-${this.kind.toLowerCase()}s`,
      rateLimiter: REMOTE_RATE_LIMITER(),
      workers: options.workers ?? 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(this.objects, (obj) => {
      const namespace = obj.metadata?.namespace;
      if (!namespace) return [];
      return acceptedReplicas(options.maps.list(), namespace).map((r) =>
        objectKey(r.peering, namespace, obj.metadata!.name!),
      );
    });
    this.unsubscribe = options.maps.addHandler({
      onAdd: (map) => this.replicasAccepted(newlyAccepted(undefined, map)),
      onUpdate: (old, map) => this.replicasAccepted(newlyAccepted(old, map)),
    });
  }

  async start(): Promise<void> {
    if (!this.options.shared) this.objects.start();
    await this.controller.start();
  }

  async stop(): Promise<void> {
    this.unsubscribe();
    await this.controller.stop();
    if (!this.options.shared) await this.objects.stop();
  }

  /** A new replica gets every object of its namespace, and loses what it holds from an earlier life. */
  private replicasAccepted(replicas: NamespaceReplica[]): void {
    for (const replica of replicas) {
      this.controller.enqueue(objectKey(replica.peering, replica.localNamespace, PRUNE));
      for (const obj of this.objects.list()) {
        if (obj.metadata?.namespace !== replica.localNamespace) continue;
        this.controller.enqueue(objectKey(replica.peering, replica.localNamespace, obj.metadata!.name!));
      }
    }
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const peering = ctx.ref.cluster;
    const namespace = ctx.ref.namespace!;
    const replica = acceptedReplica(this.options.maps.list(), namespace, peering);
    if (!replica) return reconcileDone();
    if (ctx.ref.name === PRUNE) {
      await this.prune(replica);
      return requeueAfter(this.pruneIntervalMs);
    }
    const local = this.objects.get(namespace, ctx.ref.name);
    const copy =
      local &&
      reflectedCopy(this.kind, local, {
        remoteNamespace: replica.remoteNamespace,
        originClusterId: this.options.originClusterId,
      });
    if (!copy) {
      this.controller.enqueue(objectKey(peering, namespace, PRUNE));
      return reconcileDone();
    }
    const { client } = this.options.peerClients.clientFor(peering);
    try {
      await applyObject(client, copy);
    } catch (err) {
      this.logger.warn(
        { peering, object: `${namespace}/${ctx.ref.name}`, retries: ctx.retries, error: describeError(err) },
        "copy not applied",
      );
      throw err;
    }
    this.logger.debug(
      { peering, object: `${namespace}/${ctx.ref.name}`, remoteNamespace: replica.remoteNamespace },
      "copy applied",
    );
    return reconcileDone();
  }

  /** One list of the replica namespace (this cluster's copies from that namespace), then the deletes. */
  private async prune(replica: NamespaceReplica): Promise<void> {
    const { client } = this.options.peerClients.clientFor(replica.peering);
    const copies = await client.objects.list(
      "v1",
      this.kind,
      replica.remoteNamespace,
      undefined,
      undefined,
      undefined,
      undefined,
      originSelector(this.options.originClusterId, replica.localNamespace),
    );
    for (const copy of copies.items) {
      const name = copy.metadata!.name!;
      const source = this.objects.get(replica.localNamespace, name);
      if (source && isReflected(this.kind, source)) continue;
      try {
        const ref = {
          apiVersion: "v1",
          kind: this.kind,
          metadata: { name, namespace: replica.remoteNamespace },
        };
        await client.objects.delete(ref, undefined, undefined, undefined, undefined, undefined, {
          preconditions: { uid: copy.metadata!.uid! },
        });
        this.logger.debug(
          {
            peering: replica.peering,
            object: `${replica.localNamespace}/${name}`,
            remoteNamespace: replica.remoteNamespace,
          },
          "copy deleted",
        );
      } catch (err) {
        if (isNotFound(err) || statusCode(err) === 409) continue;
        this.logger.warn(
          {
            peering: replica.peering,
            object: `${replica.remoteNamespace}/${name}`,
            error: describeError(err),
          },
          "copy not deleted",
        );
        throw err;
      }
    }
  }
}
