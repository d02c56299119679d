/**
 * The workload both tenancy controllers get: T tenants created, then each owner creates 3
 * namespaces, until every namespace has its RoleBinding, quota and NetworkPolicy. Completion is
 * seen through watches (one per kind, cluster-wide), never by polling objects one by one.
 */
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, type KubernetesObject } from "@kubernetes/client-node";
import { type ClusterClient, Informer } from "../../src/kube/index.js";
import { boundedAll, errorCode, errorText, MemorySampler, percentile } from "../support/report.js";
import type { BenchUser } from "./users.js";

export interface SideBySideResult {
  tenants: number;
  namespaces: number;
  complete: number;
  errors: string[];
  totalMs: number;
  p50Ms: number;
  p99Ms: number;
  rssPeakMiB: number;
}

export interface Contender {
  /** Creates one tenant owned by `owner`; `namespaces` are declared in it when owners cannot create them. */
  createTenant(name: string, owner: string): Promise<void>;
  /** Owners create their namespaces themselves (false: the tenant declares them). */
  ownerCreatesNamespaces: boolean;
  owner(tenant: string): Promise<BenchUser>;
  /** Which object stands for "the namespace has its quota". */
  quota: { kind: "ResourceQuota" } | { kind: "TenantResourceQuota"; apiVersion: string };
  /** Process whose RSS is the controller's (undefined: this process). */
  pid?: number;
}

const kinds = {
  roleBinding: { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding" },
  networkPolicy: { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy" },
  resourceQuota: { apiVersion: "v1", kind: "ResourceQuota" },
} as const;

export async function sideBySide(options: {
  client: ClusterClient;
  contender: Contender;
  tenants: string[];
  namespacesOf: (tenant: string) => string[];
  ownerOf: (tenant: string) => string;
  timeoutMs: number;
}): Promise<SideBySideResult> {
  const { client, contender, tenants } = options;
  const tenantOfNamespace = new Map<string, string>();
  for (const t of tenants) for (const ns of options.namespacesOf(t)) tenantOfNamespace.set(ns, t);
  const total = tenantOfNamespace.size;
  const seen = { roleBinding: new Map<string, number>(), networkPolicy: new Map<string, number>() };
  const quotaSeen = new Map<string, number>();
  const completeAt = new Map<string, number>();
  let resolveAll!: () => void;
  const allDone = new Promise<void>((r) => {
    resolveAll = r;
  });
  const check = (namespace: string) => {
    const tenant = tenantOfNamespace.get(namespace);
    if (!tenant || completeAt.has(namespace)) return;
    const quota = contender.quota.kind === "ResourceQuota" ? quotaSeen.get(namespace) : quotaSeen.get(tenant);
    const rb = seen.roleBinding.get(namespace);
    const np = seen.networkPolicy.get(namespace);
    if (quota === undefined || rb === undefined || np === undefined) return;
    completeAt.set(namespace, performance.now());
    if (completeAt.size === total) resolveAll();
  };

  const informers: Informer<KubernetesObject>[] = [];
  const track = (selector: { apiVersion: string; kind: string }, onObject: (o: KubernetesObject) => void) => {
    const informer = Informer.forResource<KubernetesObject>(client, selector);
    informer.addHandler({ onAdd: onObject, onUpdate: (_, o) => onObject(o) });
    informers.push(informer);
  };
  for (const key of ["roleBinding", "networkPolicy"] as const) {
    track(kinds[key], (o) => {
      const ns = o.metadata?.namespace;
      if (!ns || !tenantOfNamespace.has(ns) || seen[key].has(ns)) return;
      seen[key].set(ns, performance.now());
      check(ns);
    });
  }
  if (contender.quota.kind === "ResourceQuota") {
    track(kinds.resourceQuota, (o) => {
      const ns = o.metadata?.namespace;
      if (!ns || !tenantOfNamespace.has(ns) || quotaSeen.has(ns)) return;
      quotaSeen.set(ns, performance.now());
      check(ns);
    });
  } else {
    // One cluster-scoped quota per tenant covers all of its namespaces.
    track({ apiVersion: contender.quota.apiVersion, kind: contender.quota.kind }, (o) => {
      const tenant = (o as { spec?: { tenant?: string } }).spec?.tenant;
      if (!tenant || quotaSeen.has(tenant)) return;
      quotaSeen.set(tenant, performance.now());
      for (const ns of options.namespacesOf(tenant)) check(ns);
    });
  }
  for (const informer of informers) informer.start();
  await Promise.all(informers.map((i) => i.waitForSync({ timeoutMs: 60_000 })));

  const owners = new Map<string, CoreV1Api>();
  if (contender.ownerCreatesNamespaces) {
    await boundedAll(tenants, 8, async (t) => {
      owners.set(t, (await contender.owner(t)).kubeConfig.makeApiClient(CoreV1Api));
    });
  }
  const sampler = new MemorySampler(contender.pid ? { controller: contender.pid } : {}).start();
  const errors: string[] = [];
  const startedAt = new Map<string, number>();
  const started = performance.now();
  await boundedAll(tenants, 32, async (t) => {
    const t0 = performance.now();
    try {
      await contender.createTenant(t, options.ownerOf(t));
      if (!contender.ownerCreatesNamespaces) for (const ns of options.namespacesOf(t)) startedAt.set(ns, t0);
    } catch (err) {
      errors.push(`tenant ${t}: ${errorText(err)}`);
    }
  });
  if (contender.ownerCreatesNamespaces) {
    const work = tenants.flatMap((t) => options.namespacesOf(t).map((ns) => ({ t, ns })));
    await boundedAll(work, 32, async ({ t, ns }) => {
      startedAt.set(ns, performance.now());
      // The controller may not have seen a tenant created a moment ago: retry briefly, as a person would.
      for (let attempt = 1; ; attempt++) {
        try {
          await owners.get(t)!.createNamespace({ body: { metadata: { name: ns } } });
          return;
        } catch (err) {
          const code = errorCode(err);
          if (attempt >= 20 || code === 409 || (code !== undefined && code < 500 && code !== 403)) {
            errors.push(`namespace ${ns}: ${code ?? ""} ${errorText(err)}`);
            startedAt.delete(ns);
            return;
          }
          await sleep(250);
        }
      }
    });
  }
  const expected = startedAt.size;
  if (completeAt.size < total) {
    const stop = new AbortController();
    const pause = (ms: number) => sleep(ms, undefined, { signal: stop.signal }).catch(() => {});
    await Promise.race([
      allDone,
      pause(Math.max(0, options.timeoutMs - (performance.now() - started))),
      (async () => {
        // Namespaces that never started cannot complete: stop waiting once the rest have.
        while (!stop.signal.aborted && [...startedAt.keys()].some((ns) => !completeAt.has(ns)))
          await pause(200);
      })(),
    ]);
    stop.abort();
  }
  const memory = sampler.stop();
  for (const informer of informers) await informer.stop();
  const latencies = [...startedAt]
    .filter(([ns]) => completeAt.has(ns))
    .map(([ns, t0]) => completeAt.get(ns)! - t0);
  const done = [...completeAt.values()];
  return {
    tenants: tenants.length,
    namespaces: total,
    complete: latencies.length,
    errors: expected < total && errors.length === 0 ? ["some namespaces were never created"] : errors,
    totalMs: done.length ? Math.max(...done) - started : Number.NaN,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    rssPeakMiB: (contender.pid ? memory.peak.controller : memory.peak.self) ?? Number.NaN,
  };
}
