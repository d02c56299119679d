import { IDENTITY } from "../identity/index.js";
import { applyObject, type Capability, type SharedContext, Slot, type Started } from "../kube/index.js";
import { TENANT_INFORMERS } from "../tenants/index.js";
import type { RateLimit } from "./rate-limit.js";
import { gatewayClusterRole } from "./rbac.js";
import { type RunningGateway, startGateway } from "./server.js";

/** The tenant gateway, when it runs. */
export const GATEWAY = new Slot<RunningGateway>("the tenant gateway");

export interface GatewayCapabilityOptions {
  /** On by default, on a free port of the webhook host unless given. */
  gateway?: { host?: string; port?: number; rateLimit?: RateLimit } | false;
  /** Also serve Prometheus metrics at http://127.0.0.1:<port>/metrics (0 = a free port). */
  metricsPort?: number;
}

/** The tenant gateway (kubectl-compatible proxy), authenticating with identity's authenticator. */
export class GatewayCapability implements Capability {
  readonly name = "gateway";
  readonly dependsOn = ["tenants", "identity"];

  constructor(private readonly options: GatewayCapabilityOptions = {}) {}

  async start({
    client,
    namespace,
    host,
    metrics,
    logger,
    lifecycle,
    values,
  }: SharedContext): Promise<Started> {
    await applyObject(client, gatewayClusterRole);
    const { gateway: options, metricsPort } = this.options;
    if (options === false) return {};
    const identity = values.get(IDENTITY);
    const gateway = await startGateway({
      client,
      informers: values.get(TENANT_INFORMERS),
      authenticator: identity.authenticator,
      provisioner: identity.provisioner,
      namespace,
      host: options?.host ?? host,
      port: options?.port ?? 0,
      ...(options?.rateLimit ? { rateLimit: options.rateLimit } : {}),
      metricsRegistry: metrics,
      ...(metricsPort !== undefined ? { metricsPort } : {}),
      logger,
    });
    values.set(GATEWAY, lifecycle.started("gateway", gateway));
    return { servers: [gateway] };
  }
}
