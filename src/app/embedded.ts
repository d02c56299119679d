import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Logger } from "pino";
import type { ClusterState, LocalObjectStoreState } from "../localcluster/index.js";
import { type RunningTenantry, startTenantry } from "./tenantry.js";

/**
 * tenantry on a cluster of the embedded default: that cluster's kube-apiserver was started with
 * its token and authorization webhooks pointing at a fixed loopback port, with a serving
 * certificate from the cluster's CA, so tenantry serves them there.
 */
export async function startEmbeddedTenantry(
  state: ClusterState,
  logger: Logger,
  objectStore?: LocalObjectStoreState,
): Promise<RunningTenantry> {
  const access = state.accessWebhooks;
  const tenantry = await startTenantry({
    cluster: state.name,
    // Each cluster's backups in a bucket of its own in the embedded default's object store.
    ...(objectStore
      ? {
          backup: {
            store: {
              endpoint: objectStore.endpoint,
              region: objectStore.region,
              accessKeyId: objectStore.accessKeyId,
              secretAccessKey: objectStore.secretAccessKey,
              bucket: `tenantry-backups-${state.name}`,
            },
          },
        }
      : {}),
    kubeconfig: state.kubeconfig,
    logger,
    clusterLabels: state.spec.labels ?? {},
    ...(access
      ? {
          access: {
            host: access.host,
            port: access.port,
            tls: {
              certPem: await readFile(access.certFile, "utf8"),
              keyPem: await readFile(access.keyFile, "utf8"),
            },
            caPem: await readFile(access.caFile, "utf8"),
            reviewClientCaPem: await readFile(access.clientCaFile, "utf8"),
          },
        }
      : {}),
  });
  await writeEndpoints(state, tenantry);
  return tenantry;
}

/** Where `tenantry login` finds the embedded default: `<cluster dir>/tenantry.json`. */
export const ENDPOINTS_FILE = "tenantry.json";

export interface TenantryEndpoints {
  cluster: string;
  /** Identity REST API. */
  accessUrl: string;
  accessCaPem: string;
  /** kube-apiserver, for kubeconfigs that bypass the gateway. */
  apiServer: string;
  apiServerCaPem: string;
  /** The tenant gateway, where kubeconfigs written by `tenantry login` point. */
  gateway?: { url: string; caPem: string };
  metricsUrl?: string;
  /** The runtimes Admin API (`/services/…`). */
  runtimesAdminUrl?: string;
  /** The runtimes proxy: runtimes at `/r/<token>/`, the Admin API at every other path. */
  runtimesProxyUrl?: string;
}

async function writeEndpoints(state: ClusterState, tenantry: RunningTenantry): Promise<void> {
  const cluster = tenantry.client.kubeConfig.getCurrentCluster()!;
  const endpoints: TenantryEndpoints = {
    cluster: state.name,
    accessUrl: tenantry.accessUrl,
    accessCaPem: tenantry.accessCaPem,
    apiServer: state.server,
    apiServerCaPem: Buffer.from(cluster.caData ?? "", "base64").toString(),
    ...(tenantry.gateway ? { gateway: { url: tenantry.gateway.url, caPem: tenantry.gateway.caPem } } : {}),
    ...(tenantry.gateway?.metricsUrl ? { metricsUrl: tenantry.gateway.metricsUrl } : {}),
    ...(tenantry.runtimesAdmin ? { runtimesAdminUrl: tenantry.runtimesAdmin.url } : {}),
    ...(tenantry.runtimesProxy ? { runtimesProxyUrl: tenantry.runtimesProxy.url } : {}),
  };
  await writeFile(join(dirname(state.kubeconfig), ENDPOINTS_FILE), `${JSON.stringify(endpoints, null, 2)}\n`);
}
