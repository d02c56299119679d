import type {
  KubernetesObject,
  V1CertificateSigningRequest,
  V1Node,
  V1Secret,
} from "@kubernetes/client-node";
import { CachedInformers, type ClusterClient, type Informer, type InformerCache } from "../kube/index.js";
import { TENANTS_API_VERSION, userLabelValue } from "../tenants/index.js";
import type { NodeProvider } from "./api/node-provider.js";
import type { WorkerNode } from "./api/worker-node.js";
import { BOOTSTRAP_NAMESPACE, KUBELET_CLIENT_SIGNER, WORKER_NODE_LABEL } from "./labels.js";

const BY_TENANT = "nodes/tenant";
const BY_PRIVATE_OWNER = "nodes/private-owner";
const BY_WORKER_NODE = "nodes/worker-node";
const BY_USERNAME = "nodes/username";

/**
 * The caches the nodes capability's controllers and admission webhooks share: WorkerNodes (by
 * tenant, and the private ones by owner), NodeProviders, every Node, tenantry's bootstrap token
 * Secrets (by WorkerNode) and kubelet client CSRs (by requester).
 */
export class NodeInformers extends CachedInformers {
  readonly workerNodes: Informer<WorkerNode>;
  readonly providers: Informer<NodeProvider>;
  readonly nodes: Informer<V1Node>;
  readonly tokens: Informer<V1Secret>;
  readonly csrs: Informer<V1CertificateSigningRequest>;

  /** With `shared`, the process's cache (indexes named after this reader); without, informers of its own. */
  constructor(client: ClusterClient, shared?: InformerCache) {
    super(client, shared);
    const { cache } = this;
    this.workerNodes = cache.informer<WorkerNode>({
      apiVersion: TENANTS_API_VERSION,
      kind: "WorkerNode",
    });
    this.workerNodes.addIndex(BY_TENANT, (n) => (n.spec.tenant ? [n.spec.tenant] : []));
    this.workerNodes.addIndex(BY_PRIVATE_OWNER, (n) =>
      n.spec.policy === "private" && n.spec.owner ? [userLabelValue(n.spec.owner)] : [],
    );
    this.providers = cache.informer<NodeProvider>({
      apiVersion: TENANTS_API_VERSION,
      kind: "NodeProvider",
    });
    this.nodes = cache.informer<V1Node>({ apiVersion: "v1", kind: "Node" });
    this.tokens = cache.informer<V1Secret>({
      apiVersion: "v1",
      kind: "Secret",
      namespace: BOOTSTRAP_NAMESPACE,
      labelSelector: WORKER_NODE_LABEL,
    });
    this.tokens.addIndex(BY_WORKER_NODE, (s) => {
      const node = s.metadata?.labels?.[WORKER_NODE_LABEL];
      return node ? [node] : [];
    });
    this.csrs = cache.informer<V1CertificateSigningRequest>({
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      fieldSelector: `spec.signerName=${KUBELET_CLIENT_SIGNER}`,
    });
    this.csrs.addIndex(BY_USERNAME, (csr) => (csr.spec?.username ? [csr.spec.username] : []));
  }

  protected get all(): Informer<KubernetesObject>[] {
    return [
      this.workerNodes,
      this.providers,
      this.nodes,
      this.tokens,
      this.csrs,
    ] as unknown as Informer<KubernetesObject>[];
  }

  /** The WorkerNodes counted against a tenant's quota. */
  nodesOfTenant(tenant: string): WorkerNode[] {
    return this.workerNodes.byIndex(BY_TENANT, tenant);
  }

  /** The private WorkerNodes of a user, by their user label value. */
  privateNodesOf(userLabel: string): WorkerNode[] {
    return this.workerNodes.byIndex(BY_PRIVATE_OWNER, userLabel);
  }

  /** tenantry's bootstrap token Secrets for a WorkerNode name. */
  tokensOf(workerNode: string): V1Secret[] {
    return this.tokens.byIndex(BY_WORKER_NODE, workerNode);
  }

  /** Kubelet client CSRs a user (e.g. `system:bootstrap:<id>`) asked for. */
  csrsBy(username: string): V1CertificateSigningRequest[] {
    return this.csrs.byIndex(BY_USERNAME, username);
  }
}
