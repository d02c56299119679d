/**
 * The runtimes clusters services name (`RuntimeService.spec.cluster`): a client per kubeconfig
 * Secret in tenantry's namespace, read again after a minute so a rotated credential is picked up;
 * the same client is kept while the kubeconfig does not change (its connections and caches stay).
 */
import { createHash } from "node:crypto";
import { KubeConfig } from "@kubernetes/client-node";
import { ClusterClient } from "../kube/index.js";
import type { RuntimeService } from "./api/runtime-service.js";

/** Where a RuntimeService's kubeconfigSecretRef points. */
export const SECRETS_NAMESPACE = "tenantry-system";
const TTL_MS = 60_000;

export interface RuntimesCluster {
  name: string;
  client: ClusterClient;
}

export class KubeconfigClients {
  private readonly known = new Map<string, { cluster: RuntimesCluster; digest: string; until: number }>();

  constructor(
    private readonly client: ClusterClient,
    private readonly namespace = SECRETS_NAMESPACE,
  ) {}

  /** The runtimes cluster of `service`, or undefined when its runtimes run where its Runtime objects are. */
  async of(service: RuntimeService): Promise<RuntimesCluster | undefined> {
    const ref = service.spec.cluster;
    return ref ? this.get(ref.kubeconfigSecretRef.name, ref.name) : undefined;
  }

  /** A client from Secret `secret` (key `kubeconfig`); throws naming the Secret when it cannot. */
  async get(secret: string, name: string): Promise<RuntimesCluster> {
    const known = this.known.get(secret);
    if (known && known.until > Date.now() && known.cluster.name === name) return known.cluster;
    const data = (await this.client.core.readNamespacedSecret({ name: secret, namespace: this.namespace }))
      .data?.kubeconfig;
    if (!data) throw new Error(`Secret ${this.namespace}/${secret} has no key kubeconfig`);
    const digest = createHash("sha256").update(data).update(name).digest("base64url");
    if (known?.digest === digest) {
      known.until = Date.now() + TTL_MS;
      return known.cluster;
    }
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(Buffer.from(data, "base64").toString("utf8"));
    const cluster = { name, client: new ClusterClient(name, kubeConfig) };
    this.known.set(secret, { cluster, digest, until: Date.now() + TTL_MS });
    return cluster;
  }
}
