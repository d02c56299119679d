import { performance } from "node:perf_hooks";
import type { ClusterClient } from "../../src/kube/index.js";
import { boundedAll, errorText, MemorySampler, percentile } from "../support/report.js";
import { customObjects, NAMESPACES, ReadinessWatch, tenantObject, tenantsResource } from "./workload.js";

export interface ProvisioningResult {
  tenants: number;
  ready: number;
  createErrors: string[];
  totalMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  rssBeforeMiB: number;
  rssPeakMiB: number;
  apiserverPeakMiB: number;
}

export const tenantName = (i: number) => `t${String(i).padStart(4, "0")}`;

/**
 * Creates `count` tenants of 3 declared namespaces each, `concurrency` creates in flight, and
 * times each from its create request until the Tenant reports Ready with its 3 namespaces.
 */
export async function provision(options: {
  client: ClusterClient;
  count: number;
  concurrency: number;
  apiserverPid: number;
  timeoutMs: number;
}): Promise<ProvisioningResult> {
  const { client, count } = options;
  const names = Array.from({ length: count }, (_, i) => tenantName(i));
  const watch = new ReadinessWatch(client, NAMESPACES.length);
  await watch.start();
  const api = customObjects(client);
  const sampler = new MemorySampler({ apiserver: options.apiserverPid });
  const rssBeforeMiB = process.memoryUsage().rss / 1024 / 1024;
  sampler.start();
  const createdAt = new Map<string, number>();
  const createErrors: string[] = [];
  const started = performance.now();
  try {
    await boundedAll(names, options.concurrency, async (name) => {
      createdAt.set(name, performance.now());
      try {
        await api.createClusterCustomObject({ ...tenantsResource, body: tenantObject(name) });
      } catch (err) {
        createErrors.push(`${name}: ${errorText(err)}`);
        createdAt.delete(name);
      }
    });
    const remaining = Math.max(0, options.timeoutMs - (performance.now() - started));
    await watch.waitFor([...createdAt.keys()], remaining);
  } finally {
    await watch.stop();
  }
  const memory = sampler.stop();
  const latencies = [...createdAt]
    .filter(([name]) => watch.readyAt.has(name))
    .map(([name, t0]) => watch.readyAt.get(name)! - t0);
  const lastReady = Math.max(...watch.readyAt.values());
  return {
    tenants: count,
    ready: latencies.length,
    createErrors,
    totalMs: lastReady - started,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: percentile(latencies, 100),
    rssBeforeMiB,
    rssPeakMiB: memory.peak.self ?? Number.NaN,
    apiserverPeakMiB: memory.peak.apiserver ?? Number.NaN,
  };
}
