import { AUTHORIZER } from "../access/index.js";
import { CLOUDS } from "../clouds/index.js";
import { CLUSTER_REGISTRY } from "../clusters/index.js";
import { GATEWAY } from "../gateway/index.js";
import { IDENTITY } from "../identity/index.js";
import type { Capability, SharedContext, Started } from "../kube/index.js";
import { Slot } from "../kube/index.js";
import { MULTICLUSTER_INFORMERS } from "../multicluster/index.js";
import { NODES } from "../nodes/index.js";
import { RUNTIMES } from "../runtimes/index.js";
import { TENANT_INFORMERS } from "../tenants/index.js";
import { DASHBOARD_ASSETS_DIR } from "./build.js";
import { type RunningDashboard, startDashboard } from "./server.js";

export const DASHBOARD = new Slot<RunningDashboard>("the dashboard");

/** Where the dashboard listens and where its built client is; false: no dashboard. */
export type DashboardCapabilityOptions = { host?: string; port?: number; assetsDir?: string } | false;

/** The web dashboard (built client and JSON API, plain HTTP), reading every other capability. */
export class DashboardCapability implements Capability {
  readonly name = "dashboard";
  readonly dependsOn = [
    "tenants",
    "clusters",
    "clouds",
    "runtimes",
    "multicluster",
    "access",
    "nodes",
    "identity",
    "gateway",
  ];

  constructor(private readonly options: DashboardCapabilityOptions = {}) {}

  async start({ client, cache, logger, lifecycle, values }: SharedContext): Promise<Started> {
    const options = this.options;
    if (options === false) return {};
    const apiServerCa = client.kubeConfig.getCurrentCluster()?.caData;
    const identity = values.get(IDENTITY);
    const gateway = values.find(GATEWAY);
    const runtimes = values.get(RUNTIMES);
    const clouds = values.get(CLOUDS);
    const dashboard = await startDashboard({
      client,
      cache,
      informers: values.get(TENANT_INFORMERS),
      clusterRegistry: values.get(CLUSTER_REGISTRY),
      cloudInformers: clouds.informers,
      runtimesInformers: runtimes.informers,
      multicluster: values.get(MULTICLUSTER_INFORMERS),
      grants: values.get(AUTHORIZER).grants,
      nodes: values.get(NODES),
      authenticator: identity.authenticator,
      access: { url: identity.accessUrl, caPem: identity.accessCaPem },
      // A person's own requests take the way `tenantry login`'s kubeconfigs take.
      door: gateway
        ? { url: gateway.url, caPem: gateway.caPem }
        : { url: client.server, caPem: apiServerCa ? Buffer.from(apiServerCa, "base64").toString() : "" },
      runtimesAdminUrl: () => runtimes.admin?.url,
      logicalCloudsApi: () => (clouds.api ? { url: clouds.api.url, caPem: clouds.api.caPem } : undefined),
      assetsDir: options.assetsDir ?? DASHBOARD_ASSETS_DIR,
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 0,
      logger,
    });
    values.set(DASHBOARD, lifecycle.started("dashboard", dashboard));
    return { servers: [dashboard] };
  }
}
