/**
 * Reflection into the providers (document 004, chapter 3): pods bound to virtual nodes run in
 * the replica namespaces, and Services, ConfigMaps and Secrets of offloaded namespaces are
 * copied there. Not reflected: EndpointSlices (the provider makes its own from the reflected
 * pods), Ingresses, PersistentVolumeClaims, ServiceAccounts and RBAC, events.
 */
import type { V1Node, V1Secret } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type ClusterClient, Informer } from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import type { NamespaceMap } from "../api/offloading.js";
import type { Peering } from "../api/peering.js";
import type { ClusterIdentity } from "../identity.js";
import { PeerClients } from "../peer-clients.js";
import { NODE_TYPE_LABEL, PEERING_LABEL, VIRTUAL_NODE_TYPE } from "../virtual-node.js";
import { ObjectReflector } from "./object-reflector.js";
import { REFLECTED_KINDS } from "./object-translation.js";
import { PodReflector } from "./pod-reflector.js";

export interface ReflectionControllerOptions {
  client: ClusterClient;
  /** tenantry's namespace: NamespaceMaps and the peers' credentials Secrets. */
  namespace: string;
  logger: Logger;
  /** This cluster: its id marks every reflected object. */
  clusterIdentity: ClusterIdentity;
  /** Clients for the providers; made here from the Peerings and their Secrets when absent. */
  peerClients?: PeerClients;
  /** How often replica namespaces are pruned of copies without a source, besides deletions. */
  pruneIntervalMs?: number;
}

export class ReflectionController {
  private readonly informers: { start(): void; stop(): Promise<void>; waitForSync(): Promise<void> }[] = [];
  private readonly reflectors: { start(): Promise<void>; stop(): Promise<void> }[];

  constructor(options: ReflectionControllerOptions) {
    const { client, namespace, logger } = options;
    const maps = Informer.forResource<NamespaceMap>(client, {
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceMap",
      namespace,
    });
    const nodes = Informer.forResource<V1Node>(client, {
      apiVersion: "v1",
      kind: "Node",
      labelSelector: `${NODE_TYPE_LABEL}=${VIRTUAL_NODE_TYPE}`,
    });
    this.own(maps, nodes);
    let peerClients = options.peerClients;
    if (!peerClients) {
      const peerings = Informer.forResource<Peering>(client, {
        apiVersion: TENANTS_API_VERSION,
        kind: "Peering",
      });
      const secrets = Informer.forResource<V1Secret>(client, {
        apiVersion: "v1",
        kind: "Secret",
        namespace,
        labelSelector: PEERING_LABEL,
      });
      this.own(peerings, secrets);
      peerClients = new PeerClients(peerings, secrets, namespace);
    }
    const shared = {
      client,
      logger,
      originClusterId: options.clusterIdentity.clusterId,
      peerClients,
      maps,
    };
    this.reflectors = [
      new PodReflector({ ...shared, nodes }),
      ...REFLECTED_KINDS.map(
        (kind) =>
          new ObjectReflector({
            ...shared,
            kind,
            ...(options.pruneIntervalMs ? { pruneIntervalMs: options.pruneIntervalMs } : {}),
          }),
      ),
    ];
  }

  private own(...informers: ReflectionController["informers"]): void {
    this.informers.push(...informers);
  }

  async start(): Promise<void> {
    for (const informer of this.informers) informer.start();
    // Reflectors read the maps, nodes and peers from their first event on.
    await Promise.all(this.informers.map((informer) => informer.waitForSync()));
    await Promise.all(this.reflectors.map((reflector) => reflector.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.reflectors.map((reflector) => reflector.stop()));
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }
}
