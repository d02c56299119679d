import { readFileSync } from "node:fs";
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  type User,
  Watch,
} from "@kubernetes/client-node";
import { UserError } from "../common/index.js";
import { PooledKubeConfig } from "./connection-pool.js";
import { DynamicObjectApi } from "./object-api.js";

/**
 * Returns a copy of `source` whose user entries are named `<cluster>/<user>` (contexts
 * updated to match).
 *
 * Why: client-node's exec and OIDC authenticators cache credentials keyed by the kubeconfig
 * *user name* (`tokenCache[user.name]`). Kubeconfigs generated for different clusters very
 * often reuse a user name such as `admin`; as soon as two of them end up in one KubeConfig
 * (e.g. via `mergeConfig`) or share authenticators, one cluster would be sent the other's
 * token. Qualifying the name with the cluster makes every cached credential belong to
 * exactly one cluster. The copy shares keep-alive connections between its requests (see
 * connection-pool.ts).
 */
export function qualifyUserNames(source: KubeConfig, cluster: string): PooledKubeConfig {
  const prefix = `${cluster}/`;
  const qualify = (user: string) => (user.startsWith(prefix) ? user : `${prefix}${user}`);
  const qualified = new PooledKubeConfig();
  qualified.loadFromOptions({
    clusters: source.getClusters().map((entry) => ({ ...entry })),
    users: source.getUsers().map((user): User => ({ ...user, name: qualify(user.name) })),
    contexts: source.getContexts().map((context) => ({ ...context, user: qualify(context.user) })),
    currentContext: source.getCurrentContext(),
  });
  return qualified;
}

/**
 * How long a watch may go without a byte before client-node cuts it. Its default, 30 s (new in 2.x),
 * cut every quiet watch long before the server ends it: informers ask for 300–600 s, and the
 * server's bookmarks come about once a minute at most. Informers end a stuck watch themselves (30 s
 * after its timeoutSeconds), so this only has to outlast any watch they open.
 */
export const WATCH_IDLE_LIMIT_MS = 15 * 60_000;

/**
 * One named Kubernetes cluster: its kubeconfig and lazily created API clients. Each
 * instance owns its own KubeConfig copy, so any number of clusters can be used from one
 * process without sharing credentials.
 */
export class ClusterClient {
  readonly name: string;
  readonly kubeConfig: PooledKubeConfig;
  private coreApi?: CoreV1Api;
  private appsApi?: AppsV1Api;
  private coordinationApi?: CoordinationV1Api;
  private apiextensionsApi?: ApiextensionsV1Api;
  private objectApi?: DynamicObjectApi;
  private watcher?: Watch;

  constructor(name: string, kubeConfig: KubeConfig) {
    if (!name || name.includes("/")) throw new Error(`invalid cluster name "${name}"`);
    this.name = name;
    this.kubeConfig = qualifyUserNames(kubeConfig, name);
    if (!this.kubeConfig.getCurrentCluster()) {
      throw new Error(`kubeconfig for cluster "${name}" has no current context with a cluster`);
    }
  }

  /** API server URL of the current context. */
  get server(): string {
    return this.kubeConfig.getCurrentCluster()!.server;
  }

  get core(): CoreV1Api {
    this.coreApi ??= this.kubeConfig.makeApiClient(CoreV1Api);
    return this.coreApi;
  }

  get apps(): AppsV1Api {
    this.appsApi ??= this.kubeConfig.makeApiClient(AppsV1Api);
    return this.appsApi;
  }

  get coordination(): CoordinationV1Api {
    this.coordinationApi ??= this.kubeConfig.makeApiClient(CoordinationV1Api);
    return this.coordinationApi;
  }

  get apiextensions(): ApiextensionsV1Api {
    this.apiextensionsApi ??= this.kubeConfig.makeApiClient(ApiextensionsV1Api);
    return this.apiextensionsApi;
  }

  /** Generic object API (a `KubernetesObjectApi`), sharing one discovery cache per cluster. */
  get objects(): DynamicObjectApi {
    this.objectApi ??= DynamicObjectApi.forKubeConfig(this.kubeConfig);
    return this.objectApi;
  }

  get watch(): Watch {
    if (!this.watcher) {
      this.watcher = new Watch(this.kubeConfig);
      // client-node 2.0 has no option for it: the field is private, set in the constructor and read
      // at every watch.
      (this.watcher as unknown as { requestTimeoutMs: number }).requestTimeoutMs = WATCH_IDLE_LIMIT_MS;
    }
    return this.watcher;
  }

  /** Closes its pooled connections: idle ones at once, those of running watches when they end. */
  close(): Promise<void> {
    return this.kubeConfig.close();
  }
}

/**
 * The cluster a pod runs in: its service-account token (re-read as kubelet rotates it), namespace
 * and CA from /var/run/secrets/kubernetes.io/serviceaccount, the API server from
 * KUBERNETES_SERVICE_HOST/PORT.
 */
export function loadInClusterClient(name: string): ClusterClient {
  if (!process.env.KUBERNETES_SERVICE_HOST) {
    throw new UserError(
      "--in-cluster: KUBERNETES_SERVICE_HOST is not set, so this is not a pod; give --kubeconfig instead",
    );
  }
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromCluster();
  return new ClusterClient(name, kubeConfig);
}

/** The namespace of the pod's service account, or undefined outside a pod. */
export function inClusterNamespace(): string | undefined {
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE_FILE, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

const SERVICE_ACCOUNT_NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

export function loadClusterClient(name: string, kubeconfigPath: string): ClusterClient {
  const kubeConfig = new KubeConfig();
  // loadFromFile resolves certificate and key paths relative to the kubeconfig's folder.
  kubeConfig.loadFromFile(kubeconfigPath);
  return new ClusterClient(name, kubeConfig);
}
