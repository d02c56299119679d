/**
 * The cluster registry as the rest of tenantry reads it: registered clusters and their
 * credentials from informers, label selection over them, and clients made from the credentials
 * (kept while the Secret does not change). Nothing here lists per call.
 */
import type { KubernetesObject, V1LabelSelector, V1Secret } from "@kubernetes/client-node";
import {
  type ClusterClient,
  Informer,
  type InformerOptions,
  startInformers,
  stopInformers,
} from "../kube/index.js";
import { type ClusterLabelSource, labelSelectorMatches } from "../multicluster/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import { CLUSTER_KUBECONFIG_KEY, type Cluster, DEFAULT_CLUSTER_PROVIDER } from "./api/cluster.js";
import { DEFAULT_REQUEST_TIMEOUT_MS, registeredClusterClient } from "./credentials.js";

/** On a registered cluster's credentials Secret: the cluster it belongs to. */
export const CLUSTER_LABEL = "tenantry.dev/cluster";
const BY_CLUSTER_ID = "clusterId";

export function clusterSecretName(cluster: string): string {
  return `tenantry-cluster-${cluster}`;
}

export function providerOf(cluster: Cluster): string {
  return cluster.spec.provider ?? DEFAULT_CLUSTER_PROVIDER;
}

/** A registered cluster cannot be used now: no credentials, or credentials that do not parse. */
export class ClusterUnavailable extends Error {
  constructor(
    readonly cluster: string,
    readonly reason: "NotRegistered" | "CredentialsInvalid",
    message: string,
  ) {
    super(message);
    this.name = "ClusterUnavailable";
  }
}

export interface ClusterRegistryOptions {
  /** Default deadline of each request a registry client makes. */
  requestTimeoutMs?: number;
  informerOptions?: InformerOptions;
}

export class ClusterRegistry {
  readonly clusters: Informer<Cluster>;
  readonly secrets: Informer<V1Secret>;
  private readonly clients = new Map<string, { version: string; client: ClusterClient }>();
  private readonly requestTimeoutMs: number;

  constructor(
    readonly client: ClusterClient,
    /** tenantry's namespace: where the credentials Secrets are. */
    readonly namespace: string,
    options: ClusterRegistryOptions = {},
  ) {
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.clusters = Informer.forResource<Cluster>(
      client,
      { apiVersion: TENANTS_API_VERSION, kind: "Cluster" },
      options.informerOptions,
    );
    this.clusters.addIndex(BY_CLUSTER_ID, (c) => (c.status?.clusterId ? [c.status.clusterId] : []));
    this.secrets = Informer.forResource<V1Secret>(
      client,
      { apiVersion: "v1", kind: "Secret", namespace, labelSelector: CLUSTER_LABEL },
      options.informerOptions,
    );
  }

  private get informers(): Informer<KubernetesObject>[] {
    return [this.clusters, this.secrets] as unknown as Informer<KubernetesObject>[];
  }

  start(timeoutMs = 60_000): Promise<void> {
    return startInformers(this.informers, timeoutMs);
  }

  stop(): Promise<void> {
    return stopInformers(this.informers);
  }

  get(name: string): Cluster | undefined {
    return this.clusters.get(undefined, name);
  }

  /** Every registered cluster, by name. */
  list(): Cluster[] {
    return this.clusters.list().sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  }

  /** The registered clusters (not being removed) whose labels `selector` matches. */
  select(selector: V1LabelSelector): Cluster[] {
    return this.list().filter(
      (c) => !c.metadata?.deletionTimestamp && labelSelectorMatches(selector, c.metadata?.labels ?? {}),
    );
  }

  /**
   * The registry entry of the cluster whose tenantry identity is `clusterId`. One cluster
   * registered twice (under two names) is found by its oldest entry, so a second registration
   * never changes what peerings already see.
   */
  byClusterId(clusterId: string): Cluster | undefined {
    const entries = this.clusters.byIndex(BY_CLUSTER_ID, clusterId);
    if (entries.length <= 1) return entries[0];
    const created = (c: Cluster) => String(c.metadata?.creationTimestamp ?? "");
    return entries.sort(
      (a, b) => created(a).localeCompare(created(b)) || a.metadata!.name!.localeCompare(b.metadata!.name!),
    )[0];
  }

  /** A registered cluster's labels, found by its tenantry identity (for peerings' virtual nodes). */
  labelsOfClusterId(clusterId: string): Record<string, string> | undefined {
    const cluster = this.byClusterId(clusterId);
    return cluster ? { ...(cluster.metadata?.labels ?? {}) } : undefined;
  }

  /** The registry as the peering controller reads it: virtual nodes carry registered clusters' labels. */
  asLabelSource(): ClusterLabelSource {
    return {
      informer: this.clusters as unknown as ClusterLabelSource["informer"],
      clusterIdOf: (obj) => (obj as Cluster).status?.clusterId,
      labelsOf: (clusterId) => this.labelsOfClusterId(clusterId),
    };
  }

  /** The registered kubeconfig of a cluster (its administrator's credentials). */
  kubeconfigOf(name: string): string {
    const cluster = this.get(name);
    if (!cluster) throw new ClusterUnavailable(name, "NotRegistered", `cluster "${name}" is not registered`);
    const ref = cluster.spec.kubeconfigSecretRef.name;
    const secret = this.secrets.get(this.namespace, ref);
    const data = secret?.data?.[CLUSTER_KUBECONFIG_KEY];
    if (!data) {
      throw new ClusterUnavailable(
        name,
        "CredentialsInvalid",
        secret
          ? `Secret ${this.namespace}/${ref} has no key "${CLUSTER_KUBECONFIG_KEY}"`
          : `Secret ${this.namespace}/${ref} does not exist (or lacks label ${CLUSTER_LABEL})`,
      );
    }
    return Buffer.from(data, "base64").toString();
  }

  /** The version of a cluster's credentials: a client made from older ones is made again. */
  credentialsVersion(name: string): string {
    const cluster = this.get(name);
    const secret = cluster && this.secrets.get(this.namespace, cluster.spec.kubeconfigSecretRef.name);
    return secret ? `${secret.metadata?.uid}/${secret.metadata?.resourceVersion}` : "absent";
  }

  /**
   * A client of a registered cluster with its registered credentials, every request bounded by
   * the registry's deadline. With a `signal`, a new client whose requests it aborts.
   */
  clientOf(name: string, options: { signal?: AbortSignal; timeoutMs?: number } = {}): ClusterClient {
    const version = this.credentialsVersion(name);
    const shared = !options.signal && options.timeoutMs === undefined;
    const known = this.clients.get(name);
    if (shared && known?.version === version) return known.client;
    let client: ClusterClient;
    try {
      client = registeredClusterClient(name, this.kubeconfigOf(name), {
        timeoutMs: options.timeoutMs ?? this.requestTimeoutMs,
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (err) {
      if (err instanceof ClusterUnavailable) throw err;
      throw new ClusterUnavailable(
        name,
        "CredentialsInvalid",
        `cluster "${name}": ${(err as Error).message}`,
      );
    }
    if (shared) this.clients.set(name, { version, client });
    return client;
  }
}
