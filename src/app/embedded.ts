import { readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { registerCluster, standaloneKubeconfig } from "../clusters/index.js";
import {
  type ClusterState,
  LOCAL_IMAGES,
  type LocalObjectStoreState,
  letPodsReachHostPorts,
  PROCESS_NODE_NAME,
  PROCESS_NODE_PLACEMENT,
  webhookClientCaFile,
} from "../localcluster/index.js";
import type { StorageOptions } from "../storage/index.js";
import { type RunningTenantry, startTenantry, type TenantryOptions } from "./tenantry.js";

/** The pooled StorageClass every cluster of the embedded default has beside the harness' own default `tenantry-local`. */
export const EMBEDDED_POOLED_CLASS = "tenantry-pooled";

/**
 * Storage in the embedded default: this machine is every node of the local cluster, so the node
 * agent runs in tenantry's own process and serves every store. The pool's one backing store is a
 * folder of the cluster, on the process node (the node whose pods really read and write): its
 * volumes are loop-mounted, fscrypt-encrypted sparse files where this machine allows it (root, loop
 * devices, fscrypt — installed from Debian's packages when missing), plain folders otherwise, as the
 * pool's Encrypted condition then says.
 */
export function embeddedStorage(state: ClusterState): StorageOptions {
  return {
    agent: { installTools: true },
    pools: [
      {
        name: EMBEDDED_POOLED_CLASS,
        spec: {
          storageClass: { name: EMBEDDED_POOLED_CLASS, volumeBindingMode: "WaitForFirstConsumer" },
          sizes: ["1Gi"],
          backingStores: [
            {
              name: "local",
              path: join(dirname(state.kubeconfig), "storage", "local"),
              node: PROCESS_NODE_NAME,
              capacity: "64Gi",
            },
          ],
          encryption: "IfAvailable",
          warm: { min: 2, max: 20, forecastWindows: 2 },
        },
      },
    ],
  };
}

/**
 * tenantry on a cluster of the embedded default: that cluster's kube-apiserver was started with
 * its token and authorization webhooks pointing at a fixed loopback port, with a serving
 * certificate from the cluster's CA, so tenantry serves them there.
 */
export async function startEmbeddedTenantry(
  state: ClusterState,
  logger: Logger,
  {
    objectStore,
    ...extra
  }: Pick<TenantryOptions, "nodes"> & {
    /** The embedded default's object store: this cluster's runtime backups go to a bucket there. */
    objectStore?: LocalObjectStoreState;
  } = {},
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
    storage: embeddedStorage(state),
    // kube-apiserver's webhook client certificate: the only caller admission answers.
    webhookClientCa: await readFile(webhookClientCaFile(state), "utf8"),
    // No health server here: the metrics of every component on a loopback port of their own.
    metricsPort: 0,
    // The gateway joining peers' pod networks runs on the process node, whose pods have real ones.
    multicluster: {
      network: { gateway: { image: LOCAL_IMAGES.networkGateway, ...PROCESS_NODE_PLACEMENT } },
    },
    ...extra,
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
  // Pods reach the runtimes Admin API as they would its Service: backup agents ask its broker for
  // URLs, runtimes report activity and stop themselves there. No other port of tenantry's.
  if (tenantry.runtimesAdmin)
    await letPodsReachHostPorts(dirname(state.kubeconfig), [
      Number(new URL(tenantry.runtimesAdmin.url).port),
    ]);
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
  /** The logical-clouds REST API (`/v2/projects/…`) and the CA of its serving certificate. */
  logicalCloudsUrl?: string;
  logicalCloudsCaPem?: string;
  /** The web dashboard. */
  dashboardUrl?: string;
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
    ...(tenantry.logicalClouds
      ? { logicalCloudsUrl: tenantry.logicalClouds.url, logicalCloudsCaPem: tenantry.logicalClouds.caPem }
      : {}),
    ...(tenantry.dashboard ? { dashboardUrl: tenantry.dashboard.url } : {}),
  };
  await writeFile(join(dirname(state.kubeconfig), ENDPOINTS_FILE), `${JSON.stringify(endpoints, null, 2)}\n`);
}

/**
 * Registers the embedded clusters in the cluster registry of `tenantry` (the home cluster's): each
 * with its admin kubeconfig and the labels of its spec. Run at every start: a cluster's address
 * may change between starts, and labels added since (tenantry cluster label) stay.
 */
export async function registerEmbeddedClusters(
  tenantry: RunningTenantry,
  states: ClusterState[],
): Promise<void> {
  for (const state of states) {
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    await registerCluster(tenantry.client, {
      name: state.name,
      kubeconfig: standaloneKubeconfig(kc, state.name),
      labels: state.spec.labels ?? {},
      description: "a cluster of the embedded default",
      replace: true,
      checkReachable: false,
    });
  }
}
