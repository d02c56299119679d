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

/**
 * The handle to a started tenantry, read off what its capabilities provided. What a capability
 * this process does not run provides is read when asked for, and naming that capability throws.
 */
export function runningTenantry(
  context: kube.SharedContext,
  clusterIdentity: ClusterIdentity,
  manager: kube.Manager,
  leadership: kube.LeaderControllers,
): RunningTenantry {
  const { client, values, metrics, lifecycle } = context;
  const identity = values.find(IDENTITY);
  const runtimes = values.find(RUNTIMES);
  const [gateway, dashboard, clouds] = [
    values.find(GATEWAY),
    values.find(DASHBOARD),
    values.find(CLOUDS)?.api,
  ];
  const informers = values.find(TENANT_INFORMERS);
  return {
    client,
    clusterIdentity,
    webhookUrl: values.find(ADMISSION_URL) ?? "",
    get accessUrl() {
      return values.get(IDENTITY).accessUrl;
    },
    get accessCaPem() {
      return values.get(IDENTITY).accessCaPem;
    },
    get informers() {
      return values.get(TENANT_INFORMERS);
    },
    get clusterRegistry() {
      return values.get(CLUSTER_REGISTRY);
    },
    ...(identity?.builtinIdentity ? { builtinIdentity: identity.builtinIdentity } : {}),
    get authenticator() {
      return values.get(IDENTITY).authenticator;
    },
    metrics,
    ...(gateway ? { gateway } : {}),
    ...(runtimes?.admin ? { runtimesAdmin: runtimes.admin } : {}),
    ...(runtimes?.proxy ? { runtimesProxy: runtimes.proxy } : {}),
    ...(clouds ? { logicalClouds: clouds } : {}),
    get nodes() {
      return values.get(NODES);
    },
    ...(dashboard ? { dashboard } : {}),
    isLeader: () => leadership.isLeader(),
    leading: () => leadership.leading(),
    // Without the tenants capability, its informers are not this process's to wait for.
    ready: () =>
      !informers ||
      [informers.tenants, informers.templates, informers.tenantNamespaces, informers.quotas].every((i) =>
        i.hasSynced(),
      ),
    controllersRunning: () => leadership.running(),
    // Every server asks its clients to reconnect elsewhere; those kube-apiserver calls answer what they have.
    drain: () => manager.drain(),
    stop: () => lifecycle.stop(),
  };
}
