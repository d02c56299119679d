/**
 * Where culling meets backups: a runtime whose service has a BackupPolicy with an idle action is
 * culled, when idle, by that policy (it backs the runtime up first, then stops it or tears it
 * down); the runtimes controller and the runtime's agent then leave idle culling to it. Only the
 * runtimes the policy handles: those of this cluster (it leaves other clusters' alone).
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import {
  type ClusterClient,
  componentCache,
  type Informer,
  type InformerCache,
  startInformers,
} from "../kube/index.js";
import type { Runtime } from "../runtimes/index.js";
import { TENANTS_API_VERSION } from "../tenants/index.js";
import type { BackupPolicy } from "./api/backup.js";

// Named after its reader: the cache's informers, and their indexes, are shared.
const BY_SERVICE = "culling/service";

export class BackupPolicyCulling {
  private readonly policies: Informer<BackupPolicy>;

  private readonly release: () => Promise<void>;

  constructor(
    private readonly client: ClusterClient,
    shared?: InformerCache,
  ) {
    const { cache, release } = componentCache({ client, cache: shared });
    this.release = release;
    this.policies = cache.informer<BackupPolicy>({ apiVersion: TENANTS_API_VERSION, kind: "BackupPolicy" });
    this.policies.addIndex(BY_SERVICE, (p) => (p.spec?.service ? [p.spec.service] : []));
  }

  /** The policy that culls `runtime` when idle, as `BackupPolicy <name>`; undefined when none does. */
  readonly idleCulledBy = (runtime: Runtime): string | undefined => {
    const cluster = runtime.status?.cluster;
    if (cluster && cluster !== this.client.name) return undefined;
    const policy = this.policies
      .byIndex(BY_SERVICE, runtime.spec.service)
      .find((p) => p.spec.idle && p.spec.idle.action !== "None");
    return policy ? `BackupPolicy ${policy.metadata?.name}` : undefined;
  };

  start(): Promise<void> {
    return startInformers([this.policies as unknown as Informer<KubernetesObject>]);
  }

  stop(): Promise<void> {
    return this.release();
  }
}
