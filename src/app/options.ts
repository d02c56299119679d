import type { Logger } from "pino";
import type { Registry } from "prom-client";
import type { BackupOptions } from "../backup/index.js";
import type { LogicalCloudsApi, LogicalCloudsOptions } from "../clouds/index.js";
import type { ClusterRegistry, ClustersOptions } from "../clusters/index.js";
import type { DashboardCapabilityOptions, RunningDashboard } from "../dashboard/index.js";
import type { GatewayCapabilityOptions, RunningGateway } from "../gateway/index.js";
import type { Authenticator, BuiltinIdentity, IdentityOptions } from "../identity/index.js";
import type { ClusterClient } from "../kube/index.js";
import type { MonitorCapabilityOptions } from "../monitor/index.js";
import type { ClusterIdentity, MulticlusterOptions } from "../multicluster/index.js";
import type { Nodes, NodesCapabilityOptions } from "../nodes/index.js";
import type { RuntimesAdmin, RuntimesOptions, RuntimesProxy } from "../runtimes/index.js";
import type { StorageOptions } from "../storage/index.js";
import type { TenantInformers } from "../tenants/index.js";
import type { AdmissionOptions, WebhookCertificateOptions } from "../webhooks/index.js";

export const TENANTRY_NAMESPACE = "tenantry-system";

/** The capabilities with leader-only controllers: each is led on its own Lease, `tenantry-<name>`. */
export const LEADING_CAPABILITIES = [
  "tenants",
  "clusters",
  "multicluster",
  "runtimes",
  "monitor",
  "backup",
  "storage",
  "clouds",
  "nodes",
] as const;

/**
 * The capabilities a process may be asked to run (`capabilities`, `tenantry run --components`), in
 * the order the Manager lists them. The webhook certificate and its keeper start with whatever
 * serves it.
 */
export const CAPABILITY_NAMES = [
  ...LEADING_CAPABILITIES,
  "access",
  "webhooks",
  "identity",
  "gateway",
  "dashboard",
] as const;

export interface TenantryOptions {
  /** Cluster name used in work-queue keys and logs. */
  cluster: string;
  /** The name peers know this cluster by (its identity); default `cluster`. */
  clusterName?: string;
  /**
   * Labels the cluster's administrator chose (region, provider, security policy, hardware),
   * given to peers at peering; absent keeps the ones recorded before.
   */
  clusterLabels?: Record<string, string>;
  /** The cluster registry (Cluster objects): how often registered clusters are probed. */
  clusterRegistry?: ClustersOptions;
  /** Virtual nodes for this cluster's Peerings: probe and heartbeat periods. */
  multicluster?: MulticlusterOptions;
  /** The cluster's kubeconfig; absent with `inCluster`. */
  kubeconfig?: string;
  /** Run as a pod: the service account's token, namespace and CA, the standard way. */
  inCluster?: boolean;
  logger: Logger;
  /**
   * The capabilities this process runs (names of `CAPABILITY_NAMES`; default: all). Each starts
   * with the capabilities it depends on, which provide what it reads but serve nothing and lead
   * nothing here.
   */
  capabilities?: readonly string[];
  /**
   * Whose leader-only controllers this process runs, each while it holds that capability's Lease
   * `tenantry-<name>`: default every capability named in `capabilities`. `false`: none, and no
   * Lease is competed for (this process serves only).
   */
  controllers?: false | readonly string[];
  /**
   * Admission webhooks; on by default, registered with their URL, or with a Service in tenantry's
   * namespace (in-cluster: every replica behind it answers). Off: neither served nor registered.
   */
  webhooks?: AdmissionOptions["webhooks"];
  /** The identity REST API and kube-apiserver's token/authorization webhooks; on by default. */
  identityApi?: IdentityOptions["identityApi"];
  /** Where every component's metrics go (default: a new registry), e.g. one a health server serves. */
  metricsRegistry?: Registry;
  /**
   * The CA bundle (PEM) that signed the client certificate kube-apiserver presents to tenantry's
   * webhooks (admission: its `--admission-control-config-file`; token and authorization reviews
   * too, unless `access` gives a CA of their own): every other caller gets a 401, so a forged
   * AdmissionReview changes nothing. `false`: admission answers anyone, for a control plane that
   * cannot present a certificate (a managed one), where only a NetworkPolicy keeps others out.
   * Required while the webhooks are served.
   */
  webhookClientCa?: string | false;
  /** Address the webhook server listens on and the API server calls (embedded default: loopback). */
  webhookHost?: string;
  webhookPort?: number;
  /**
   * The webhook serving certificate (Secret tenantry-webhook-tls, also served by the identity and
   * logical-clouds APIs): issued and renewed by tenantry (`self`, the default), or issued into the
   * Secret by someone else (`external`: cert-manager) and followed. Checked every `checkIntervalMs`
   * (default 10 minutes); a new one is served without a restart.
   */
  webhookCertificate?: WebhookCertificateOptions;
  namespace?: string;
  /** Identity in leader election; default host name and pid. */
  identity?: string;
  /**
   * Where kube-apiserver's token and authorization webhooks reach tenantry, with a serving
   * certificate it trusts (the embedded default's clusters provide both). The identity API is
   * served there too. Absent: the identity API listens on a free loopback port, webhooks unused.
   */
  access?: IdentityOptions["access"];
  /** kube-apiserver's `--api-audiences`: TokenReviews for them accept tenantry's tokens (default: the usual issuer). */
  apiAudiences?: string[];
  /** The tenant gateway (kubectl-compatible proxy); on by default, on a free port unless given. */
  gateway?: GatewayCapabilityOptions["gateway"];
  /**
   * Prometheus metrics of every component at http://127.0.0.1:<port>/metrics (0 = a free port);
   * none when left out (`tenantry run` serves them on its health address instead).
   */
  metricsPort?: number;
  /**
   * The logical-clouds REST API (DCM's `/v2/projects/…`, HTTPS with tenantry's webhook CA; client
   * certificates of this cluster or bearer tokens); on by default, on a free port of the webhook host.
   */
  logicalClouds?: LogicalCloudsOptions;
  /** The runtimes Admin API (`/services/…`, plain HTTP for the runtimes proxy); on by default, on a free loopback port. */
  runtimesAdmin?: RuntimesOptions["runtimesAdmin"];
  /** The runtimes monitor (MonitorRules): on by default; probe concurrency and webhook delivery tuning. */
  monitor?: MonitorCapabilityOptions;
  /**
   * Backups of runtimes: the object store they go to, and the agent image their Jobs run. Absent:
   * the store named by the Secret `tenantry-backup-store` of tenantry's namespace, if there is one
   * (keys endpoint, bucket, region, accessKeyId, secretAccessKey); else no backups.
   */
  backup?: BackupOptions["backup"];
  /** The runtimes controllers: the image the pre-pull DaemonSets' main container runs (default registry.k8s.io/pause). */
  runtimes?: RuntimesOptions["runtimes"];
  /**
   * The runtimes proxy: `/r/<token>/…` to each runtime, every other path to the Admin API (served in
   * process). On by default, on a free loopback port; runtime URLs the Admin API reports point at it
   * (at `publicUrl` when it is reached through something else, e.g. an ingress).
   */
  runtimesProxy?: RuntimesOptions["runtimesProxy"];
  /**
   * tenantry's storage (pooled, per-tenant encrypted volumes): on by default, with no pool and no
   * node agent in this process unless given (the embedded default gives both).
   */
  storage?: StorageOptions | false;
  /**
   * The web dashboard (built client and JSON API, plain HTTP): on by default, on a free loopback
   * port; `assetsDir` is where the built client is (default dist/dashboard/client).
   */
  dashboard?: DashboardCapabilityOptions;
  /** Worker nodes on demand: the harness's simulated machines, how machines reach kube-apiserver, timings. */
  nodes?: NodesCapabilityOptions;
  identityProviders?: IdentityOptions["identityProviders"];
}

export interface RunningTenantry {
  client: ClusterClient;
  /** Who this cluster is to its peers (ConfigMap tenantry-system/tenantry-cluster-identity). */
  clusterIdentity: ClusterIdentity;
  webhookUrl: string;
  /** Identity REST API, OIDC issuer and kube-apiserver's access webhooks. */
  accessUrl: string;
  /** CA that signed the access server's certificate, for clients of the identity API. */
  accessCaPem: string;
  informers: TenantInformers;
  /** Registered clusters and their credentials, from informers. */
  clusterRegistry: ClusterRegistry;
  builtinIdentity?: BuiltinIdentity;
  authenticator: Authenticator;
  metrics: Registry;
  gateway?: RunningGateway;
  runtimesAdmin?: RuntimesAdmin;
  runtimesProxy?: RuntimesProxy;
  /** The logical-clouds REST API, and the CA its serving certificate chains to. */
  logicalClouds?: { api: LogicalCloudsApi; url: string; caPem: string };
  /** Worker nodes on demand: their caches and provider registry. */
  nodes: Nodes;
  dashboard?: RunningDashboard;
  /** Holds the Lease of every capability whose controllers it runs (false when it runs none). */
  isLeader(): boolean;
  /** The capabilities whose controllers run here now (their Leases held, controllers started). */
  leading(): string[];
  /** Every informer has synced (readiness). */
  ready(): boolean;
  /** This replica leads every capability it competes for and their controllers have started. */
  controllersRunning(): boolean;
  /**
   * About to stop: every server keeps answering but has its clients close each connection after
   * the answer (kube-apiserver's to the webhooks and reviews too), so that their next requests
   * reach another replica.
   */
  drain(): void;
  /** Stops everything; admission requests already received are answered first. */
  stop(): Promise<void>;
}
