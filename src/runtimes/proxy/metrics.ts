import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { RouteSource } from "./source.js";

/** Who answered a request: the runtime, the Admin API, a service module, or the proxy itself (404, 503, …). */
export type AnsweredBy = "runtime" | "admin" | "module" | "proxy";

/** The runtimes proxy's Prometheus metrics. */
export class ProxyMetrics {
  private readonly duration: Histogram<"target">;
  readonly websockets: Gauge;
  readonly activityWrites: Counter<"result">;
  readonly moduleInits: Counter<"module" | "result">;
  /** Requests counted in plain numbers on the request path, handed to prom-client at scrape time. */
  private readonly counts = new Map<string, number>();

  constructor(registry: Registry, source: RouteSource) {
    const registers = [registry];
    const counts = this.counts;
    new Counter({
      name: "tenantry_runtimes_proxy_requests_total",
      help: "Requests and WebSocket upgrades through the runtimes proxy, by who answered and HTTP status code.",
      labelNames: ["target", "code"],
      registers,
      collect() {
        this.reset();
        for (const [key, value] of counts) {
          const [target, code] = key.split(" ") as [string, string];
          this.inc({ target, code }, value);
        }
      },
    });
    this.duration = new Histogram({
      name: "tenantry_runtimes_proxy_request_duration_seconds",
      help: "Time until a proxied response ended (WebSocket connections excluded).",
      labelNames: ["target"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.websockets = new Gauge({
      name: "tenantry_runtimes_proxy_websockets",
      help: "WebSocket connections open through the proxy.",
      registers,
    });
    new Gauge({
      name: "tenantry_runtimes_proxy_routes",
      help: "Runtimes with a route token (served, or answering 503 while not ready).",
      registers,
      collect() {
        this.set(source.routeCount());
      },
    });
    this.activityWrites = new Counter({
      name: "tenantry_runtimes_proxy_activity_writes_total",
      help: "Writes of status.lastActivity, by result (written, newer, gone, conflict, failed).",
      labelNames: ["result"],
      registers,
    });
    this.moduleInits = new Counter({
      name: "tenantry_runtimes_proxy_module_inits_total",
      help: "Service module init calls, by module and result.",
      labelNames: ["module", "result"],
      registers,
    });
  }

  /** One answered request; `startedMs` from performance.now(), or undefined for upgrades. */
  answered(target: AnsweredBy, code: number, startedMs?: number): void {
    const key = `${target} ${code}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    if (startedMs !== undefined) this.duration.observe({ target }, (performance.now() - startedMs) / 1000);
  }
}
