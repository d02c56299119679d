/**
 * The clusters runtimes run in, as the controllers see them: a client and caches of the runtimes'
 * pods and claims (everything labelled `tenantry.dev/runtime`), for the cluster the Runtime
 * objects live in and for each runtimes cluster a service names. A change to one of those pods or
 * claims is reported so that its Runtime is looked at again.
 */
import type { KubernetesObject, V1PersistentVolumeClaim, V1Pod } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { type ClusterClient, Informer, startInformers, stopInformers } from "../../kube/index.js";
import type { RuntimeService } from "../api/runtime-service.js";
import type { KubeconfigClients } from "../clusters.js";
import { RUNTIME_LABEL } from "../plugins/spi.js";

export const BY_RUNTIME = "runtime";
const SYNC_TIMEOUT_MS = 30_000;

export interface Target {
  /** The cluster's name, as the Runtime's status reports it. */
  name: string;
  client: ClusterClient;
  /** The cluster the Runtime objects live in (owner references and garbage collection work). */
  local: boolean;
  pods: Informer<V1Pod>;
  claims: Informer<V1PersistentVolumeClaim>;
}

/** Index value of a runtime's objects: `<namespace>/<runtime name>`. */
export const runtimeIndexKey = (namespace: string, name: string) => `${namespace}/${name}`;

export class Targets {
  private readonly home: Target;
  private readonly remote = new Map<string, Promise<Target>>();

  constructor(
    homeClient: ClusterClient,
    private readonly clients: KubeconfigClients,
    /** `gone`: the object was deleted. */
    private readonly onChange: (cluster: string, object: KubernetesObject, gone?: boolean) => void,
    private readonly logger: Logger,
  ) {
    this.home = this.build(homeClient.name, homeClient, true);
  }

  /** The Runtime objects' own cluster; its caches are synced by {@link start}. */
  get local(): Target {
    return this.home;
  }

  async start(): Promise<void> {
    await startInformers(this.informersOf(this.home), SYNC_TIMEOUT_MS);
  }

  async stop(): Promise<void> {
    const remotes = await Promise.allSettled(this.remote.values());
    this.remote.clear();
    const targets = [this.home, ...remotes.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []))];
    await Promise.all(targets.map((t) => stopInformers(this.informersOf(t))));
  }

  /** Where `service`'s runtimes run, with synced caches; throws when its cluster cannot be reached. */
  async of(service: RuntimeService): Promise<Target> {
    const ref = service.spec.cluster;
    if (!ref) return this.home;
    const cluster = await this.clients.get(ref.kubeconfigSecretRef.name, ref.name);
    const key = `${ref.kubeconfigSecretRef.name}/${ref.name}`;
    const known = this.remote.get(key);
    if (known) {
      const target = await known.catch(() => undefined);
      if (target && target.client === cluster.client) return target;
      // A new kubeconfig (or a failed first sync): caches anew.
      this.remote.delete(key);
      if (target) await stopInformers(this.informersOf(target));
    }
    const starting = (async () => {
      const target = this.build(cluster.name, cluster.client, false);
      try {
        await startInformers(this.informersOf(target), SYNC_TIMEOUT_MS);
      } catch (err) {
        await stopInformers(this.informersOf(target));
        throw new Error(`runtimes cluster ${cluster.name} does not answer: ${String(err)}`);
      }
      this.logger.info({ cluster: cluster.name }, "watching runtimes in a runtimes cluster");
      return target;
    })();
    this.remote.set(key, starting);
    starting.catch(() => this.remote.get(key) === starting && this.remote.delete(key));
    return starting;
  }

  private build(name: string, client: ClusterClient, local: boolean): Target {
    const selector = { labelSelector: RUNTIME_LABEL };
    const pods = Informer.forResource<V1Pod>(client, { apiVersion: "v1", kind: "Pod", ...selector });
    const claims = Informer.forResource<V1PersistentVolumeClaim>(client, {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      ...selector,
    });
    for (const informer of [pods, claims] as Informer<KubernetesObject>[]) {
      informer.addIndex(BY_RUNTIME, (o) => {
        const runtime = o.metadata?.labels?.[RUNTIME_LABEL];
        return runtime ? [runtimeIndexKey(o.metadata!.namespace!, runtime)] : [];
      });
      informer.addHandler({
        onAdd: (o) => this.onChange(name, o),
        onUpdate: (_, o) => this.onChange(name, o),
        onDelete: (o) => this.onChange(name, o, true),
      });
    }
    return { name, client, local, pods, claims };
  }

  private informersOf(target: Target): Informer<KubernetesObject>[] {
    return [target.pods, target.claims] as unknown as Informer<KubernetesObject>[];
  }
}
