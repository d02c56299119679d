/**
 * The caches the multi-cluster controllers (peering, offloading, reflection, replication) and the
 * pod webhook share: NamespaceOffloadings,
 * NamespaceMaps, virtual nodes, Peerings and their credentials Secrets, the namespaces that
 * ask for offloading by label, and client certificate requests (peers renewing theirs). Started on every replica (the webhook needs them).
 */
import type {
  KubernetesObject,
  V1CertificateSigningRequest,
  V1Namespace,
  V1Node,
  V1Secret,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import {
  type ClusterClient,
  Controller,
  defaultControllerRateLimiter,
  Informer,
  KUBE_APISERVER_CLIENT_SIGNER,
  type ReconcileContext,
  type ReconcileResult,
  startInformers,
  stopInformers,
} from "../kube/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { NamespaceMap, NamespaceOffloading } from "./api/offloading.js";
import type { Peering } from "./api/peering.js";
import { OFFLOADED_NAMESPACE_LABEL, OFFLOADING_ENABLED_LABEL } from "./offloading/labels.js";
import { PeerClients } from "./peer-clients.js";
import { NODE_TYPE_LABEL, PEERING_LABEL, VIRTUAL_NODE_TYPE } from "./virtual-node.js";

export class MulticlusterInformers {
  readonly offloadings: Informer<NamespaceOffloading>;
  readonly maps: Informer<NamespaceMap>;
  readonly virtualNodes: Informer<V1Node>;
  readonly peerings: Informer<Peering>;
  readonly peerSecrets: Informer<V1Secret>;
  /** Namespaces carrying the offloading label (the shortcut of Liqo thesis, 4.3). */
  readonly labelledNamespaces: Informer<V1Namespace>;
  /** Namespaces tenantry marked as offloaded (the pod webhook's scope). */
  readonly offloadedNamespaces: Informer<V1Namespace>;
  readonly peerClients: PeerClients;
  /** Client certificate requests (kube-apiserver-client signer): peers' renewals to approve. */
  readonly clientCsrs: Informer<V1CertificateSigningRequest>;

  constructor(
    readonly client: ClusterClient,
    readonly namespace: string,
  ) {
    const api = { apiVersion: TENANTS_API_VERSION };
    this.offloadings = Informer.forResource(client, { ...api, kind: "NamespaceOffloading" });
    this.maps = Informer.forResource(client, { ...api, kind: "NamespaceMap", namespace });
    this.peerings = Informer.forResource(client, { ...api, kind: "Peering" });
    this.virtualNodes = Informer.forResource(client, {
      apiVersion: "v1",
      kind: "Node",
      labelSelector: `${NODE_TYPE_LABEL}=${VIRTUAL_NODE_TYPE}`,
    });
    this.peerSecrets = Informer.forResource(client, {
      apiVersion: "v1",
      kind: "Secret",
      namespace,
      labelSelector: PEERING_LABEL,
    });
    this.labelledNamespaces = Informer.forResource(client, {
      apiVersion: "v1",
      kind: "Namespace",
      labelSelector: OFFLOADING_ENABLED_LABEL,
    });
    this.offloadedNamespaces = Informer.forResource(client, {
      apiVersion: "v1",
      kind: "Namespace",
      labelSelector: OFFLOADED_NAMESPACE_LABEL,
    });
    this.clientCsrs = Informer.forResource<V1CertificateSigningRequest>(client, {
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      fieldSelector: `spec.signerName=${KUBE_APISERVER_CLIENT_SIGNER}`,
    });
    this.peerClients = new PeerClients(this.peerings, this.peerSecrets, namespace);
  }

  private get all(): Informer<KubernetesObject>[] {
    return [
      this.offloadings,
      this.maps,
      this.virtualNodes,
      this.peerings,
      this.peerSecrets,
      this.labelledNamespaces,
      this.offloadedNamespaces,
      this.clientCsrs,
    ] as unknown as Informer<KubernetesObject>[];
  }

  start(timeoutMs = 60_000): Promise<void> {
    return startInformers(this.all, timeoutMs);
  }

  stop(): Promise<void> {
    return stopInformers(this.all);
  }

  /** The offloading of a namespace, if it has one. */
  offloadingOf(namespace: string): NamespaceOffloading | undefined {
    return this.offloadings.get(namespace, "offloading");
  }
}

/** A controller of the offloading set: many keys may come at once (a peer joining), so a generous rate limit. */
export function offloadingController(
  name: string,
  options: { logger: Logger; workers?: number },
  defaultWorkers: number,
  reconcile: (ctx: ReconcileContext) => Promise<ReconcileResult>,
): Controller {
  return new Controller({
    name,
    workers: options.workers ?? defaultWorkers,
    logger: options.logger,
    rateLimiter: defaultControllerRateLimiter({ qps: 200, burst: 2000 }),
    reconcile: (_key, ctx) => reconcile(ctx),
  });
}
