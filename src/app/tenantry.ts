import { hostname } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
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
import { UserError } from "../common/index.js";
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
  /** Prometheus metrics of every component at http://127.0.0.1:<port>/metrics (0 = a free port). */
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
   * About to stop: keep answering admission requests and token and authorization reviews, but have
   * kube-apiserver close each connection after its answer, so that its next requests reach another replica.
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
  const { logger } = options;
  const namespace = options.namespace ?? TENANTRY_NAMESPACE;
  if (options.storage) validateStorageOptions(options.storage);
  const callers = options.webhooks === false ? undefined : webhookCallers(options.webhookClientCa);
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
  const cache = new InformerCache(client);
  const informers = new TenantInformers(client, cache);
  const offloading = new MulticlusterInformers(client, namespace);
  const host = options.webhookHost ?? "127.0.0.1";
  const certificate = options.webhookCertificate ?? {};
  const tlsOptions: WebhookTlsOptions = {
    namespace,
    secretName: WEBHOOK_TLS_SECRET,
    ipAddresses: [host],
    dnsNames: ["localhost", `tenantry-webhooks.${namespace}.svc`],
    ...(certificate.validDays !== undefined ? { servingValidDays: certificate.validDays } : {}),
    ...(certificate.renewBeforeDays !== undefined ? { renewBeforeDays: certificate.renewBeforeDays } : {}),
  };
  const issuer = certificate.issuer ?? "self";
  // Independent of each other: waited for together, so that a restarted tenantry answers sooner.
  const [tls] = await Promise.all([
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
    informers.start(),
    offloading.start(),
  ]);
  const store = new QuotaStore(client);
  const quotaAdmission = new QuotaAdmission({
    store,
    namespaces: informers.tenantNamespaces,
    quotasOf: (tenant) => informers.quotasOf(tenant),
    readNamespace: (name) => readNamespaceIfExists(client.core, name),
  });
  const nodes = new Nodes({
    client,
    cache,
    tenants: informers,
    namespace,
    clusterId: clusterIdentity.clusterId,
    logger,
    ...(options.nodes?.localMachines ? { localMachines: options.nodes.localMachines } : {}),
    ...(options.nodes?.apiServer ? { apiServer: options.nodes.apiServer } : {}),
    ...(options.nodes?.timings ? { timings: options.nodes.timings } : {}),
  });
  const clusterRegistry = new ClusterRegistry(client, namespace, {
    ...(options.clusterRegistry?.requestTimeoutMs
      ? { requestTimeoutMs: options.clusterRegistry.requestTimeoutMs }
      : {}),
  });
  const cloudInformers = new CloudInformers(client);
  await Promise.all([clusterRegistry.start(), cloudInformers.start(), nodes.start()]);
  // The declared order of admission: mutators change the object in this order, and the quota
  // reservation runs after every other validator allowed the request.
  const checks: AdmissionCheck[] = [
    ...tenantWebhooks(informers, { ownNamespace: namespace }),
    quotaAdmission.webhook(),
    offloadingPodWebhook(offloading),
    accessGrantWebhook(client.kubeConfig),
    // After the tenants' pod checks: the node pool's tolerations are in place when they look.
    ...nodes.webhooks(),
  ];
  // One mutating and one validating entry per request: kube-apiserver calls tenantry once each way.
  const webhooks = admissionEntries(checks, { tenantLabel: TENANT_LABEL, logger });

  const server =
    callers === undefined
      ? undefined
      : new WebhookServer({
          tls,
          callers,
          registry: metrics,
          host,
          ...(options.webhookPort ? { port: options.webhookPort } : {}),
          logger,
        });
  for (const webhook of webhooks) server?.register(webhook);
  const webhookUrl = (await server?.start()) ?? "";
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
    registry: metrics,
  });
  await Promise.all([providerConfig.start(), authorizer.start()]);
  const provisioner = new TenantProvisioner({
    client,
    informers,
    createTenants: idp.createTenants ?? true,
    logger,
  });
  const reviewClientCaPem = options.access?.reviewClientCaPem ?? (options.webhookClientCa || undefined);
  const accessServer = new AccessServer({
    tls: options.access?.tls ?? tls.serving,
    // kube-apiserver's webhook client certificate asks for reviews as it does for admission.
    ...(reviewClientCaPem ? { reviewClientCaPem } : {}),
    host: options.access?.host ?? (options.identityApi ? options.identityApi.host : undefined) ?? host,
    port: options.access?.port ?? (options.identityApi ? options.identityApi.port : undefined) ?? 0,
    authenticator,
    provisioner,
    ...(builtinIdentity ? { builtin: builtinIdentity } : {}),
    authorize: (spec) => authorizer.review(spec),
    ...(options.apiAudiences ? { apiAudiences: options.apiAudiences } : {}),
    namespacesOf: (tenant) => tenantNamespaces(informers, tenant),
    logger,
    registry: metrics,
  });
  const accessUrl = options.identityApi === false ? "" : await accessServer.start();
  if (builtinIdentity && accessUrl) {
    builtinIdentity.useIssuer(accessUrl);
    await builtinIdentity.start();
  }
  logger.info({ accessUrl }, "identity and access webhooks serving");

  const gateway =
    options.gateway === false
      ? undefined
      : await startGateway({
          client,
          informers,
          authenticator,
          provisioner,
          namespace,
          host: options.gateway?.host ?? host,
          port: options.gateway?.port ?? 0,
          ...(options.gateway?.rateLimit ? { rateLimit: options.gateway.rateLimit } : {}),
          metricsRegistry: metrics,
          metricsPort: options.metricsPort ?? 0,
          logger,
        });
  if (gateway) logger.info({ url: gateway.url }, "tenant gateway serving");
  const backupStore = options.backup?.store ?? (await storeSettingsFromSecret(client, namespace));
  if (!backupStore)
    logger.info("no backup store configured (Secret tenantry-backup-store): runtime backups are off");
  // Served by the runtimes Admin API on every replica: the backup agents' only way to the store.
  const backupBroker =
    backupStore && options.runtimesAdmin !== false
      ? new BackupBroker({ client, cache, store: backupStore, logger })
      : undefined;
  await backupBroker?.start();
  const runtimesInformers = new RuntimesInformers(client, cache);
  await runtimesInformers.start();
  // With backups, a BackupPolicy's idle action culls its idle runtimes (backing them up first).
  const backupCulling = backupStore ? new BackupPolicyCulling(client, cache) : undefined;
  await backupCulling?.start();
  const activityLagMs = proxyOptionsOf(options)?.activityIntervalMs ?? 30_000;
  const plugins = new PluginRegistry();
  // Runtime URLs point at the proxy, which starts once the Admin API it serves is up.
  let proxyUrl: string | undefined;
  const proxyOptions = proxyOptionsOf(options);
  const runtimesAdmin =
    options.runtimesAdmin === false
      ? undefined
      : await startRuntimesAdmin({
          client,
          informers: runtimesInformers,
          pluginOf: (service) => plugins.pluginOf(service),
          authenticator,
          onAuthenticated: (identity) => provisioner.ensure(identity),
          host: options.runtimesAdmin?.host ?? "127.0.0.1",
          port: options.runtimesAdmin?.port ?? 0,
          publicUrl: options.runtimesAdmin?.publicUrl ?? (() => proxyOptions?.publicUrl ?? proxyUrl),
          activityLagMs,
          namespace,
          ...(backupCulling ? { idleCulledBy: backupCulling.idleCulledBy } : {}),
          ...(backupBroker ? { routes: [backupBroker.routes] } : {}),
          logger,
        });
  /** Where runtime pods and backup agents reach the Admin API. */
  const adminUrl = () =>
    (options.runtimesAdmin !== false ? options.runtimesAdmin?.publicUrl?.() : undefined) ??
    runtimesAdmin?.url;
  const runtimesProxy = proxyOptions
    ? await startRuntimesProxy({
        source: new InformerRouteSource(client, { cache }),
        ...(runtimesAdmin ? { admin: { handle: runtimesAdmin.handle } } : {}),
        host: proxyOptions.host ?? "127.0.0.1",
        port: proxyOptions.port ?? 0,
        authenticator,
        ...(proxyOptions.modules ? { modules: proxyOptions.modules } : {}),
        activity: {
          writer: new KubeActivityWriter(client),
          ...(proxyOptions.activityIntervalMs ? { intervalMs: proxyOptions.activityIntervalMs } : {}),
        },
        ...(proxyOptions.trustForwardedHeaders ? { trustForwardedHeaders: true } : {}),
        registry: metrics,
        logger,
      })
    : undefined;
  proxyUrl = runtimesProxy?.url;

  const monitorMetrics = options.monitor === false ? undefined : new MonitorMetrics(metrics);
  const clientCaPem = await readClientCa(client).catch(() => undefined);
  const logicalCloudsApi =
    options.logicalClouds === false
      ? undefined
      : await startLogicalCloudsApi({
          client,
          registry: clusterRegistry,
          informers: cloudInformers,
          tls: tls.serving,
          ...(clientCaPem ? { clientCaPem } : {}),
          authenticator,
          onAuthenticated: (identity) => provisioner.ensure(identity),
          host: options.logicalClouds?.host ?? host,
          port: options.logicalClouds?.port ?? 0,
          logger,
        });

  // Every server of the webhook certificate takes a renewed one without a restart; a new CA (an
  // external issuer's) goes into the webhook configurations too.
  const certificateKeeper = new WebhookCertificateKeeper({
    kubeConfig: client.kubeConfig,
    tls: tlsOptions,
    issuer,
    initial: tls,
    registry: metrics,
    logger,
    ...(certificate.checkIntervalMs ? { checkIntervalMs: certificate.checkIntervalMs } : {}),
    onChange: async (next: WebhookTls, previous: WebhookTls) => {
      server?.rotate(next);
      if (accessUrl && !options.access) accessServer.rotate(next.serving);
      logicalCloudsApi?.rotate(next.serving);
      if (server && next.caPem !== previous.caPem) await registerWebhooks(next.caPem);
    },
  });
  certificateKeeper.start();

  const apiServerCa = client.kubeConfig.getCurrentCluster()?.caData;
  const dashboard =
    options.dashboard === false
      ? undefined
      : await startDashboard({
          client,
          cache,
          informers,
          clusterRegistry,
          cloudInformers,
          runtimesInformers,
          multicluster: offloading,
          grants: authorizer.grants,
          nodes,
          authenticator,
          access: { url: accessUrl, caPem: options.access?.caPem ?? tls.caPem },
          // A person's own requests take the way `tenantry login`'s kubeconfigs take.
          door: gateway
            ? { url: gateway.url, caPem: gateway.caPem }
            : { url: client.server, caPem: apiServerCa ? Buffer.from(apiServerCa, "base64").toString() : "" },
          runtimesAdminUrl: () => runtimesAdmin?.url,
          logicalCloudsApi: () =>
            logicalCloudsApi ? { url: logicalCloudsApi.url, caPem: tls.caPem } : undefined,
          assetsDir: options.dashboard?.assetsDir ?? DASHBOARD_ASSETS_DIR,
          host: options.dashboard?.host ?? "127.0.0.1",
          port: options.dashboard?.port ?? 0,
          logger,
        });

  // Controllers are built afresh each time this replica starts leading: stopped ones do not restart.
  let controllers: { start(): Promise<void>; stop(): Promise<void> }[] = [];
  let controllersRunning = false;
  const elector = new LeaderElector({
    lease: { client, namespace, name: CONTROLLERS_LEASE },
    identity: options.identity ?? `${hostname()}-${process.pid}`,
    logger,
    onStartedLeading: async () => {
      logger.info("leading: starting controllers");
      const mine = [
        // Each reconcile waits on the API server (and its webhooks) for a handful of writes: more
        // in flight keeps the API server busy instead of the work queue (300 tenants: 45 s → 34 s).
        new TenantController({ client, informers, logger, workers: 16 }),
        new QuotaController({
          client,
          cache,
          store,
          namespaces: informers.tenantNamespaces,
          quotas: informers.quotas,
          namespacesOf: (tenant) => informers.namespacesOf(tenant),
          quotasOf: (tenant) => informers.quotasOf(tenant),
          logger,
        }),
        new ClusterHealthController({
          client,
          registry: clusterRegistry,
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
          clusterLabels: clusterRegistry.asLabelSource(),
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
        new PeerCertificateApprover({
          client,
          csrs: offloading.clientCsrs,
          tenants: informers.tenants,
          logger,
        }),
        ...offloadingControllers({
          client,
          informers: offloading,
          clusterId: clusterIdentity.clusterId,
          logger,
        }),
        new ReflectionController({
          client,
          informers: offloading,
          clusterId: clusterIdentity.clusterId,
          logger,
        }),
        new ReplicatedDeploymentController({ client, informers: offloading, logger }),
        new RuntimeServiceController({
          client,
          informers: runtimesInformers,
          plugins,
          tenantryNamespace: namespace,
          ...(options.runtimes?.pauseImage ? { pauseImage: options.runtimes.pauseImage } : {}),
          logger,
        }),
        new RuntimeController({
          client,
          informers: runtimesInformers,
          plugins,
          tenantOf: (name) => informers.tenants.get(undefined, name),
          tenantryNamespace: namespace,
          adminUrl,
          activityLagMs,
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
        ...(options.storage === false
          ? []
          : [new StorageSystem({ ...options.storage, client, cache, namespace, registry: metrics, logger })]),
        new ProjectController({ client, informers: cloudInformers, logger }),
        new LogicalCloudController({ client, registry: clusterRegistry, informers: cloudInformers, logger }),
        ...nodes.controllers(),
      ];
      controllers = mine;
      for (const controller of mine) {
        // Leadership lost while starting (a slow informer sync): these were stopped, start no more.
        if (controllers !== mine) return;
        await controller.start();
      }
      if (controllers === mine) {
        controllersRunning = true;
        logger.info("leading: controllers running");
      }
    },
    onStoppedLeading: async () => {
      controllersRunning = false;
      logger.info("no longer leading: stopping controllers");
      await Promise.all(controllers.map((c) => c.stop()));
      controllers = [];
    },
  });
  if (options.controllers !== false) elector.start();

  return {
    client,
    clusterIdentity,
    webhookUrl,
    accessUrl,
    accessCaPem: options.access?.caPem ?? tls.caPem,
    informers,
    clusterRegistry,
    ...(builtinIdentity ? { builtinIdentity } : {}),
    authenticator,
    metrics,
    ...(gateway ? { gateway } : {}),
    ...(runtimesAdmin ? { runtimesAdmin } : {}),
    ...(runtimesProxy ? { runtimesProxy } : {}),
    ...(logicalCloudsApi
      ? { logicalClouds: { api: logicalCloudsApi, url: logicalCloudsApi.url, caPem: tls.caPem } }
      : {}),
    nodes,
    ...(dashboard ? { dashboard } : {}),
    isLeader: () => elector.isLeader(),
    ready: () =>
      [informers.tenants, informers.templates, informers.tenantNamespaces, informers.quotas].every((i) =>
        i.hasSynced(),
      ),
    controllersRunning: () => controllersRunning && elector.isLeader(),
    drain: () => {
      server?.drain();
      if (accessUrl) accessServer.drain();
    },
    async stop() {
      await certificateKeeper.stop();
      await elector.stop();
      await dashboard?.stop();
      await runtimesProxy?.stop();
      await runtimesAdmin?.stop();
      await backupBroker?.stop();
      await runtimesInformers.stop();
      await backupCulling?.stop();
      await logicalCloudsApi?.stop();
      await gateway?.stop();
      if (accessUrl) await accessServer.stop();
      await server?.stop();
      await builtinIdentity?.stop();
      await providerConfig.stop();
      await authorizer.stop();
      await informers.stop();
      await offloading.stop();
      await clusterRegistry.stop();
      await cloudInformers.stop();
      await nodes.stop();
      await cache.stop();
    },
  };
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
  const deadline = Date.now() + 10_000;
  for (;;) {
    const names = informers
      .namespacesOf(tenant)
      .map((ns) => ns.metadata!.name!)
      .sort();
    if (names.length || Date.now() > deadline) return names;
    await sleep(200);
  }
}
