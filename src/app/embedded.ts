import { readFile } from "node:fs/promises";
import type { Logger } from "pino";
import type { ClusterState } from "../localcluster/index.js";
import { type RunningTenantry, startTenantry } from "./tenantry.js";

/**
 * tenantry on a cluster of the embedded default: that cluster's kube-apiserver was started with
 * its token and authorization webhooks pointing at a fixed loopback port, with a serving
 * certificate from the cluster's CA, so tenantry serves them there.
 */
export async function startEmbeddedTenantry(state: ClusterState, logger: Logger): Promise<RunningTenantry> {
  const access = state.accessWebhooks;
  return startTenantry({
    cluster: state.name,
    kubeconfig: state.kubeconfig,
    logger,
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
          },
        }
      : {}),
  });
}
