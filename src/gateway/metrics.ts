import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { TENANT_LABEL, type TenantInformers } from "../tenants/index.js";

/** The gateway's Prometheus metrics, labelled per tenant ("" for callers outside any tenant). */
export class GatewayMetrics {
  readonly requests: Counter<"tenant" | "verb" | "resource" | "code">;
  readonly duration: Histogram<"tenant" | "verb">;
  readonly watches: Gauge<"tenant">;
  readonly rateLimited: Counter<"tenant">;

  constructor(registry: Registry, informers: TenantInformers) {
    const registers = [registry];
    this.requests = new Counter({
      name: "tenantry_gateway_requests_total",
      help: "Requests through the tenant gateway, by tenant, verb, resource and HTTP status code.",
      labelNames: ["tenant", "verb", "resource", "code"],
      registers,
    });
    this.duration = new Histogram({
      name: "tenantry_gateway_request_duration_seconds",
      help: "Time until the response to a request through the gateway ended (watches and upgraded connections excluded).",
      labelNames: ["tenant", "verb"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.watches = new Gauge({
      name: "tenantry_gateway_watches",
      help: "Watches open through the gateway.",
      labelNames: ["tenant"],
      registers,
    });
    this.rateLimited = new Counter({
      name: "tenantry_gateway_rate_limited_total",
      help: "Requests the gateway refused with 429 because the tenant's token bucket was empty.",
      labelNames: ["tenant"],
      registers,
    });
    new Gauge({
      name: "tenantry_tenant_namespaces",
      help: "Namespaces of each tenant.",
      labelNames: ["tenant"],
      registers,
      collect() {
        const counts = new Map<string, number>();
        for (const tenant of informers.tenants.list()) counts.set(tenant.metadata!.name!, 0);
        for (const ns of informers.tenantNamespaces.list()) {
          const tenant = ns.metadata?.labels?.[TENANT_LABEL];
          if (tenant) counts.set(tenant, (counts.get(tenant) ?? 0) + 1);
        }
        this.reset();
        for (const [tenant, count] of counts) this.set({ tenant }, count);
      },
    });
  }
}
