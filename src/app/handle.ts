import { CLOUDS } from "../clouds/index.js";
import { CLUSTER_REGISTRY } from "../clusters/index.js";
import { DASHBOARD } from "../dashboard/index.js";
import { GATEWAY } from "../gateway/index.js";
import { IDENTITY } from "../identity/index.js";
import type * as kube from "../kube/index.js";
import type { ClusterIdentity } from "../multicluster/index.js";
import { NODES } from "../nodes/index.js";
import { RUNTIMES } from "../runtimes/index.js";
import { TENANT_INFORMERS } from "../tenants/index.js";
import { ADMISSION_URL } from "../webhooks/index.js";
import type { RunningTenantry } from "./options.js";

/** The handle to a started tenantry, read off what its capabilities provided. */
export function runningTenantry(
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
