import type { UsagePoint } from "./model.js";

/**
 * Quota usage over time per tenant and resource, recorded from the tenant informer's events while
 * this process runs (nothing is made up: a tenant seen once has one point). A point is added only
 * when a value changed; each series keeps its last `limit` points.
 */
export class UsageHistory {
  private readonly series = new Map<string, Map<string, UsagePoint[]>>();

  constructor(private readonly limit = 120) {}

  record(tenant: string, usage: Record<string, { used: number; hard: number }>, at: number): void {
    let byResource = this.series.get(tenant);
    if (!byResource) {
      byResource = new Map();
      this.series.set(tenant, byResource);
    }
    const t = Math.floor(at / 1000);
    for (const [resource, value] of Object.entries(usage)) {
      let points = byResource.get(resource);
      if (!points) {
        points = [];
        byResource.set(resource, points);
      }
      const last = points.at(-1);
      if (last && last.used === value.used && last.hard === value.hard) continue;
      if (last && last.t === t) points.pop();
      points.push({ t, used: value.used, hard: value.hard });
      if (points.length > this.limit) points.splice(0, points.length - this.limit);
    }
  }

  forget(tenant: string): void {
    this.series.delete(tenant);
  }

  of(tenant: string): Record<string, UsagePoint[]> {
    return Object.fromEntries(this.series.get(tenant) ?? []);
  }
}
