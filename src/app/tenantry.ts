import { hostname } from "node:os";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { Authorizer, accessGrantClusterRoles, accessGrantWebhook } from "../access/index.js";
import {
  BackupBroker,
  BackupControllers,
  type S3Settings,
  storeSettingsFromSecret,
} from "../backup/index.js";
import {
  CloudInformers,
  LogicalCloudController,
  type LogicalCloudsApi,
  logicalCloudsAdminClusterRole,
  ProjectController,
  startLogicalCloudsApi,
} from "../clouds/index.js";
import { ClusterHealthController, ClusterRegistry } from "../clusters/index.js";
import { pollUntil, UserError } from "../common/index.js";
import { DASHBOARD_ASSETS_DIR, type RunningDashboard, startDashboard } from "../dashboard/index.js";
import {
  gatewayClusterRole,
  type RateLimit,
  type RunningGateway,
  readClientCa,
  startGateway,
} from "../gateway/index.js";
import {
  AccessServer,
  type AccessServerOptions,
  Authenticator,
  BuiltinIdentity,
  type IdentityProvider,
  OidcIdentityProvider,
  type OidcProviderOptions,
  ProviderConfigWatch,
  TenantProvisioner,
} from "../identity/index.js";
import {
  applyObject,
  type ClusterClient,
  InformerCache,
  LeaderElector,
  Lifecycle,
  loadClusterClient,
  loadInClusterClient,
  readNamespaceIfExists,
  registerControllerMetrics,
} from "../kube/index.js";
import { Monitor, MonitorMetrics, type MonitorOptions } from "../monitor/index.js";
import {
  type ClusterIdentity,
  ensureClusterIdentity,
  MulticlusterInformers,
  offloadingControllers,
  offloadingPodWebhook,
  PeerCertificateApprover,
  PeerCertificateRenewer,
  PeeringController,
  type PeeringControllerOptions,
  ReflectionController,
  ReplicatedDeploymentController,
} from "../multicluster/index.js";
import { type LocalMachineHost, Nodes } from "../nodes/index.js";
import {
  InformerRouteSource,
  KubeActivityWriter,
  PluginRegistry,
  RuntimeController,
  RuntimeServiceController,
  type RuntimesAdmin,
  RuntimesInformers,
  type RuntimesProxy,
  runtimesDelegateClusterRole,
  type ServiceModuleFactory,
  startRuntimesAdmin,
  startRuntimesProxy,
} from "../runtimes/index.js";
import { type StorageOptions, StorageSystem, validateStorageOptions } from "../storage/index.js";
import {
  installCrds,
  isSystemComponent,
  namespaceProvisionerClusterRole,
  QuotaAdmission,
  QuotaController,
  QuotaStore,
  runtimeViewerClusterRole,
  TENANT_LABEL,
  TenantController,
  TenantInformers,
  tenantryIdentity,
  tenantWebhooks,
} from "../tenants/index.js";
import {
  type AdmissionCheck,
  admissionEntries,
  applyWebhookConfigurations,
  awaitWebhookTls,
  ensureWebhookTls,
  WEBHOOK_CONFIGURATION,
  WEBHOOK_TLS_SECRET,
  type WebhookCallers,
  type WebhookCertificateIssuer,
  WebhookCertificateKeeper,
  type WebhookEndpoint,
  WebhookServer,
  type WebhookTls,
  type WebhookTlsOptions,
  webhookConfigurations,
} from "../webhooks/index.js";
import { BackupPolicyCulling } from "./backup-culling.js";
import { ALL_CRDS } from "./crds.js";

export const TENANTRY_NAMESPACE = "tenantry-system";
/** The Lease whose holder runs the controllers. */
export const CONTROLLERS_LEASE = "tenantry-controllers";

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
  clusterRegistry?: { probeIntervalMs?: number; requestTimeoutMs?: number };
  /** Virtual nodes for this cluster's Peerings: probe and heartbeat periods. */
  multicluster?: Pick<PeeringControllerOptions, "probeIntervalMs" | "probeTimeoutMs" | "statusHeartbeatMs">;
  /** The cluster's kubeconfig; absent with `inCluster`. */
  kubeconfig?: string;
  /** Run as a pod: the service account's token, namespace and CA, the standard way. */
  inCluster?: boolean;
  logger: Logger;
  /**
   * Controllers (on the replica holding the Lease); on by default. Off: this process serves
   * only (webhooks, identity, gateway, runtimes APIs) and never competes for the Lease.
   */
  controllers?: false;
  /**
   * Admission webhooks; on by default, registered with their URL, or with a Service in tenantry's
   * namespace (in-cluster: every replica behind it answers). Off: neither served nor registered.
   */
  webhooks?: { service?: { name: string; port?: number } } | false;
  /** The identity REST API and kube-apiserver's token/authorization webhooks; on by default. */
  identityApi?: { host?: string; port?: number } | false;
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
  webhookCertificate?: {
    issuer?: WebhookCertificateIssuer;
    validDays?: number;
    renewBeforeDays?: number;
    checkIntervalMs?: number;
  };
  namespace?: string;
  /** Identity in leader election; default host name and pid. */
  identity?: string;
  /**
   * Where kube-apiserver's token and authorization webhooks reach tenantry, with a serving
   * certificate it trusts (the embedded default's clusters provide both). The identity API is
   * served there too. Absent: the identity API listens on a free loopback port, webhooks unused.
   */
  access?: {
    host: string;
    port: number;
    tls: { certPem: string; keyPem: string };
    caPem: string;
    /** CA of kube-apiserver's webhook client certificate: reviews are answered only over it. */
    reviewClientCaPem?: string;
  };
  /** kube-apiserver's `--api-audiences`: TokenReviews for them accept tenantry's tokens (default: the usual issuer). */
  apiAudiences?: string[];
  /** The tenant gateway (kubectl-compatible proxy); on by default, on a free port unless given. */
  gateway?: { host?: string; port?: number; rateLimit?: RateLimit } | false;
  /**
   * Prometheus metrics of every component at http://127.0.0.1:<port>/metrics (0 = a free port);
   * none when left out (`tenantry run` serves them on its health address instead).
   */
  metricsPort?: number;
  /**
   * The logical-clouds REST API (DCM's `/v2/projects/…`, HTTPS with tenantry's webhook CA; client
   * certificates of this cluster or bearer tokens); on by default, on a free port of the webhook host.
   */
  logicalClouds?: { host?: string; port?: number } | false;
  /** The runtimes Admin API (`/services/…`, plain HTTP for the runtimes proxy); on by default, on a free loopback port. */
  runtimesAdmin?: { host?: string; port?: number; publicUrl?: () => string | undefined } | false;
  /** The runtimes monitor (MonitorRules): on by default; probe concurrency and webhook delivery tuning. */
  monitor?: Pick<MonitorOptions, "probeConcurrency" | "webhooks"> | false;
  /**
   * Backups of runtimes: the object store they go to, and the agent image their Jobs run. Absent:
   * the store named by the Secret `tenantry-backup-store` of tenantry's namespace, if there is one
   * (keys endpoint, bucket, region, accessKeyId, secretAccessKey); else no backups.
   */
  backup?: { store: S3Settings; agentImage?: string };
  /** The runtimes controllers: the image the pre-pull DaemonSets' main container runs (default registry.k8s.io/pause). */
  runtimes?: { pauseImage?: string };
  /**
   * The runtimes proxy: `/r/<token>/…` to each runtime, every other path to the Admin API (served in
   * process). On by default, on a free loopback port; runtime URLs the Admin API reports point at it
   * (at `publicUrl` when it is reached through something else, e.g. an ingress).
   */
  runtimesProxy?:
    | {
        host?: string;
        port?: number;
        publicUrl?: string;
        /** How often last activity is written to Runtime status (default 30 s). */
        activityIntervalMs?: number;
        /** Service modules besides owner-auth and inject-headers. */
        modules?: Record<string, ServiceModuleFactory>;
        /** Behind a trusted ingress: keep its X-Forwarded-* headers. */
        trustForwardedHeaders?: boolean;
      }
    | false;
  /**
   * tenantry's storage (pooled, per-tenant encrypted volumes): on by default, with no pool and no
   * node agent in this process unless given (the embedded default gives both).
   */
  storage?: StorageOptions | false;
  /**
   * The web dashboard (built client and JSON API, plain HTTP): on by default, on a free loopback
   * port; `assetsDir` is where the built client is (default dist/dashboard/client).
   */
  dashboard?: { host?: string; port?: number; assetsDir?: string } | false;
  /** Worker nodes on demand. */
  nodes?: {
    /** The harness's simulated machines (embedded default only): adds NodeProvider `simulated`. */
    localMachines?: LocalMachineHost;
    /** kube-apiserver as machines reach it (default: tenantry's own kubeconfig's server and CA). */
    apiServer?: { url: string; caPem: string };
    /** Shorter controller timings, for tests and benchmarks. */
    timings?: { pollMs?: number; runningCheckMs?: number; orphanGraceMs?: number };
  };
  identityProviders?: {
    /** Built-in users and tokens (default on). */
    builtin?: { tokenTtlSeconds?: number; keyRotationSeconds?: number } | false;
    oidc?: OidcProviderOptions[];
    /** More providers, e.g. Keystone. */
    extra?: IdentityProvider[];
    /** Create a user's tenant at first login when it does not exist (default true). */
    createTenants?: boolean;
  };
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
  isLeader(): boolean;
  /** Every informer has synced (readiness). */
  ready(): boolean;
  /** This replica leads and every controller has started (its caches synced): it is doing the work. */
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

/** Who the admission webhooks answer; refuses to start without a decision (see `webhookClientCa`). */
function webhookCallers(clientCa: string | false | undefined): WebhookCallers {
  if (clientCa === false) return "anyone";
  if (!clientCa?.trim()) {
    throw new UserError(
      "webhookClientCa: the CA of kube-apiserver's webhook client certificate is required while admission webhooks are served (`tenantry run --webhook-client-ca FILE`, chart value apiServerClient.caBundle; see README, Install on your own cluster); without it anyone who reaches the webhook port could forge admission reviews",
    );
  }
  return { clientCaPem: clientCa };
}

/**
 * The composition root: wires tenantry's components to one cluster. Webhooks serve on every
 * replica (admission must always answer); controllers run only on the replica holding the Lease.
 */
export async function startTenantry(options: TenantryOptions): Promise<RunningTenantry> {
  const lifecycle = new Lifecycle(options.logger);
  try {
    return await assemble(options, lifecycle);
  } catch (err) {
    // Nothing started on the way stays running (or keeps the process alive) after a failed start.
    await lifecycle.stop().catch(() => undefined);
    throw err;
  }
}

/**
 * Waits for every start, like Promise.all, but also for the ones still going when one fails: each
 * registers itself with the lifecycle as it ends, and a failed start stops whatever did start.
 */
async function allStarted<T extends readonly unknown[]>(
  starts: readonly [...{ [K in keyof T]: Promise<T[K]> }],
): Promise<T> {
  const results = await Promise.allSettled(starts);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

/** What every part of tenantry is built from: the cluster, its identity, the shared cache and TLS. */
interface Core {
  options: TenantryOptions;
  logger: Logger;
  namespace: string;
  client: ClusterClient;
  clusterIdentity: ClusterIdentity;
  metrics: Registry;
  cache: InformerCache;
  informers: TenantInformers;
  offloading: MulticlusterInformers;
  /** Where the webhook, access, gateway and clouds servers listen by default. */
  host: string;
  tls: WebhookTls;
  /** How the webhook certificate is made and renewed (for its keeper). */
  webhookTls: ReturnType<typeof webhookTlsOptions>;
  lifecycle: Lifecycle;
}

async function assemble(options: TenantryOptions, lifecycle: Lifecycle): Promise<RunningTenantry> {
  const core = await startCore(options, lifecycle);
  const { client, logger, informers } = core;
  const parts = await startCapabilityCaches(core);
  const admission = await startAdmission(core, parts);
  const identity = await startIdentity(core, parts.nodes);
  const gateway =
    options.gateway === false
      ? undefined
      : lifecycle.started(
          "gateway",
          await startGateway({
            client,
            informers,
            authenticator: identity.authenticator,
            provisioner: identity.provisioner,
            namespace: core.namespace,
            host: options.gateway?.host ?? core.host,
            port: options.gateway?.port ?? 0,
            ...(options.gateway?.rateLimit ? { rateLimit: options.gateway.rateLimit } : {}),
            metricsRegistry: core.metrics,
            ...(options.metricsPort !== undefined ? { metricsPort: options.metricsPort } : {}),
            logger,
          }),
        );
  const runtimes = await startRuntimes(core, identity);
  const logicalCloudsApi = await startCloudsApi(core, parts, identity);
  keepCertificates(core, admission, identity, logicalCloudsApi);
  const dashboard = await startDashboardOf(core, parts, identity, gateway, runtimes, logicalCloudsApi);
  const election = startElection(core, parts, runtimes);
  const { tls } = core;
  return {
    client,
    clusterIdentity: core.clusterIdentity,
    webhookUrl: admission.webhookUrl,
    accessUrl: identity.accessUrl,
    accessCaPem: options.access?.caPem ?? tls.caPem,
    informers,
    clusterRegistry: parts.clusterRegistry,
    ...(identity.builtinIdentity ? { builtinIdentity: identity.builtinIdentity } : {}),
    authenticator: identity.authenticator,
    metrics: core.metrics,
    ...(gateway ? { gateway } : {}),
    ...(runtimes.admin ? { runtimesAdmin: runtimes.admin } : {}),
    ...(runtimes.proxy ? { runtimesProxy: runtimes.proxy } : {}),
    ...(logicalCloudsApi
      ? { logicalClouds: { api: logicalCloudsApi, url: logicalCloudsApi.url, caPem: tls.caPem } }
      : {}),
    nodes: parts.nodes,
    ...(dashboard ? { dashboard } : {}),
    isLeader: () => election.elector.isLeader(),
    ready: () =>
      [informers.tenants, informers.templates, informers.tenantNamespaces, informers.quotas].every((i) =>
        i.hasSynced(),
      ),
    controllersRunning: () => election.running() && election.elector.isLeader(),
    // Every server asks its clients to reconnect elsewhere; those kube-apiserver calls answer what they have.
    drain: () => {
      admission.server?.drain();
      if (identity.accessUrl) identity.accessServer.drain();
      gateway?.drain();
      runtimes.admin?.drain();
      runtimes.proxy?.drain();
      logicalCloudsApi?.drain();
      dashboard?.drain();
    },
    stop: () => lifecycle.stop(),
  };
}

/** The cluster, its CRDs and identity, the shared cache with the tenants' and offloading informers, and TLS. */
async function startCore(options: TenantryOptions, lifecycle: Lifecycle): Promise<Core> {
  const { logger } = options;
  const namespace = options.namespace ?? TENANTRY_NAMESPACE;
  if (options.storage) validateStorageOptions(options.storage);
  const client = clusterClient(options);
  await installCrds(client.kubeConfig, { crds: ALL_CRDS });
  const clusterIdentity = await ensureClusterIdentity(client, {
    namespace,
    clusterName: options.clusterName ?? options.cluster,
    ...(options.clusterLabels ? { labels: options.clusterLabels } : {}),
  });
  logger.info(clusterIdentity, "cluster identity");
  const metrics = options.metricsRegistry ?? new Registry();
  registerControllerMetrics(metrics);
  // The home cluster's shared informers (one per resource): components that take it watch
  // nothing twice. It is stopped last, after everything reading it.
  const cache = lifecycle.started("cache", new InformerCache(client));
  const informers = new TenantInformers(client, cache);
  const offloading = new MulticlusterInformers(client, namespace);
  const host = options.webhookHost ?? "127.0.0.1";
  const webhookTls = webhookTlsOptions(options, namespace, host);
  const { tlsOptions, issuer } = webhookTls;
  // Independent of each other: waited for together, so that a restarted tenantry answers sooner.
  const [tls] = await allStarted([
    issuer === "self"
      ? ensureWebhookTls(client.kubeConfig, tlsOptions)
      : awaitWebhookTls(client.kubeConfig, tlsOptions, logger),
    ...[
      namespaceProvisionerClusterRole,
      runtimeViewerClusterRole,
      ...accessGrantClusterRoles,
      gatewayClusterRole,
      runtimesDelegateClusterRole,
      logicalCloudsAdminClusterRole,
    ].map((role) => applyObject(client, role)),
    informers.start().then(() => lifecycle.started("tenant informers", informers)),
    offloading.start().then(() => lifecycle.started("offloading informers", offloading)),
  ]);
  return {
    options,
    logger,
    namespace,
    client,
    clusterIdentity,
    metrics,
    cache,
    informers,
    offloading,
    host,
    tls,
    webhookTls,
    lifecycle,
  };
}

function webhookTlsOptions(options: TenantryOptions, namespace: string, host: string) {
  const certificate = options.webhookCertificate ?? {};
  const tlsOptions: WebhookTlsOptions = {
    namespace,
    secretName: WEBHOOK_TLS_SECRET,
    ipAddresses: [host],
    dnsNames: ["localhost", `tenantry-webhooks.${namespace}.svc`],
    ...(certificate.validDays !== undefined ? { servingValidDays: certificate.validDays } : {}),
    ...(certificate.renewBeforeDays !== undefined ? { renewBeforeDays: certificate.renewBeforeDays } : {}),
  };
  return { tlsOptions, issuer: certificate.issuer ?? "self", checkIntervalMs: certificate.checkIntervalMs };
}

type CapabilityCaches = Awaited<ReturnType<typeof startCapabilityCaches>>;

/** The quota store, worker nodes, the cluster registry and the logical clouds' caches. */
async function startCapabilityCaches(core: Core) {
  const { client, options, informers, lifecycle } = core;
  const store = new QuotaStore(client);
  const quotaAdmission = new QuotaAdmission({
    store,
    namespaces: informers.tenantNamespaces,
    quotasOf: (tenant) => informers.quotasOf(tenant),
    readNamespace: (name) => readNamespaceIfExists(client.core, name),
  });
  const nodes = new Nodes({
    client,
    cache: core.cache,
    tenants: informers,
    namespace: core.namespace,
    clusterId: core.clusterIdentity.clusterId,
    logger: core.logger,
    ...(options.nodes?.localMachines ? { localMachines: options.nodes.localMachines } : {}),
    ...(options.nodes?.apiServer ? { apiServer: options.nodes.apiServer } : {}),
    ...(options.nodes?.timings ? { timings: options.nodes.timings } : {}),
  });
  const clusterRegistry = new ClusterRegistry(client, core.namespace, {
    ...(options.clusterRegistry?.requestTimeoutMs
      ? { requestTimeoutMs: options.clusterRegistry.requestTimeoutMs }
      : {}),
  });
  const cloudInformers = new CloudInformers(client);
  await allStarted(
    (
      [
        ["cluster registry", clusterRegistry],
        ["cloud informers", cloudInformers],
        ["nodes", nodes],
      ] as const
    ).map(([name, part]) => part.start().then(() => lifecycle.started(name, part))),
  );
  return { store, quotaAdmission, nodes, clusterRegistry, cloudInformers };
}

type Admission = Awaited<ReturnType<typeof startAdmission>>;

/** The admission webhook server, with one mutating and one validating entry, registered with kube-apiserver. */
async function startAdmission(core: Core, parts: CapabilityCaches) {
  const { options, client, namespace, logger, informers, tls } = core;
  const callers = options.webhooks === false ? undefined : webhookCallers(options.webhookClientCa);
  // The declared order of admission: mutators change the object in this order, and the quota
  // reservation runs after every other validator allowed the request.
  const checks: AdmissionCheck[] = [
    ...tenantWebhooks(informers, { ownNamespace: namespace }),
    parts.quotaAdmission.webhook(),
    offloadingPodWebhook(core.offloading),
    accessGrantWebhook(client.kubeConfig),
    // After the tenants' pod checks: the node pool's tolerations are in place when they look.
    ...parts.nodes.webhooks(),
  ];
  // One mutating and one validating entry per request: kube-apiserver calls tenantry once each way.
  const webhooks = admissionEntries(checks, { tenantLabel: TENANT_LABEL, logger });
  const server =
    callers === undefined
      ? undefined
      : new WebhookServer({
          tls,
          callers,
          registry: core.metrics,
          host: core.host,
          ...(options.webhookPort ? { port: options.webhookPort } : {}),
          logger,
        });
  for (const webhook of webhooks) server?.register(webhook);
  const webhookUrl = (await server?.start()) ?? "";
  if (server) core.lifecycle.started("admission webhooks", server);
  const service = options.webhooks ? options.webhooks.service : undefined;
  const registerWebhooks = async (caPem: string) => {
    const endpoint: WebhookEndpoint = service
      ? { service: { namespace, name: service.name, port: service.port ?? 443 }, caPem }
      : { url: webhookUrl, caPem };
    await applyWebhookConfigurations(
      client.kubeConfig,
      webhookConfigurations(WEBHOOK_CONFIGURATION, webhooks, endpoint, namespace),
    );
  };
  if (server) {
    await registerWebhooks(tls.caPem);
    logger.info(
      { webhookUrl, service, webhooks: webhooks.map((w) => w.name) },
      "admission webhooks registered",
    );
  }
  return { server, webhookUrl, registerWebhooks };
}

type Identity = Awaited<ReturnType<typeof startIdentity>>;

/** Identity providers, the authorizer, tenant provisioning at first login and the access server. */
async function startIdentity(core: Core, nodes: Nodes) {
  const { options, client, namespace, logger, informers, lifecycle } = core;
  const idp = options.identityProviders ?? {};
  const builtinIdentity =
    idp.builtin === false
      ? undefined
      : new BuiltinIdentity({ client, namespace, logger, ...(idp.builtin ?? {}) });
  const fixedProviders = [
    ...(builtinIdentity ? [builtinIdentity] : []),
    ...(idp.oidc ?? []).map((o) => new OidcIdentityProvider(o)),
    ...(idp.extra ?? []),
  ];
  const authenticator = new Authenticator({ providers: fixedProviders });
  // Keystone and OIDC providers configured at run time (Secret tenantry-identity-providers).
  const providerConfig = new ProviderConfigWatch({
    client,
    namespace,
    authenticator,
    fixed: fixedProviders,
    logger,
  });
  const systemIdentity = tenantryIdentity("", namespace);
  const authorizer = new Authorizer({
    client,
    informers,
    isSystem: (requester) => isSystemComponent(requester, systemIdentity),
    workerNodes: nodes.informers.workerNodes,
    logger,
    registry: core.metrics,
  });
  await allStarted([
    providerConfig.start().then(() => lifecycle.started("identity provider configuration", providerConfig)),
    authorizer.start().then(() => lifecycle.started("authorizer", authorizer)),
  ]);
  const provisioner = new TenantProvisioner({
    client,
    informers,
    createTenants: idp.createTenants ?? true,
    logger,
  });
  const accessServer = new AccessServer(
    accessServerOptions(core, authenticator, provisioner, authorizer, builtinIdentity),
  );
  const accessUrl = options.identityApi === false ? "" : await accessServer.start();
  if (accessUrl) lifecycle.started("access server", accessServer);
  if (builtinIdentity && accessUrl) {
    builtinIdentity.useIssuer(accessUrl);
    await builtinIdentity.start();
    lifecycle.started("built-in identity", builtinIdentity);
  }
  logger.info({ accessUrl }, "identity and access webhooks serving");
  return { builtinIdentity, authenticator, provisioner, authorizer, accessServer, accessUrl };
}

function accessServerOptions(
  core: Core,
  authenticator: Authenticator,
  provisioner: TenantProvisioner,
  authorizer: Authorizer,
  builtinIdentity: BuiltinIdentity | undefined,
): AccessServerOptions {
  const { options } = core;
  const reviewClientCaPem = options.access?.reviewClientCaPem ?? (options.webhookClientCa || undefined);
  return {
    tls: options.access?.tls ?? core.tls.serving,
    // kube-apiserver's webhook client certificate asks for reviews as it does for admission.
    ...(reviewClientCaPem ? { reviewClientCaPem } : {}),
    host: options.access?.host ?? (options.identityApi ? options.identityApi.host : undefined) ?? core.host,
    port: options.access?.port ?? (options.identityApi ? options.identityApi.port : undefined) ?? 0,
    authenticator,
    provisioner,
    ...(builtinIdentity ? { builtin: builtinIdentity } : {}),
    authorize: (spec) => authorizer.review(spec),
    ...(options.apiAudiences ? { apiAudiences: options.apiAudiences } : {}),
    namespacesOf: (tenant) => tenantNamespaces(core.informers, tenant),
    logger: core.logger,
    registry: core.metrics,
  };
}

type Runtimes = Awaited<ReturnType<typeof startRuntimes>>;

/** The runtimes' caches, backups' broker and idle culling, the Admin API and the proxy in front of the runtimes. */
async function startRuntimes(core: Core, identity: Identity) {
  const { options, client, cache, namespace, logger, lifecycle } = core;
  const backupStore = options.backup?.store ?? (await storeSettingsFromSecret(client, namespace));
  if (!backupStore)
    logger.info("no backup store configured (Secret tenantry-backup-store): runtime backups are off");
  // Served by the runtimes Admin API on every replica: the backup agents' only way to the store.
  const backupBroker =
    backupStore && options.runtimesAdmin !== false
      ? new BackupBroker({ client, cache, store: backupStore, logger })
      : undefined;
  await backupBroker?.start();
  if (backupBroker) lifecycle.started("backup broker", backupBroker);
  const informers = new RuntimesInformers(client, cache);
  await informers.start();
  lifecycle.started("runtimes informers", informers);
  // With backups, a BackupPolicy's idle action culls its idle runtimes (backing them up first).
  const backupCulling = backupStore ? new BackupPolicyCulling(client, cache) : undefined;
  await backupCulling?.start();
  if (backupCulling) lifecycle.started("backup culling", backupCulling);
  const proxyOptions = proxyOptionsOf(options);
  const activityLagMs = proxyOptions?.activityIntervalMs ?? 30_000;
  const plugins = new PluginRegistry();
  // Runtime URLs point at the proxy, which starts once the Admin API it serves is up.
  let proxyUrl: string | undefined;
  const admin =
    options.runtimesAdmin === false
      ? undefined
      : lifecycle.started(
          "runtimes Admin API",
          await startRuntimesAdmin({
            client,
            informers,
            pluginOf: (service) => plugins.pluginOf(service),
            authenticator: identity.authenticator,
            onAuthenticated: (person) => identity.provisioner.ensure(person),
            host: options.runtimesAdmin?.host ?? "127.0.0.1",
            port: options.runtimesAdmin?.port ?? 0,
            publicUrl: options.runtimesAdmin?.publicUrl ?? (() => proxyOptions?.publicUrl ?? proxyUrl),
            activityLagMs,
            namespace,
            ...(backupCulling ? { idleCulledBy: backupCulling.idleCulledBy } : {}),
            ...(backupBroker ? { routes: [backupBroker.routes] } : {}),
            logger,
          }),
        );
  /** Where runtime pods and backup agents reach the Admin API. */
  const adminUrl = () =>
    (options.runtimesAdmin !== false ? options.runtimesAdmin?.publicUrl?.() : undefined) ?? admin?.url;
  const proxy = proxyOptions
    ? lifecycle.started(
        "runtimes proxy",
        await startRuntimesProxy({
          source: new InformerRouteSource(client, { cache }),
          ...(admin ? { admin: { handle: admin.handle } } : {}),
          host: proxyOptions.host ?? "127.0.0.1",
          port: proxyOptions.port ?? 0,
          authenticator: identity.authenticator,
          ...(proxyOptions.modules ? { modules: proxyOptions.modules } : {}),
          activity: {
            writer: new KubeActivityWriter(client),
            ...(proxyOptions.activityIntervalMs ? { intervalMs: proxyOptions.activityIntervalMs } : {}),
          },
          ...(proxyOptions.trustForwardedHeaders ? { trustForwardedHeaders: true } : {}),
          registry: core.metrics,
          logger,
        }),
      )
    : undefined;
  proxyUrl = proxy?.url;
  return {
    backupStore,
    backupBroker,
    informers,
    backupCulling,
    plugins,
    activityLagMs,
    admin,
    adminUrl,
    proxy,
  };
}

/** The logical clouds' DCM API, unless turned off. */
async function startCloudsApi(
  core: Core,
  parts: CapabilityCaches,
  identity: Identity,
): Promise<LogicalCloudsApi | undefined> {
  const { options } = core;
  if (options.logicalClouds === false) return undefined;
  const clientCaPem = await readClientCa(core.client).catch(() => undefined);
  const api = await startLogicalCloudsApi({
    client: core.client,
    registry: parts.clusterRegistry,
    informers: parts.cloudInformers,
    tls: core.tls.serving,
    ...(clientCaPem ? { clientCaPem } : {}),
    authenticator: identity.authenticator,
    onAuthenticated: (person) => identity.provisioner.ensure(person),
    host: options.logicalClouds?.host ?? core.host,
    port: options.logicalClouds?.port ?? 0,
    logger: core.logger,
  });
  return core.lifecycle.started("logical clouds API", api);
}

/**
 * Every server of the webhook certificate takes a renewed one without a restart; a new CA (an
 * external issuer's) goes into the webhook configurations too.
 */
function keepCertificates(
  core: Core,
  admission: Admission,
  identity: Identity,
  logicalCloudsApi: LogicalCloudsApi | undefined,
): void {
  const { options } = core;
  const { tlsOptions, issuer, checkIntervalMs } = core.webhookTls;
  const keeper = new WebhookCertificateKeeper({
    kubeConfig: core.client.kubeConfig,
    tls: tlsOptions,
    issuer,
    initial: core.tls,
    registry: core.metrics,
    logger: core.logger,
    ...(checkIntervalMs ? { checkIntervalMs } : {}),
    onChange: async (next: WebhookTls, previous: WebhookTls) => {
      admission.server?.rotate(next);
      if (identity.accessUrl && !options.access) identity.accessServer.rotate(next.serving);
      logicalCloudsApi?.rotate(next.serving);
      if (admission.server && next.caPem !== previous.caPem) await admission.registerWebhooks(next.caPem);
    },
  });
  keeper.start();
  core.lifecycle.started("webhook certificate keeper", keeper);
}

async function startDashboardOf(
  core: Core,
  parts: CapabilityCaches,
  identity: Identity,
  gateway: RunningGateway | undefined,
  runtimes: Runtimes,
  logicalCloudsApi: LogicalCloudsApi | undefined,
): Promise<RunningDashboard | undefined> {
  const { options, client, tls } = core;
  if (options.dashboard === false) return undefined;
  const apiServerCa = client.kubeConfig.getCurrentCluster()?.caData;
  const dashboard = await startDashboard({
    client,
    cache: core.cache,
    informers: core.informers,
    clusterRegistry: parts.clusterRegistry,
    cloudInformers: parts.cloudInformers,
    runtimesInformers: runtimes.informers,
    multicluster: core.offloading,
    grants: identity.authorizer.grants,
    nodes: parts.nodes,
    authenticator: identity.authenticator,
    access: { url: identity.accessUrl, caPem: options.access?.caPem ?? tls.caPem },
    // A person's own requests take the way `tenantry login`'s kubeconfigs take.
    door: gateway
      ? { url: gateway.url, caPem: gateway.caPem }
      : { url: client.server, caPem: apiServerCa ? Buffer.from(apiServerCa, "base64").toString() : "" },
    runtimesAdminUrl: () => runtimes.admin?.url,
    logicalCloudsApi: () => (logicalCloudsApi ? { url: logicalCloudsApi.url, caPem: tls.caPem } : undefined),
    assetsDir: options.dashboard?.assetsDir ?? DASHBOARD_ASSETS_DIR,
    host: options.dashboard?.host ?? "127.0.0.1",
    port: options.dashboard?.port ?? 0,
    logger: core.logger,
  });
  return core.lifecycle.started("dashboard", dashboard);
}

/**
 * The Lease election: while this replica leads, the controllers run. They are built afresh each
 * time it starts leading (a stopped controller does not restart).
 */
function startElection(core: Core, parts: CapabilityCaches, runtimes: Runtimes) {
  const { options, logger } = core;
  // Registered once: the controllers built on each new lead share them (a second registration throws).
  const monitorMetrics = options.monitor === false ? undefined : new MonitorMetrics(core.metrics);
  let controllers: { start(): Promise<void>; stop(): Promise<void> }[] = [];
  let running = false;
  const elector = new LeaderElector({
    lease: { client: core.client, namespace: core.namespace, name: CONTROLLERS_LEASE },
    identity: options.identity ?? `${hostname()}-${process.pid}`,
    logger,
    onStartedLeading: async () => {
      logger.info("leading: starting controllers");
      const mine = leaderControllers(core, parts, runtimes, monitorMetrics);
      controllers = mine;
      for (const controller of mine) {
        // Leadership lost while starting (a slow informer sync): these were stopped, start no more.
        if (controllers !== mine) return;
        await controller.start();
      }
      if (controllers === mine) {
        running = true;
        logger.info("leading: controllers running");
      }
    },
    onStoppedLeading: async () => {
      running = false;
      logger.info("no longer leading: stopping controllers");
      await Promise.all(controllers.map((c) => c.stop()));
      controllers = [];
    },
  });
  if (options.controllers !== false) elector.start();
  core.lifecycle.started("leader election", elector);
  return { elector, running: () => running };
}

/** Every controller, in starting order; run only by the replica holding the Lease. */
function leaderControllers(
  core: Core,
  parts: CapabilityCaches,
  runtimes: Runtimes,
  monitorMetrics: MonitorMetrics | undefined,
) {
  const { options, client, cache, namespace, logger, informers, offloading, metrics } = core;
  const clusterId = core.clusterIdentity.clusterId;
  return [
    // Each reconcile waits on the API server (and its webhooks) for a handful of writes: more
    // in flight keeps the API server busy instead of the work queue (300 tenants: 45 s → 34 s).
    new TenantController({ client, informers, logger, workers: 16 }),
    new QuotaController({
      client,
      cache,
      store: parts.store,
      namespaces: informers.tenantNamespaces,
      quotas: informers.quotas,
      namespacesOf: (tenant) => informers.namespacesOf(tenant),
      quotasOf: (tenant) => informers.quotasOf(tenant),
      logger,
    }),
    new ClusterHealthController({
      client,
      registry: parts.clusterRegistry,
      logger,
      ...(options.clusterRegistry?.probeIntervalMs
        ? { probeIntervalMs: options.clusterRegistry.probeIntervalMs }
        : {}),
    }),
    new PeeringController({
      client,
      namespace,
      informers: offloading,
      logger,
      clusterLabels: parts.clusterRegistry.asLabelSource(),
      ...options.multicluster,
    }),
    // Peer certificates: this cluster renews its own with its providers and approves its consumers'.
    new PeerCertificateRenewer({
      client,
      peerings: offloading.peerings,
      peerSecrets: offloading.peerSecrets,
      namespace,
      registry: metrics,
      logger,
    }),
    new PeerCertificateApprover({ client, csrs: offloading.clientCsrs, tenants: informers.tenants, logger }),
    ...offloadingControllers({ client, informers: offloading, clusterId, logger }),
    new ReflectionController({ client, informers: offloading, clusterId, logger }),
    new ReplicatedDeploymentController({ client, informers: offloading, logger }),
    ...runtimesControllers(core, runtimes, monitorMetrics),
    ...(options.storage === false
      ? []
      : [new StorageSystem({ ...options.storage, client, cache, namespace, registry: metrics, logger })]),
    new ProjectController({ client, informers: parts.cloudInformers, logger }),
    new LogicalCloudController({
      client,
      registry: parts.clusterRegistry,
      informers: parts.cloudInformers,
      logger,
    }),
    ...parts.nodes.controllers(),
  ];
}

/** The runtime services' and runtimes' controllers, the monitor and the backup controllers. */
function runtimesControllers(core: Core, runtimes: Runtimes, monitorMetrics: MonitorMetrics | undefined) {
  const { options, client, cache, namespace, logger, informers } = core;
  const { backupStore, backupBroker, backupCulling, plugins, adminUrl } = runtimes;
  return [
    new RuntimeServiceController({
      client,
      informers: runtimes.informers,
      plugins,
      tenantryNamespace: namespace,
      ...(options.runtimes?.pauseImage ? { pauseImage: options.runtimes.pauseImage } : {}),
      logger,
    }),
    new RuntimeController({
      client,
      informers: runtimes.informers,
      plugins,
      tenantOf: (name) => informers.tenants.get(undefined, name),
      tenantryNamespace: namespace,
      adminUrl,
      activityLagMs: runtimes.activityLagMs,
      ...(backupCulling ? { idleCulledBy: backupCulling.idleCulledBy } : {}),
      logger,
    }),
    ...(monitorMetrics && options.monitor !== false
      ? [new Monitor({ client, cache, metrics: monitorMetrics, logger, ...options.monitor })]
      : []),
    ...(backupStore
      ? [
          new BackupControllers({
            client,
            cache,
            store: backupStore,
            namespace,
            brokerUrl: () => (backupBroker ? adminUrl() : undefined),
            ...(options.backup?.agentImage ? { agentImage: options.backup.agentImage } : {}),
            logger,
          }),
        ]
      : []),
  ];
}

function proxyOptionsOf(options: TenantryOptions) {
  return options.runtimesProxy === false ? undefined : (options.runtimesProxy ?? {});
}

function clusterClient(options: TenantryOptions): ClusterClient {
  if (options.inCluster) {
    if (options.kubeconfig) throw new UserError("give either a kubeconfig or in-cluster mode, not both");
    return loadInClusterClient(options.cluster);
  }
  if (!options.kubeconfig) throw new UserError("a kubeconfig is needed outside in-cluster mode");
  return loadClusterClient(options.cluster, options.kubeconfig);
}

/** A tenant's namespaces from the cache, waiting up to 10 s for the first one of a tenant just created. */
async function tenantNamespaces(informers: TenantInformers, tenant: string): Promise<string[]> {
  const names = await pollUntil(
    () => {
      const found = informers.namespacesOf(tenant).map((ns) => ns.metadata!.name!);
      return found.length ? found.sort() : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 200 },
  );
  return names ?? [];
}
