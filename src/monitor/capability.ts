import type { Capability, SharedContext, Started } from "../kube/index.js";
import { MonitorMetrics } from "./metrics.js";
import { Monitor, type MonitorOptions } from "./monitor.js";

/** Probe concurrency and webhook delivery tuning, or false to run no monitor. */
export type MonitorCapabilityOptions = Pick<MonitorOptions, "probeConcurrency" | "webhooks"> | false;

/** The runtimes monitor (MonitorRules), run by the leader. */
export class MonitorCapability implements Capability {
  readonly name = "monitor";

  constructor(private readonly options: MonitorCapabilityOptions = {}) {}

  async start({ client, cache, metrics, logger }: SharedContext): Promise<Started> {
    const options = this.options;
    if (options === false) return {};
    // Registered once: the monitors built on each new lead share them (a second registration throws).
    const monitorMetrics = new MonitorMetrics(metrics);
    return {
      leaderControllers: () => [new Monitor({ client, cache, metrics: monitorMetrics, logger, ...options })],
    };
  }
}
