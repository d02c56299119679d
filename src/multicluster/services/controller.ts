/**
 * The Multi-Cluster Services controller (KEP-1645) of an offloaded namespace's clusterset: home
 * and every provider holding an accepted replica of the namespace. A ServiceExport in any of them
 * makes, in all of them, a ServiceImport of the same name, a derived Service giving a
 * ClusterSetIP import its clusterset IP in that cluster, and EndpointSlices carrying every
 * contributing cluster's endpoints. Runs in the consumer (home) on the leader; in the providers it
 * writes only through each peering's scoped client, and only in the replica namespaces its
 * NamespaceMaps name — never where an object says it belongs.
 *
 * Keys are `<cluster>/<local namespace>/<service>`; `<cluster>//<peering>` (de)starts the
 * informers on a peer's replica namespaces.
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  type ClusterClient,
  Controller,
  Informer,
  ignoreNotFound,
  objectKey,
  type ReconcileContext,
  type ReconcileResult,
  reconcileDone,
} from "../../kube/index.js";
import type { MulticlusterInformers } from "../informers.js";
import { ORIGIN_NAMESPACE_LABEL } from "../offloading/labels.js";
import { acceptedReplicas, namespacesOfMap, peeringOfMap } from "../offloading/replicas.js";
import { InformerPool } from "../reflection/informer-pool.js";
import { acceptedReplicasOfPeer, REMOTE_RATE_LIMITER } from "../reflection/replicas.js";
import { type AddressMapper, unmappedAddresses } from "./addresses.js";
import { type ClusterExport, planExports } from "./plan.js";
import {
  liveExport,
  type MemberView,
  namesIn,
  RESOURCES,
  serviceNameOf,
  sourceSlices,
  type ViewInformers,
} from "./views.js";
import { ServiceImportWriter } from "./writer.js";

export interface MulticlusterServicesOptions {
  client: ClusterClient;
  logger: Logger;
  informers: MulticlusterInformers;
  /** Home's ServiceExports, ServiceImports, Services and EndpointSlices (the shared cache). */
  home: ViewInformers;
  /** This cluster's name (its cluster identity), read when the controller starts. */
  clusterName: () => Promise<string>;
  /** How each importing cluster reaches another's endpoints: the gateway's seam. Default: unchanged. */
  mapAddress?: AddressMapper;
  /** Subscribes to changes of `mapAddress` (a peer's gateway joined or left); returns the unsubscription. */
  onAddressesChanged?: (listener: () => void) => () => void;
  workers?: number;
}

type RemoteKind = keyof ViewInformers;
const REMOTE_KINDS: readonly RemoteKind[] = ["exports", "imports", "services", "slices"];
const WATCHES = "*watches";

export class MulticlusterServicesController {
  private readonly logger: Logger;
  private readonly controller: Controller;
  private readonly pool: InformerPool<KubernetesObject>;
  /** Remote informers' keys `<peering>/<remote namespace>/<kind>` → the local namespace they mirror. */
  private readonly localOf = new Map<string, string>();
  private readonly writer: ServiceImportWriter;
  private homeCluster = "";
  private readonly unsubscribe: (() => void)[] = [];

  constructor(private readonly options: MulticlusterServicesOptions) {
    this.logger = options.logger.child({ component: "multicluster-services" });
    this.writer = new ServiceImportWriter({
      logger: this.logger,
      mapAddress: options.mapAddress ?? unmappedAddresses,
    });
    this.controller = new Controller({
      name: "multicluster-services",
      rateLimiter: REMOTE_RATE_LIMITER(),
      workers: options.workers ?? 4,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.pool = new InformerPool<KubernetesObject>((obj) => this.remoteChanged(obj));
    const { home } = options;
    const key = (ns: string | undefined, name: string | undefined) =>
      ns && name ? [this.key(ns, name)] : [];
    this.controller.watch(home.exports, (o) => key(o.metadata?.namespace, o.metadata?.name));
    this.controller.watch(home.imports, (o) => key(o.metadata?.namespace, o.metadata?.name));
    this.controller.watch(home.services, (o) => this.keyIfExported(o));
    this.controller.watch(home.slices, (o) => this.keyIfExported(o));
    this.controller.watch(options.informers.offloadings, (o) => this.namespaceKeys(o.metadata?.namespace));
    this.controller.watch(options.informers.maps, (map) => [
      objectKey(this.options.client.name, undefined, `${WATCHES}.${peeringOfMap(map)}`),
      ...namespacesOfMap(map).flatMap((ns) => this.namespaceKeys(ns)),
    ]);
  }

  async start(): Promise<void> {
    this.homeCluster = await this.options.clusterName();
    // Imported slices carry mapped addresses: every multi-cluster service is written again.
    const unsubscribe = this.options.onAddressesChanged?.(() => {
      for (const offloading of this.options.informers.offloadings.list())
        for (const key of this.namespaceKeys(offloading.metadata?.namespace)) this.controller.enqueue(key);
    });
    if (unsubscribe) this.unsubscribe.push(unsubscribe);
    await this.controller.start();
  }

  async stop(): Promise<void> {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    await this.controller.stop();
    await this.pool.clear();
  }

  private key(namespace: string, name: string): string {
    return objectKey(this.options.client.name, namespace, name);
  }

  /** A Service or EndpointSlice matters when its name is exported or imported in its namespace. */
  private keyIfExported(obj: KubernetesObject): string[] {
    const namespace = obj.metadata?.namespace;
    const name = serviceNameOf(obj);
    if (!namespace || !name) return [];
    const { exports, imports } = this.options.home;
    return exports.get(namespace, name) || imports.get(namespace, name) ? [this.key(namespace, name)] : [];
  }

  /** Every multi-cluster service of a local namespace, in home and in each replica. */
  private namespaceKeys(namespace: string | undefined): string[] {
    if (!namespace) return [];
    const names = new Set(this.members(namespace).flatMap(namesIn));
    return [...names].map((name) => this.key(namespace, name));
  }

  private remoteChanged(obj: KubernetesObject): void {
    const remoteNamespace = obj.metadata?.namespace;
    const name = serviceNameOf(obj);
    if (!remoteNamespace || !name) return;
    for (const [poolKey, local] of this.localOf) {
      if (poolKey.split("/")[1] === remoteNamespace) this.controller.enqueue(this.key(local, name));
    }
  }

  private homeView(namespace: string): MemberView {
    return {
      cluster: this.homeCluster,
      namespace,
      client: this.options.client,
      informers: this.options.home,
    };
  }

  /** Home and every provider whose replica of `namespace` is accepted and watched. */
  private members(namespace: string): MemberView[] {
    const views = [this.homeView(namespace)];
    if (!this.options.informers.offloadingOf(namespace)) return views;
    for (const replica of acceptedReplicas(this.options.informers.maps.list(), namespace)) {
      const prefix = `${replica.peering}/${replica.remoteNamespace}`;
      const informers = Object.fromEntries(REMOTE_KINDS.map((k) => [k, this.pool.get(`${prefix}/${k}`)]));
      // Not watched or not listed yet (the peer is slow or down): it joins once its informers list.
      if (REMOTE_KINDS.some((k) => !informers[k]?.hasSynced())) continue;
      let client: ClusterClient;
      try {
        client = this.options.informers.peerClients.clientFor(replica.peering).client;
      } catch {
        continue;
      }
      views.push({
        cluster: replica.peering,
        namespace: replica.remoteNamespace,
        client,
        informers: informers as unknown as ViewInformers,
      });
    }
    return views;
  }

  private async reconcile(ctx: ReconcileContext): Promise<ReconcileResult> {
    const namespace = ctx.ref.namespace ?? "";
    const name = ctx.ref.name;
    if (name.startsWith(`${WATCHES}.`)) return this.reconcileWatches(name.slice(WATCHES.length + 1));
    const offloading = this.options.informers.offloadingOf(namespace);
    if (!offloading || offloading.metadata?.deletionTimestamp) {
      // A replica of a consumer's namespace: that consumer's controller answers its exports.
      if (!(await this.isReplica(namespace))) await this.writer.notOffloaded(this.homeView(namespace), name);
      return reconcileDone();
    }
    const members = this.members(namespace);
    const exports: ClusterExport[] = [];
    for (const member of members) {
      const found = liveExport(member, name);
      if (!found) continue;
      const service = member.informers.services.get(member.namespace, name);
      exports.push({ cluster: member.cluster, export: found, service, slices: sourceSlices(member, name) });
    }
    const plan = planExports(exports);
    const failures: string[] = [];
    for (const member of members) {
      try {
        await this.writer.converge(member, name, plan);
      } catch (err) {
        failures.push(`${member.cluster}: ${(err as Error).message}`);
      }
    }
    for (const member of members) {
      if (!liveExport(member, name)) continue;
      try {
        await this.writer.exportStatus(member, name, plan, failures);
      } catch (err) {
        failures.push(`${member.cluster} status: ${(err as Error).message}`);
      }
    }
    if (failures.length) throw new Error(`${namespace}/${name}: ${failures.join("; ")}`);
    return reconcileDone();
  }

  private async isReplica(namespace: string): Promise<boolean> {
    const found = await ignoreNotFound(this.options.client.core.readNamespace({ name: namespace }));
    return found?.metadata?.labels?.[ORIGIN_NAMESPACE_LABEL] !== undefined;
  }

  /** Starts the informers of a peer's accepted replicas, stops those of replicas gone. */
  private async reconcileWatches(peering: string): Promise<ReconcileResult> {
    const wanted = acceptedReplicasOfPeer(this.options.informers.maps.list(), peering);
    const keep = new Set(
      wanted.flatMap((r) => REMOTE_KINDS.map((k) => `${r.peering}/${r.remoteNamespace}/${k}`)),
    );
    for (const key of this.pool.keys()) {
      if (key.startsWith(`${peering}/`) && !keep.has(key)) {
        await this.pool.remove(key);
        this.localOf.delete(key);
      }
    }
    if (!wanted.length) return reconcileDone();
    const peer = this.options.informers.peerClients.clientFor(peering);
    for (const replica of wanted) {
      for (const kind of REMOTE_KINDS) {
        const key = `${replica.peering}/${replica.remoteNamespace}/${kind}`;
        this.localOf.set(key, replica.localNamespace);
        const started = this.pool.ensure(key, peer.client, () =>
          Informer.forResource<KubernetesObject>(
            peer.client,
            { ...RESOURCES[kind], namespace: replica.remoteNamespace },
            { logger: this.logger },
          ),
        );
        if (started) {
          const informer = this.pool.get(key)!;
          void informer.waitForSync().then(
            () => {
              for (const k of this.namespaceKeys(replica.localNamespace)) this.controller.enqueue(k);
            },
            () => {},
          );
        }
      }
    }
    return reconcileDone();
  }
}
