/**
 * What the network controller follows in each provider, with the peering's scoped client only:
 * the pods of each accepted replica namespace, the provider's public gateway ConfigMap and the
 * peering's exchange ConfigMap (each watched by name: the peer user may list and watch those two
 * alone). One informer per object or namespace, started and stopped as peerings and replicas come
 * and go, as the multi-cluster services controller does.
 */
import type { KubernetesObject, V1ConfigMap, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type ClusterClient, Informer } from "../../kube/index.js";
import { InformerPool } from "../reflection/informer-pool.js";

/** One peering to follow: its client, the ConfigMaps by name and the replica namespaces. */
export interface PeerWatch {
  peering: string;
  client: ClusterClient;
  configMaps: readonly string[];
  replicas: readonly string[];
}

/** Read from an informer once it has listed; `synced` false means: ask the peer directly. */
export type Cached<T> = { synced: true; value: T } | { synced: false };

export class PeerWatches {
  private readonly pool: InformerPool<KubernetesObject>;

  constructor(private readonly options: { namespace: string; logger: Logger; onChange: () => void }) {
    this.pool = new InformerPool<KubernetesObject>(() => options.onChange());
  }

  /** Starts what `wanted` names (again when a peering's client changed), stops the rest. */
  async follow(wanted: readonly PeerWatch[]): Promise<void> {
    const keep = new Set<string>();
    for (const watch of wanted) {
      const resources = [
        ...watch.configMaps.map((name) => ({
          key: configMapKey(watch.peering, name),
          selector: {
            apiVersion: "v1",
            kind: "ConfigMap",
            namespace: this.options.namespace,
            fieldSelector: `metadata.name=${name}`,
          },
        })),
        ...watch.replicas.map((namespace) => ({
          key: podsKey(watch.peering, namespace),
          selector: { apiVersion: "v1", kind: "Pod", namespace },
        })),
      ];
      for (const { key, selector } of resources) {
        keep.add(key);
        const started = this.pool.ensure(key, watch.client, () =>
          Informer.forResource<KubernetesObject>(watch.client, selector, { logger: this.options.logger }),
        );
        // Listed: read from the cache from now on.
        if (started)
          void this.pool
            .get(key)!
            .waitForSync()
            .then(this.options.onChange, () => {});
      }
    }
    for (const key of this.pool.keys()) if (!keep.has(key)) await this.pool.remove(key);
  }

  configMap(peering: string, name: string): Cached<V1ConfigMap | undefined> {
    const informer = this.pool.get(configMapKey(peering, name));
    if (!informer?.hasSynced()) return { synced: false };
    return { synced: true, value: informer.get(this.options.namespace, name) as V1ConfigMap | undefined };
  }

  pods(peering: string, namespace: string): Cached<V1Pod[]> {
    const informer = this.pool.get(podsKey(peering, namespace));
    if (!informer?.hasSynced()) return { synced: false };
    return { synced: true, value: informer.inNamespace(namespace) as V1Pod[] };
  }

  async stop(): Promise<void> {
    await this.pool.clear();
  }
}

const configMapKey = (peering: string, name: string) => `${peering}/configmap/${name}`;
const podsKey = (peering: string, namespace: string) => `${peering}/pods/${namespace}`;
