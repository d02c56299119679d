import { hostname } from "node:os";
import { Registry } from "prom-client";
import { AccessCapability } from "../access/index.js";
import { BackupCapability } from "../backup/index.js";
import { CLOUDS, CloudsCapability } from "../clouds/index.js";
import { CLUSTER_REGISTRY, ClustersCapability } from "../clusters/index.js";
import { UserError } from "../common/index.js";
import { DASHBOARD, DashboardCapability } from "../dashboard/index.js";
import { GATEWAY, GatewayCapability } from "../gateway/index.js";
import { IDENTITY, IdentityCapability } from "../identity/index.js";
import * as kube from "../kube/index.js";
import { MonitorCapability } from "../monitor/index.js";
import {
  type ClusterIdentity,
  ensureClusterIdentity,
  MulticlusterCapability,
} from "../multicluster/index.js";
import { NODES, NodesCapability } from "../nodes/index.js";
import { RUNTIMES, RuntimesCapability } from "../runtimes/index.js";
import { StorageCapability } from "../storage/index.js";
import { installCrds, TENANT_INFORMERS, TENANT_LABEL, TenantsCapability } from "../tenants/index.js";
import { ADMISSION_URL, AdmissionCapability, WebhookCertificateCapability } from "../webhooks/index.js";
import { ALL_CRDS } from "./crds.js";
import {
  CONTROLLERS_LEASE,
  type RunningTenantry,
  TENANTRY_NAMESPACE,
  type TenantryOptions,
} from "./options.js";

export {
  CONTROLLERS_LEASE,
  type RunningTenantry,
  TENANTRY_NAMESPACE,
  type TenantryOptions,
} from "./options.js";

/**
 * The composition root: tenantry's capabilities on one cluster, started by a Manager. Servers and
 * admission run on every replica; leader-only controllers on the replica holding the Lease.
 */
export async function startTenantry(options: TenantryOptions): Promise<RunningTenantry> {
  const lifecycle = new kube.Lifecycle(options.logger);
  try {
    // Made first: wrong options (storage, the webhook client CA) are refused before anything starts.
    const manager = new kube.Manager(capabilities(options), options.logger);
    const { context, clusterIdentity } = await sharedContext(options, lifecycle);
    await manager.start(context);
    const identity = options.identity ?? `${hostname()}-${process.pid}`;
    const lease = { client: context.client, namespace: context.namespace, name: CONTROLLERS_LEASE };
    const elector = (callbacks: kube.LeadershipCallbacks) =>
      new kube.LeaderElector({ lease, identity, logger: options.logger, ...callbacks });
    const leadership = manager.lead(context, elector, options.controllers !== false);
    return running(context, clusterIdentity, manager, leadership);
  } catch (err) {
    // Nothing started on the way stays running (or keeps the process alive) after a failed start.
    await lifecycle.stop().catch(() => undefined);
    throw err;
  }
}

/** Every capability, listed in the order the leader starts their controllers. */
function capabilities(options: TenantryOptions): kube.Capability[] {
  const certificate = new WebhookCertificateCapability(options.webhookCertificate);
  const [tenants, multicluster, access] = [
    new TenantsCapability(),
    new MulticlusterCapability(options.multicluster),
    new AccessCapability(),
  ];
  const nodes = new NodesCapability(options.nodes);
  return [
    certificate,
    tenants,
    new ClustersCapability(options.clusterRegistry),
    multicluster,
    new RuntimesCapability(options),
    new MonitorCapability(options.monitor),
    new BackupCapability({
      ...(options.backup ? { backup: options.backup } : {}),
      adminApi: options.runtimesAdmin !== false,
    }),
    new StorageCapability(options.storage),
    new CloudsCapability(options.logicalClouds),
    nodes,
    access,
    // The declared order of admission; the node pool's tolerations are in place when the tenants' pod checks look.
    new AdmissionCapability([tenants, multicluster, access, nodes], {
      webhooks: options.webhooks,
      clientCa: options.webhookClientCa,
      port: options.webhookPort,
      tenantLabel: TENANT_LABEL,
    }),
    new IdentityCapability(options),
    new GatewayCapability(options),
    new DashboardCapability(options.dashboard),
    certificate.keeper(["webhooks", "identity", "clouds"]),
  ];
}

/** The cluster with tenantry's CRDs, its identity, the metrics and the shared cache (stopped last). */
async function sharedContext(options: TenantryOptions, lifecycle: kube.Lifecycle) {
  const { logger } = options;
  const namespace = options.namespace ?? TENANTRY_NAMESPACE;
  const client = clusterClient(options);
  await installCrds(client.kubeConfig, { crds: ALL_CRDS });
  const clusterIdentity = await ensureClusterIdentity(client, {
    namespace,
    clusterName: options.clusterName ?? options.cluster,
    ...(options.clusterLabels ? { labels: options.clusterLabels } : {}),
  });
  logger.info(clusterIdentity, "cluster identity");
  const metrics = options.metricsRegistry ?? new Registry();
  kube.registerControllerMetrics(metrics);
  const cache = lifecycle.started("cache", new kube.InformerCache(client));
  const host = options.webhookHost ?? "127.0.0.1";
  const { clusterId } = clusterIdentity;
  const values = new kube.Provided();
  const context: kube.SharedContext = {
    client,
    cache,
    logger,
    metrics,
    namespace,
    clusterId,
    host,
    lifecycle,
    values,
  };
  return { context, clusterIdentity };
}

function running(
  context: kube.SharedContext,
  clusterIdentity: ClusterIdentity,
  manager: kube.Manager,
  leadership: kube.LeaderControllers,
): RunningTenantry {
  const { client, values, metrics, lifecycle } = context;
  const { builtinIdentity, ...identity } = values.get(IDENTITY);
  const { admin, proxy } = values.get(RUNTIMES);
  const [gateway, dashboard, clouds] = [values.find(GATEWAY), values.find(DASHBOARD), values.get(CLOUDS).api];
  const informers = values.get(TENANT_INFORMERS);
  return {
    client,
    clusterIdentity,
    webhookUrl: values.get(ADMISSION_URL),
    accessUrl: identity.accessUrl,
    accessCaPem: identity.accessCaPem,
    informers,
    clusterRegistry: values.get(CLUSTER_REGISTRY),
    ...(builtinIdentity ? { builtinIdentity } : {}),
    authenticator: identity.authenticator,
    metrics,
    ...(gateway ? { gateway } : {}),
    ...(admin ? { runtimesAdmin: admin } : {}),
    ...(proxy ? { runtimesProxy: proxy } : {}),
    ...(clouds ? { logicalClouds: clouds } : {}),
    nodes: values.get(NODES),
    ...(dashboard ? { dashboard } : {}),
    isLeader: () => leadership.isLeader(),
    ready: () =>
      [informers.tenants, informers.templates, informers.tenantNamespaces, informers.quotas].every((i) =>
        i.hasSynced(),
      ),
    controllersRunning: () => leadership.running(),
    // Every server asks its clients to reconnect elsewhere; those kube-apiserver calls answer what they have.
    drain: () => manager.drain(),
    stop: () => lifecycle.stop(),
  };
}

function clusterClient(options: TenantryOptions): kube.ClusterClient {
  if (options.inCluster) {
    if (options.kubeconfig) throw new UserError("give either a kubeconfig or in-cluster mode, not both");
    return kube.loadInClusterClient(options.cluster);
  }
  if (!options.kubeconfig) throw new UserError("a kubeconfig is needed outside in-cluster mode");
  return kube.loadClusterClient(options.cluster, options.kubeconfig);
}
