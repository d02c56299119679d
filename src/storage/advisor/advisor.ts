/**
 * The Advisor (Vasilenko & Kurapati §4): forecasts volume demand per storage class and requested size from
 * the stream of claims created, by an EWMA over fixed windows, for the supplier and as metrics.
 */
import type { V1PersistentVolumeClaim } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Informer } from "../../kube/index.js";
import type { StorageMetrics } from "../metrics.js";
import { bytesOf, sizeText } from "../supplier/sizing.js";
import { DEFAULT_FORECAST, DemandForecast, type ForecastOptions } from "./ewma.js";

export interface AdvisorOptions {
  claims: Informer<V1PersistentVolumeClaim>;
  metrics: StorageMetrics;
  logger: Logger;
  forecast?: Partial<ForecastOptions>;
  /** How many past windows of claims still present are replayed at start. Default 10. */
  historyWindows?: number;
  now?: () => number;
}

const SEPARATOR = "\u0000";

export class Advisor {
  readonly options: ForecastOptions;
  private readonly forecast: DemandForecast;
  private readonly seen = new Map<string, number>();
  private readonly listeners = new Set<() => void>();
  private readonly now: () => number;
  private timer?: NodeJS.Timeout;
  private unsubscribe?: () => void;

  constructor(private readonly config: AdvisorOptions) {
    this.options = { ...DEFAULT_FORECAST, ...config.forecast };
    this.now = config.now ?? Date.now;
    const history = config.historyWindows ?? 10;
    // Windows start `history` windows ago, so claims still present from that time count where they belong.
    this.forecast = new DemandForecast(this.options, this.now() - history * this.options.windowMs);
    config.metrics.forecastWindow.set(this.options.windowMs / 1000);
    config.metrics.forecastSmoothing.set(this.options.smoothing);
    config.metrics.forecastSource = () =>
      this.forecast.keys().map((key) => {
        const [storageClass = "", size = ""] = key.split(SEPARATOR);
        return { storageClass, size, value: this.forecast.forecast(key) };
      });
  }

  start(): void {
    this.unsubscribe = this.config.claims.addHandler({ onAdd: (claim) => this.observe(claim) });
    for (const claim of this.config.claims.list()) this.observe(claim);
    this.schedule();
  }

  stop(): void {
    this.unsubscribe?.();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Called whenever a window closes (the forecast changed). */
  onForecast(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Claims per window expected for a class, by requested size in bytes: the EWMA, or the claims
   * already counted in the open window when that is more (a burst is seen before its window closes).
   */
  demand(storageClass: string): Map<bigint, number> {
    const demand = new Map<bigint, number>();
    for (const key of this.forecast.keys()) {
      const [keyClass, size] = key.split(SEPARATOR);
      if (keyClass !== storageClass || !size) continue;
      demand.set(bytesOf(size), Math.max(this.forecast.forecast(key), this.forecast.current(key)));
    }
    return demand;
  }

  private observe(claim: V1PersistentVolumeClaim): void {
    const uid = claim.metadata?.uid;
    const created = Date.parse(String(claim.metadata?.creationTimestamp ?? ""));
    const request = claim.spec?.resources?.requests?.storage;
    if (!uid || Number.isNaN(created) || request === undefined || this.seen.has(uid)) return;
    let size: string;
    try {
      size = sizeText(bytesOf(request));
    } catch {
      return;
    }
    const storageClass = claim.spec?.storageClassName ?? "";
    this.seen.set(uid, created);
    if (this.forecast.record(`${storageClass}${SEPARATOR}${size}`, created))
      this.config.metrics.claimsCreated.inc({ storage_class: storageClass, size });
  }

  private schedule(): void {
    const wait = Math.max(10, this.forecast.nextClose() - this.now());
    this.timer = setTimeout(() => this.tick(), wait);
    this.timer.unref();
  }

  private tick(): void {
    const now = this.now();
    if (this.forecast.advance(now) > 0) {
      // Claims created before the open window can no longer count: forget them.
      const horizon = now - 2 * this.options.windowMs;
      for (const [uid, created] of this.seen) if (created < horizon) this.seen.delete(uid);
      for (const listener of this.listeners) {
        try {
          listener();
        } catch (err) {
          this.config.logger.warn({ error: String(err) }, "forecast listener failed");
        }
      }
    }
    this.schedule();
  }
}
