import { UserError } from "../../common/index.js";

export interface ForecastOptions {
  /** Weight of the newest window, 0 < smoothing ≤ 1 (1 forgets the past at once). */
  smoothing: number;
  /** Length of one window in milliseconds. */
  windowMs: number;
}

export const DEFAULT_FORECAST: ForecastOptions = { smoothing: 0.3, windowMs: 60_000 };

/** Refuses options the forecast cannot work with, naming the field and its limits. */
export function validateForecastOptions(options: ForecastOptions, field = "storage.advisor"): void {
  if (!(options.smoothing > 0 && options.smoothing <= 1))
    throw new UserError(`${field}.smoothing must be more than 0 and at most 1, got ${options.smoothing}`, 2);
  if (!(Number.isFinite(options.windowMs) && options.windowMs >= 1000 && options.windowMs <= 86_400_000))
    throw new UserError(`${field}.windowSeconds must be from 1 to 86400, got ${options.windowMs / 1000}`, 2);
}

/** Past this many idle windows the decay is applied at once instead of window by window. */
const MAX_STEPPED_WINDOWS = 1000;
/** A forecast that has decayed below this, with nothing counted, is dropped. */
const NEGLIGIBLE = 1e-3;

interface Series {
  /** EWMA of counts per closed window; undefined until a first window closed with this series present. */
  average?: number;
  /** Counts per open window index. */
  counts: Map<number, number>;
}

/**
 * Exponentially weighted moving average of events per fixed window, for many keys at once
 * (Vasilenko & Kurapati §4: the Advisor's EWMA of volume demand). Windows are aligned on `origin`; an
 * event counts in the window of its own time, so a history replayed after a restart lands where it
 * happened. When a window closes, each key's average becomes
 * `smoothing × count + (1 − smoothing) × average` (the first window a key is seen in starts it).
 */
export class DemandForecast {
  private readonly series = new Map<string, Series>();
  /** Index of the window that is open now: windows before it are closed. */
  private openWindow = 0;

  constructor(
    private readonly options: ForecastOptions,
    private readonly origin: number,
  ) {
    validateForecastOptions(options);
  }

  windowOf(time: number): number {
    return Math.floor((time - this.origin) / this.options.windowMs);
  }

  /** Counts one event of `key` at `time`; events in windows already closed are ignored (returns false). */
  record(key: string, time: number): boolean {
    const window = this.windowOf(time);
    if (window < this.openWindow) return false;
    let series = this.series.get(key);
    if (!series) {
      series = { counts: new Map() };
      this.series.set(key, series);
    }
    series.counts.set(window, (series.counts.get(window) ?? 0) + 1);
    return true;
  }

  /** Closes every window that ended by `now`; returns how many closed. */
  advance(now: number): number {
    const target = this.windowOf(now);
    const closing = target - this.openWindow;
    if (closing <= 0) return 0;
    const alpha = this.options.smoothing;
    for (const [key, series] of this.series) {
      const stepped = Math.min(closing, MAX_STEPPED_WINDOWS);
      // Windows beyond the stepped ones hold no events (only the open window and later can).
      const skipped = closing - stepped;
      let average = series.average;
      if (average !== undefined && skipped > 0) average *= (1 - alpha) ** skipped;
      for (let window = target - stepped; window < target; window++) {
        const count = series.counts.get(window) ?? 0;
        series.counts.delete(window);
        if (average === undefined) {
          if (count === 0) continue;
          average = count;
        } else average = alpha * count + (1 - alpha) * average;
      }
      for (const window of series.counts.keys()) if (window < target) series.counts.delete(window);
      series.average = average;
      if ((average ?? 0) < NEGLIGIBLE && series.counts.size === 0) this.series.delete(key);
    }
    this.openWindow = target;
    return closing;
  }

  /** The forecast of events of `key` per window (0 when never seen). */
  forecast(key: string): number {
    return this.series.get(key)?.average ?? 0;
  }

  /** Events of `key` counted so far in the open window. */
  current(key: string): number {
    return this.series.get(key)?.counts.get(this.openWindow) ?? 0;
  }

  /** When the open window closes. */
  nextClose(): number {
    return this.origin + (this.openWindow + 1) * this.options.windowMs;
  }

  keys(): string[] {
    return [...this.series.keys()];
  }
}
