import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api } from "@kubernetes/client-node";
import type { ClusterClient } from "../../src/kube/index.js";
import {
  boundedAll,
  cpuSecondsOfPid,
  errorText,
  loadAverage,
  MemorySampler,
  percentile,
} from "../support/report.js";
import type { BenchUser } from "./users.js";
import {
  customObjects,
  IsolationWatch,
  NAMESPACES,
  ReadinessWatch,
  tenantObject,
  tenantsResource,
} from "./workload.js";

export interface ProvisioningResult {
  tenants: number;
  ready: number;
  createErrors: string[];
  totalMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /**
   * First create until the last tenant namespace has its isolation NetworkPolicy (NaN: not all
   * within the deadline). A tenant's Ready may come before its namespaces' contents.
   */
  isolatedMs: number;
  /** Load average (1, 5, 15 min) when provisioning ended. */
  loadAverage: string;
  rssBeforeMiB: number;
  rssPeakMiB: number;
  apiserverPeakMiB: number;
  etcdPeakMiB: number;
  /** CPU seconds spent from the first create to the last Ready: this process (tenantry), kube-apiserver, etcd. */
  cpuSeconds: { tenantry: number; apiserver: number; etcd: number };
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
  etcdPid: number;
  timeoutMs: number;
}): Promise<ProvisioningResult> {
  const { client, count } = options;
  const names = Array.from({ length: count }, (_, i) => tenantName(i));
  const watch = new ReadinessWatch(client, NAMESPACES.length);
  await watch.start();
  const isolation = new IsolationWatch(client);
  await isolation.start();
  const api = customObjects(client);
  const sampler = new MemorySampler({ apiserver: options.apiserverPid, etcd: options.etcdPid });
  const rssBeforeMiB = process.memoryUsage().rss / 1024 / 1024;
  sampler.start();
  const cpuBefore = cpuNow(options);
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
    const remaining = () => Math.max(0, options.timeoutMs - (performance.now() - started));
    await watch.waitFor([...createdAt.keys()], remaining());
    await isolation.waitFor(
      [...createdAt.keys()].flatMap((t) => NAMESPACES.map((n) => `${t}-${n}`)),
      remaining(),
    );
  } finally {
    await watch.stop();
    await isolation.stop();
  }
  const memory = sampler.stop();
  const cpuAfter = cpuNow(options);
  const latencies = [...createdAt]
    .filter(([name]) => watch.readyAt.has(name))
    .map(([name, t0]) => watch.readyAt.get(name)! - t0);
  const lastReady = Math.max(...watch.readyAt.values());
  const expected = [...createdAt.keys()].flatMap((t) => NAMESPACES.map((n) => `${t}-${n}`));
  const isolatedMs = expected.every((n) => isolation.isolatedAt.has(n))
    ? Math.max(...expected.map((n) => isolation.isolatedAt.get(n)!)) - started
    : Number.NaN;
  return {
    tenants: count,
    ready: latencies.length,
    createErrors,
    totalMs: lastReady - started,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: percentile(latencies, 100),
    isolatedMs,
    loadAverage: loadAverage(),
    rssBeforeMiB,
    rssPeakMiB: memory.peak.self ?? Number.NaN,
    apiserverPeakMiB: memory.peak.apiserver ?? Number.NaN,
    etcdPeakMiB: memory.peak.etcd ?? Number.NaN,
    cpuSeconds: {
      tenantry: cpuAfter.tenantry - cpuBefore.tenantry,
      apiserver: cpuAfter.apiserver - cpuBefore.apiserver,
      etcd: cpuAfter.etcd - cpuBefore.etcd,
    },
  };
}

function cpuNow(pids: { apiserverPid: number; etcdPid: number }) {
  const self = process.cpuUsage();
  return {
    tenantry: (self.user + self.system) / 1e6,
    apiserver: cpuSecondsOfPid(pids.apiserverPid),
    etcd: cpuSecondsOfPid(pids.etcdPid),
  };
}

/**
 * A new tenant among all the others: from its create request until its owner's first namespace
 * create is admitted (the owner retries every 100 ms, as a person's script would), in ms.
 */
export async function newOwnerFirstNamespace(options: {
  client: ClusterClient;
  owner: BenchUser;
  tenant: string;
  timeoutMs: number;
}): Promise<{ ms: number; attempts: number; lastError: string }> {
  const { client, owner, tenant } = options;
  const core = owner.kubeConfig.makeApiClient(CoreV1Api);
  const started = performance.now();
  await customObjects(client).createClusterCustomObject({
    ...tenantsResource,
    body: tenantObject(tenant, { namespaceQuota: NAMESPACES.length + 1 }),
  });
  let attempts = 0;
  let lastError = "";
  while (performance.now() - started < options.timeoutMs) {
    attempts++;
    try {
      await core.createNamespace({ body: { metadata: { name: `${tenant}-first` } } });
      return { ms: performance.now() - started, attempts, lastError };
    } catch (err) {
      lastError = errorText(err);
      await sleep(100);
    }
  }
  return { ms: Number.NaN, attempts, lastError };
}
