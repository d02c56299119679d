import { Registry } from "prom-client";
import { UserError } from "../common/index.js";
import * as kube from "../kube/index.js";
import { ensureClusterIdentity } from "../multicluster/index.js";
import { installCrds } from "../tenants/index.js";
import { ALL_CRDS } from "./crds.js";
import { TENANTRY_NAMESPACE, type TenantryOptions } from "./options.js";

/** The cluster with tenantry's CRDs, its identity, the metrics and the shared cache (stopped last). */
export async function sharedContext(options: TenantryOptions, lifecycle: kube.Lifecycle) {
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

function clusterClient(options: TenantryOptions): kube.ClusterClient {
  if (options.inCluster) {
    if (options.kubeconfig) throw new UserError("give either a kubeconfig or in-cluster mode, not both");
    return kube.loadInClusterClient(options.cluster);
  }
  if (!options.kubeconfig) throw new UserError("a kubeconfig is needed outside in-cluster mode");
  return kube.loadClusterClient(options.cluster, options.kubeconfig);
}
