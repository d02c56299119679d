import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** One alert as the firing gauge counts it. */
export interface FiringAlert {
  kind: string;
  condition: string;
  tenant?: string;
}

/**
 * The monitor's Prometheus metrics. Created once per process (a registry takes each name once);
 * the monitor that leads tells it where its firing alerts are.
 */
export class MonitorMetrics {
  readonly probeDuration: Histogram<"result">;
  readonly notifications: Counter<"outcome">;
  readonly remediations: Counter<"action" | "result">;
  private firing: () => Iterable<FiringAlert> = () => [];

  constructor(registry: Registry) {
    const registers = [registry];
    const source = () => this.firing();
    new Gauge({
      name: "tenantry_monitor_alerts_firing",
      help: 'Monitor alerts firing now, by object kind, condition and tenant ("" for none).',
      labelNames: ["object", "condition", "tenant"],
      registers,
      collect() {
        this.reset();
        const counts = new Map<string, { labels: Record<string, string>; count: number }>();
        for (const alert of source()) {
          const labels = { object: alert.kind, condition: alert.condition, tenant: alert.tenant ?? "" };
          const key = JSON.stringify(labels);
          const entry = counts.get(key) ?? { labels, count: 0 };
          entry.count++;
          counts.set(key, entry);
        }
        for (const { labels, count } of counts.values()) this.set(labels, count);
      },
    });
    this.probeDuration = new Histogram({
      name: "tenantry_monitor_probe_duration_seconds",
      help: "Time each endpoint-probe GET took, by result (ok or failed).",
      labelNames: ["result"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.notifications = new Counter({
      name: "tenantry_monitor_notifications_total",
      help: "Webhook notifications by outcome: delivered, failed (after every retry) or dropped (queue full).",
      labelNames: ["outcome"],
      registers,
    });
    this.remediations = new Counter({
      name: "tenantry_monitor_remediations_total",
      help: "Remediation actions taken, by action and result (done, failed, refused).",
      labelNames: ["action", "result"],
      registers,
    });
  }

  /** Where the gauge reads firing alerts from (the leading monitor). */
  useFiring(source: () => Iterable<FiringAlert>): void {
    this.firing = source;
  }
}
