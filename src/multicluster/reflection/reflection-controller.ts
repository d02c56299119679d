/**
 * Reflection into the providers (Liqo thesis, chapter 3): pods bound to virtual nodes run in
 * the replica namespaces, and Services, ConfigMaps and Secrets of offloaded namespaces are
 * copied there. Not reflected: EndpointSlices (the provider makes its own from the reflected
 * pods), Ingresses, PersistentVolumeClaims, ServiceAccounts and RBAC, Events.
 */

import type { KubernetesObject, V1Service } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { ClusterClient, Informer } from "../../kube/index.js";
import type { MulticlusterInformers } from "../informers.js";
import { ObjectReflector } from "./object-reflector.js";
import { REFLECTED_KINDS } from "./object-translation.js";
import { PodReflector } from "./pod-reflector.js";

export interface ReflectionControllerOptions {
  client: ClusterClient;
  logger: Logger;
  /** This cluster's id: it marks every reflected object. */
  clusterId: string;
  /** NamespaceMaps, virtual nodes and the peer clients, shared with the offloading controllers. */
  informers: MulticlusterInformers;
  /** How often replica namespaces are pruned of copies without a source, besides deletions. */
  pruneIntervalMs?: number;
  /** Every local Service, from the shared cache (multi-cluster services read them too). */
  services?: Informer<V1Service>;
}

/** The pod reflector and one object reflector per reflected kind, started and stopped together. */
export class ReflectionController {
  private readonly reflectors: { start(): Promise<void>; stop(): Promise<void> }[];

  constructor(options: ReflectionControllerOptions) {
    const { client, logger, informers } = options;
    const shared = {
      client,
      logger,
      originClusterId: options.clusterId,
      peerClients: informers.peerClients,
      maps: informers.maps,
    };
    this.reflectors = [
      new PodReflector({ ...shared, nodes: informers.virtualNodes }),
      ...REFLECTED_KINDS.map(
        (kind) =>
          new ObjectReflector({
            ...shared,
            kind,
            ...(options.pruneIntervalMs ? { pruneIntervalMs: options.pruneIntervalMs } : {}),
            ...(kind === "Service" && options.services
              ? { shared: options.services as unknown as Informer<KubernetesObject> }
              : {}),
          }),
      ),
    ];
  }

  async start(): Promise<void> {
    await Promise.all(this.reflectors.map((reflector) => reflector.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.reflectors.map((reflector) => reflector.stop()));
  }
}
