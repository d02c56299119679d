import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { isDeepStrictEqual } from "node:util";
import { CustomObjectsApi, type KubernetesObject } from "@kubernetes/client-node";
import { type ClusterClient, Informer } from "../../src/kube/index.js";
import {
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
  type Tenant,
} from "../../src/tenants/index.js";

export const tenantsResource = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenants" };
export const quotasResource = {
  group: TENANTRY_GROUP,
  version: TENANTS_VERSION,
  plural: "tenantresourcequotas",
};

/**
 * The API server's own throttling (priority and fairness, in-flight limits) would cap one user's
 * burst of a thousand creates long before tenantry is the limit; these measure tenantry instead.
 */
export const UNTHROTTLED_APISERVER_FLAGS = [
  "--enable-priority-and-fairness=false",
  "--max-requests-inflight=4000",
  "--max-mutating-requests-inflight=3000",
];

/** Polls `check` every 250 ms until it returns a value (errors count as not yet). */
export async function until<T>(
  what: string,
  timeoutMs: number,
  check: () => Promise<T | undefined>,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

/** The short names of the namespaces every benchmark tenant has. */
export const NAMESPACES = ["dev", "test", "prod"];

export const ownerOf = (tenant: string) => `owner-${tenant}`;

/** A tenant as a platform team would declare it: owner, namespaces, quota, defaults, isolation (on by default). */
export function tenantObject(
  name: string,
  options: { namespaces?: string[]; pods?: number; namespaceQuota?: number } = {},
): Tenant {
  return {
    apiVersion: TENANTS_API_VERSION,
    kind: "Tenant",
    metadata: { name },
    spec: {
      owners: [{ kind: "User", name: ownerOf(name) }],
      namespaces: (options.namespaces ?? NAMESPACES).map((n) => ({ name: n })),
      ...(options.namespaceQuota !== undefined ? { namespaceQuota: options.namespaceQuota } : {}),
      quota: {
        hard: {
          pods: String(options.pods ?? 100_000),
          "requests.cpu": "1000",
          "requests.memory": "1000Gi",
        },
      },
      limitRanges: [
        {
          name: "defaults",
          limits: [
            {
              type: "Container",
              default: { cpu: "100m", memory: "64Mi" },
              defaultRequest: { cpu: "10m", memory: "16Mi" },
            },
          ],
        },
      ],
    },
  } as Tenant;
}

/** Ready=True for the current generation, with the expected number of namespaces in status. */
export function isTenantReady(tenant: Tenant, namespaces: number): boolean {
  const ready = tenant.status?.conditions?.find((c) => c.type === "Ready");
  return (
    ready?.status === "True" &&
    (ready.observedGeneration ?? tenant.status?.observedGeneration) === tenant.metadata?.generation &&
    tenant.status?.namespaceCount === namespaces
  );
}

/**
 * Watches every Tenant and records, per name, the first moment it was seen ready. One watch for
 * all tenants: polling each one would load the API server more than the work being measured.
 */
export class ReadinessWatch {
  readonly readyAt = new Map<string, number>();
  private readonly informer: Informer<Tenant>;
  private readonly waiters: { names: Set<string>; resolve: () => void }[] = [];

  constructor(
    client: ClusterClient,
    private readonly namespaces: number,
  ) {
    this.informer = Informer.forResource<Tenant>(client, { apiVersion: TENANTS_API_VERSION, kind: "Tenant" });
    const seen = (tenant: Tenant) => {
      const name = tenant.metadata?.name;
      if (!name || this.readyAt.has(name) || !isTenantReady(tenant, this.namespaces)) return;
      this.readyAt.set(name, performance.now());
      for (const waiter of this.waiters) {
        waiter.names.delete(name);
        if (waiter.names.size === 0) waiter.resolve();
      }
    };
    this.informer.addHandler({ onAdd: seen, onUpdate: (_, t) => seen(t) });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync({ timeoutMs: 60_000 });
  }

  /** Resolves true when all named tenants are ready, false at the deadline. */
  async waitFor(names: string[], timeoutMs: number): Promise<boolean> {
    const pending = new Set(names.filter((n) => !this.readyAt.has(n)));
    if (pending.size === 0) return true;
    let resolve!: () => void;
    const done = new Promise<void>((r) => {
      resolve = r;
    });
    const waiter = { names: pending, resolve };
    this.waiters.push(waiter);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<"timeout">((r) => {
      timer = setTimeout(() => r("timeout"), timeoutMs);
    });
    const outcome = await Promise.race([done.then(() => "ready" as const), deadline]);
    clearTimeout(timer);
    this.waiters.splice(this.waiters.indexOf(waiter), 1);
    return outcome === "ready";
  }

  get(name: string): Tenant | undefined {
    return this.informer.get(undefined, name);
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }
}

/**
 * Watches the isolation NetworkPolicy tenantry writes into every tenant namespace and records, per
 * namespace, when it was first seen: a tenant is isolated once all its namespaces have it.
 */
export class IsolationWatch {
  readonly isolatedAt = new Map<string, number>();
  private readonly informer: Informer<KubernetesObject>;

  constructor(client: ClusterClient) {
    this.informer = Informer.forResource<KubernetesObject>(client, {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      labelSelector: "app.kubernetes.io/managed-by=tenantry",
    });
    const seen = (policy: KubernetesObject) => {
      const namespace = policy.metadata?.namespace;
      if (policy.metadata?.name !== "tenantry-isolation" || !namespace || this.isolatedAt.has(namespace))
        return;
      this.isolatedAt.set(namespace, performance.now());
    };
    this.informer.addHandler({ onAdd: seen, onUpdate: (_, p) => seen(p) });
  }

  async start(): Promise<void> {
    this.informer.start();
    await this.informer.waitForSync({ timeoutMs: 60_000 });
  }

  /** Waits until every named namespace has its policy, or the deadline; true if they all do. */
  async waitFor(namespaces: string[], timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (namespaces.some((n) => !this.isolatedAt.has(n))) {
      if (performance.now() > deadline) return false;
      await sleep(250);
    }
    return true;
  }

  async stop(): Promise<void> {
    await this.informer.stop();
  }
}

export function customObjects(client: ClusterClient): CustomObjectsApi {
  return client.kubeConfig.makeApiClient(CustomObjectsApi);
}

/** What an update changed, for telling who keeps writing: the status fields and metadata parts that differ. */
function changedParts(before: Tenant, after: Tenant): string {
  const parts: string[] = [];
  const b = (before.status ?? {}) as Record<string, unknown>;
  const a = (after.status ?? {}) as Record<string, unknown>;
  for (const field of new Set([...Object.keys(b), ...Object.keys(a)])) {
    if (!isDeepStrictEqual(b[field], a[field])) parts.push(`status.${field}`);
  }
  if (before.metadata?.generation !== after.metadata?.generation) parts.push("spec");
  for (const field of ["labels", "annotations", "finalizers"] as const) {
    if (!isDeepStrictEqual(before.metadata?.[field], after.metadata?.[field]))
      parts.push(`metadata.${field}`);
  }
  return parts.join(",") || "nothing (resourceVersion only)";
}

export interface Settled {
  /** From the start of the wait until the last change, in ms (NaN: still busy at the limit). */
  ms: number;
  /** Changes seen while waiting, per kind and changed parts, most first. */
  writes: [string, number][];
}

/**
 * Waits until neither Tenants nor TenantResourceQuotas have changed for `quietMs`: the controllers
 * have worked off what provisioning queued (status updates re-queue tenants). Returns the wait in
 * ms, or NaN if they were still busy after `limitMs`, and what the changes in that time were.
 */
export async function settle(client: ClusterClient, quietMs: number, limitMs: number): Promise<Settled> {
  const informers = [
    Informer.forResource<Tenant>(client, { apiVersion: TENANTS_API_VERSION, kind: "Tenant" }),
    Informer.forResource<Tenant>(client, { apiVersion: TENANTS_API_VERSION, kind: "TenantResourceQuota" }),
  ];
  let last = performance.now();
  let counting = false;
  const writes = new Map<string, number>();
  const count = (what: string) => {
    last = performance.now();
    if (counting) writes.set(what, (writes.get(what) ?? 0) + 1);
  };
  for (const informer of informers) {
    informer.addHandler({
      onUpdate: (before, after) => count(`${after.kind} ${changedParts(before, after)}`),
      onAdd: (obj) => count(`${obj.kind} added`),
    });
    informer.start();
  }
  await Promise.all(informers.map((i) => i.waitForSync({ timeoutMs: 60_000 })));
  const started = performance.now();
  last = started;
  counting = true;
  const result = (ms: number): Settled => ({ ms, writes: [...writes].sort((a, b) => b[1] - a[1]) });
  try {
    for (;;) {
      const now = performance.now();
      if (now - last >= quietMs) return result(last - started);
      if (now - started > limitMs) return result(Number.NaN);
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await Promise.all(informers.map((i) => i.stop()));
  }
}
