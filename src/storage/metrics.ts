import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Storage's Prometheus metrics, made once per registry (controllers are rebuilt at every leadership). */
export class StorageMetrics {
  private static readonly byRegistry = new WeakMap<Registry, StorageMetrics>();

  readonly claimsCreated: Counter<"storage_class" | "size">;
  readonly forecast: Gauge<"storage_class" | "size">;
  readonly forecastWindow: Gauge;
  readonly forecastSmoothing: Gauge;
  readonly poolVolumes: Gauge<"pool" | "size" | "state">;
  readonly poolTarget: Gauge<"pool" | "size">;
  readonly provisioned: Counter<"pool" | "source">;
  readonly provisionSeconds: Histogram<"source">;
  readonly provisioningFailures: Counter<"pool" | "reason">;
  /** Set by the advisor: fills the forecast gauge when scraped. */
  forecastSource?: () => { storageClass: string; size: string; value: number }[];

  static for(registry: Registry): StorageMetrics {
    let metrics = StorageMetrics.byRegistry.get(registry);
    if (!metrics) {
      metrics = new StorageMetrics(registry);
      StorageMetrics.byRegistry.set(registry, metrics);
    }
    return metrics;
  }

  private constructor(registry: Registry) {
    const registers = [registry];
    this.claimsCreated = new Counter({
      name: "tenantry_storage_claims_created_total",
      help: "PersistentVolumeClaims created, by storage class and requested size (the advisor's input).",
      labelNames: ["storage_class", "size"],
      registers,
    });
    const self = this;
    this.forecast = new Gauge({
      name: "tenantry_storage_demand_forecast",
      help: "The advisor's EWMA forecast of claims created per window, by storage class and requested size.",
      labelNames: ["storage_class", "size"],
      registers,
      collect() {
        const source = self.forecastSource;
        if (!source) return;
        this.reset();
        for (const { storageClass, size, value } of source())
          this.set({ storage_class: storageClass, size }, value);
      },
    });
    this.forecastWindow = new Gauge({
      name: "tenantry_storage_forecast_window_seconds",
      help: "Length of one forecast window.",
      registers,
    });
    this.forecastSmoothing = new Gauge({
      name: "tenantry_storage_forecast_smoothing",
      help: "Weight of the newest window in the forecast (EWMA smoothing factor).",
      registers,
    });
    this.poolVolumes = new Gauge({
      name: "tenantry_storage_pool_volumes",
      help: "Volumes of each pool and size by state (ready, allocating, bound, failed).",
      labelNames: ["pool", "size", "state"],
      registers,
    });
    this.poolTarget = new Gauge({
      name: "tenantry_storage_pool_target_ready",
      help: "Ready volumes the supplier keeps for each pool and size.",
      labelNames: ["pool", "size"],
      registers,
    });
    this.provisioned = new Counter({
      name: "tenantry_storage_volumes_provisioned_total",
      help: "PersistentVolumes created for claims, from the pool or allocated on demand.",
      labelNames: ["pool", "source"],
      registers,
    });
    this.provisionSeconds = new Histogram({
      name: "tenantry_storage_provision_seconds",
      help: "From the provisioner first seeing a claim to its PersistentVolume being created.",
      labelNames: ["source"],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30],
      registers,
    });
    this.provisioningFailures = new Counter({
      name: "tenantry_storage_provisioning_failures_total",
      help: "Claims the provisioner could not serve at a try, by reason.",
      labelNames: ["pool", "reason"],
      registers,
    });
  }
}
