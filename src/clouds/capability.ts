import { CLUSTER_REGISTRY } from "../clusters/index.js";
import { readClientCa } from "../gateway/index.js";
import { IDENTITY } from "../identity/index.js";
import {
  allStarted,
  applyObject,
  type Capability,
  type SharedContext,
  Slot,
  type Started,
} from "../kube/index.js";
import { SERVING_CERTIFICATE } from "../webhooks/index.js";
import { type LogicalCloudsApi, startLogicalCloudsApi } from "./api-server/server.js";
import { LogicalCloudController } from "./controller.js";
import { CloudInformers } from "./informers.js";
import { logicalCloudsAdminClusterRole, ProjectController } from "./projects.js";

/** The logical clouds' caches, and their DCM API when it is served (with the CA its certificate chains to). */
export interface RunningClouds {
  informers: CloudInformers;
  api?: { api: LogicalCloudsApi; url: string; caPem: string };
}
export const CLOUDS = new Slot<RunningClouds>("the logical clouds");

/** The DCM API's address (HTTPS with tenantry's webhook CA), or false to serve none. */
export type LogicalCloudsOptions = { host?: string; port?: number } | false;

/**
 * Logical clouds: their caches, the DCM API (`/v2/projects/…`) on every replica, and for the
 * leader the project and logical-cloud controllers.
 */
export class CloudsCapability implements Capability {
  readonly name = "clouds";
  readonly dependsOn = ["clusters", "identity", "webhook certificate"];

  constructor(private readonly options: LogicalCloudsOptions = {}) {}

  async start(context: SharedContext): Promise<Started> {
    const { client, logger, lifecycle, values } = context;
    const informers = new CloudInformers(client);
    await allStarted([
      applyObject(client, logicalCloudsAdminClusterRole),
      informers.start().then(() => lifecycle.started("cloud informers", informers)),
    ]);
    const api = await this.startApi(context, informers);
    values.set(CLOUDS, { informers, ...(api ? { api } : {}) });
    const registry = values.get(CLUSTER_REGISTRY);
    return {
      servers: api ? [api.api] : [],
      leaderControllers: () => [
        new ProjectController({ client, informers, logger }),
        new LogicalCloudController({ client, registry, informers, logger }),
      ],
    };
  }

  private async startApi(
    { client, host, logger, lifecycle, values }: SharedContext,
    informers: CloudInformers,
  ): Promise<RunningClouds["api"]> {
    const options = this.options;
    if (options === false) return undefined;
    const identity = values.get(IDENTITY);
    const certificate = values.get(SERVING_CERTIFICATE);
    const clientCaPem = await readClientCa(client).catch(() => undefined);
    const api = await startLogicalCloudsApi({
      client,
      registry: values.get(CLUSTER_REGISTRY),
      informers,
      tls: certificate.tls.serving,
      ...(clientCaPem ? { clientCaPem } : {}),
      authenticator: identity.authenticator,
      onAuthenticated: (person) => identity.provisioner.ensure(person),
      host: options.host ?? host,
      port: options.port ?? 0,
      logger,
    });
    lifecycle.started("logical clouds API", api);
    certificate.onRotate((next) => api.rotate(next.serving));
    return { api, url: api.url, caPem: certificate.tls.caPem };
  }
}
