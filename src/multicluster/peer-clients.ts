/**
 * Clients for the provider clusters, made from each Peering's credentials Secret and acting as the
 * peer user there (owner of this cluster's tenant in the provider, nothing more). Shared by every
 * controller that works in the providers; rebuilt when the Secret changes.
 */
import type { V1Secret } from "@kubernetes/client-node";
import { ClusterClient, type Informer } from "../kube/index.js";
import type { Peering } from "./api/peering.js";
import { KUBECONFIG_KEY, loadPeerCredentials } from "./remote.js";

export interface PeerClient {
  /** The Peering's name: the provider's cluster name. */
  peering: string;
  remoteClusterId: string;
  client: ClusterClient;
}

export class PeerClients {
  private readonly cache = new Map<string, { version: string; client?: ClusterClient; error?: string }>();

  constructor(
    private readonly peerings: Informer<Peering>,
    private readonly secrets: Informer<V1Secret>,
    private readonly namespace: string,
  ) {}

  /** A client for the provider of Peering `name`; throws a one-line reason when there is none. */
  clientFor(name: string): PeerClient {
    const peering = this.peerings.get(undefined, name);
    if (!peering) throw new Error(`no Peering named "${name}"`);
    const secretName = peering.spec.kubeconfigSecretRef.name;
    const secret = this.secrets.get(this.namespace, secretName);
    if (!secret) throw new Error(`Peering ${name}: Secret ${this.namespace}/${secretName} not found`);
    const version = `${secret.metadata?.uid}/${secret.metadata?.resourceVersion}`;
    let entry = this.cache.get(name);
    if (entry?.version !== version) {
      entry = { version };
      try {
        const encoded = secret.data?.[KUBECONFIG_KEY];
        if (!encoded) throw new Error(`key "${KUBECONFIG_KEY}" is missing`);
        const credentials = loadPeerCredentials(Buffer.from(encoded, "base64").toString("utf8"));
        entry.client = new ClusterClient(`peer-${name}`, credentials.kubeConfig);
      } catch (err) {
        entry.error = `Peering ${name}: Secret ${this.namespace}/${secretName}: ${(err as Error).message}`;
      }
      this.cache.set(name, entry);
    }
    if (!entry.client) throw new Error(entry.error);
    return { peering: name, remoteClusterId: peering.spec.remoteClusterId, client: entry.client };
  }

  /** Forgets a peering's client (after unpeering). */
  forget(name: string): void {
    this.cache.delete(name);
  }
}
