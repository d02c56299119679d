import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { addAmounts, type ResourceAmounts, toAmounts, toResourceList } from "../../common/index.js";
import {
  applyObject,
  type ClusterClient,
  type Condition,
  Controller,
  componentCache,
  type Informer,
  type InformerCache,
  objectKey,
  type ReconcileContext,
  reconcileDone,
  requeueAfter,
  sameStoredJson,
  setCondition,
} from "../../kube/index.js";
import { userLabelValue } from "../admission/identity.js";
import { formatUsageSummary } from "../api/summary.js";
import type { TenantResourceQuota, TenantResourceQuotaStatus } from "../api/tenant-resource-quota.js";
import { managedMetadata, TENANT_LABEL, USER_LABEL } from "../controllers/labels.js";
import { KindResolver, type ResourceKind, resourceForQuotaName } from "./discovery.js";
import { type Reservation, reservedTotal, settle } from "./reservations.js";
import type { QuotaStore } from "./store.js";
import { matchesScopes, objectUsage, tracked } from "./usage.js";

/** How long a quota's recount waits for more of its objects' events to come in. */
const COUNT_COALESCE_MS = 1000;

export interface QuotaControllerOptions {
  client: ClusterClient;
  /** The process's shared cache (the counted kinds are watched there); without it, informers of its own. */
  cache?: InformerCache;
  store: QuotaStore;
  namespaces: Informer<V1Namespace>;
  quotas: Informer<TenantResourceQuota>;
  /** A tenant's namespaces and quotas, from the informers' indexes. */
  namespacesOf(tenant: string): V1Namespace[];
  quotasOf(tenant: string): TenantResourceQuota[];
  logger: Logger;
}

/**
 * Recomputes each TenantResourceQuota's usage from the real objects in its tenant's namespaces,
 * drops the reservations whose objects it now counts (or that expired), and keeps per-namespace
 * ResourceQuotas for spec.namespaceQuotas. Deletes and failed creations thereby give quota back.
 */
export class QuotaController {
  private readonly controller: Controller;
  private readonly resolver: KindResolver;
  private readonly objectInformers = new Map<
    string,
    { kind: ResourceKind; informer: Informer<KubernetesObject> }
  >();
  private readonly cluster: string;
  /** What each quota's status said, in the parts this controller owns, after its last reconcile. */
  private readonly lastOutcome = new Map<string, TenantResourceQuotaStatus>();
  private started = false;

  private readonly cache: InformerCache;
  private readonly release: () => Promise<void>;

  constructor(private readonly options: QuotaControllerOptions) {
    this.cluster = options.client.name;
    const { cache, release } = componentCache(options);
    this.cache = cache;
    this.release = release;
    this.resolver = new KindResolver(options.client);
    this.controller = new Controller({
      name: "tenant-quotas",
      // Each reconcile waits on a status write; a thousand new tenants' quotas are counted as fast
      // as their namespaces appear only with several in flight (one key is never run twice at once).
      workers: 8,
      logger: options.logger,
      reconcile: (_key, ctx) => this.reconcile(ctx),
    });
    this.controller.watch(options.quotas, (quota) => this.keysForQuotaEvent(quota));
    this.controller.watch(options.namespaces, (ns) =>
      this.quotasOfTenant(ns.metadata?.labels?.[TENANT_LABEL]),
    );
  }

  /**
   * Admission writes a quota's status on every creation it admits, changing only its reservations.
   * The controller has work then only when a reservation's object is already counted (to settle
   * it); an expiry is a timer. Any other change (a new quota, a spec change, a status someone else
   * wrote, a restart) differs from what the controller last made of the quota, and is reconciled.
   */
  private keysForQuotaEvent(quota: TenantResourceQuota): string[] {
    const name = quota.metadata!.name!;
    const key = objectKey(this.cluster, undefined, name);
    if (quota.metadata?.deletionTimestamp) return [key];
    if (quota.status?.observedGeneration !== quota.metadata?.generation) return [key];
    if (!sameStoredJson(this.lastOutcome.get(name), controllerOwned(quota.status))) return [key];
    const reservations = quota.status?.reservations ?? [];
    if (reservations.some((r) => this.isCounted(r))) return [key];
    if (reservations.length > 0) {
      const earliest = Math.min(...reservations.map((r) => Date.parse(r.expiresAt)));
      this.controller.enqueueAfter(key, Math.max(earliest - Date.now(), 0) + 100);
    }
    return [];
  }

  /** Whether the object a reservation was made for is in the caches, hence counted at the next reconcile. */
  private isCounted(reservation: Reservation): boolean {
    // Informers are keyed `<resource>.<group>`; a reservation names core resources without the dot.
    const resource = reservation.resource;
    const key = resource.includes(".") ? resource : `${resource}.`;
    return !!this.objectInformers.get(key)?.informer.get(reservation.namespace, reservation.name);
  }

  private quotasOfTenant(tenant: string | undefined): string[] {
    if (!tenant) return [];
    return this.options.quotasOf(tenant).map((q) => objectKey(this.cluster, undefined, q.metadata!.name!));
  }

  async start(): Promise<void> {
    this.started = true;
    // Pods are what most quotas count; watch them from the start so admission never waits.
    await this.informerFor({ group: "", resource: "pods" });
    await this.controller.start();
  }

  async stop(): Promise<void> {
    this.started = false;
    await this.controller.stop();
    await this.release();
  }

  /** Starts (once) an informer for a counted resource; its events re-queue the tenant's quotas. */
  private async informerFor(ref: { group: string; resource: string }) {
    const key = `${ref.resource}.${ref.group}`;
    const existing = this.objectInformers.get(key);
    if (existing) return existing;
    const kind = await this.resolver.resolve(ref);
    if (!kind) return undefined;
    const informer = this.cache.informer<KubernetesObject>({ apiVersion: kind.apiVersion, kind: kind.kind });
    const entry = { kind, informer };
    this.objectInformers.set(key, entry);
    this.controller.watch(informer, (o) => {
      const ns = o.metadata?.namespace;
      const keys = this.quotasOfTenant(
        ns ? this.options.namespaces.get(undefined, ns)?.metadata?.labels?.[TENANT_LABEL] : undefined,
      );
      // Counted objects come in bursts (a thousand pods created at once): one recount a second per
      // quota covers them all, where one per object would be a status write each, every one
      // racing admission's reservations on the same quota (a conflict costs both a read and a retry).
      for (const key of keys) this.controller.enqueueAfter(key, COUNT_COALESCE_MS);
      return [];
    });
    if (this.started) {
      informer.start();
      await informer.waitForSync({ timeoutMs: 60_000 });
    }
    return entry;
  }

  private async reconcile(ctx: ReconcileContext) {
    const quota = this.options.quotas.get(undefined, ctx.ref.name);
    if (!quota || quota.metadata?.deletionTimestamp) {
      this.options.store.forget(ctx.ref.name);
      this.lastOutcome.delete(ctx.ref.name);
      return reconcileDone();
    }
    const name = quota.metadata!.name!;
    const tenant = quota.spec.tenant;
    const namespaces = new Set(this.options.namespacesOf(tenant).map((n) => n.metadata!.name!));
    const hard = toAmounts(quota.spec.hard);
    const refs = new Map(
      [...hard.keys()].map((n) => resourceForQuotaName(n)!).map((r) => [`${r.resource}.${r.group}`, r]),
    );
    let used: ResourceAmounts = new Map();
    const perNamespace = new Map<string, ResourceAmounts>();
    const observed = new Set<string>();
    for (const ref of refs.values()) {
      const entry = await this.informerFor(ref);
      if (!entry) continue;
      const resource = ref.group ? `${ref.resource}.${ref.group}` : ref.resource;
      for (const object of [...namespaces].flatMap((ns) => entry.informer.inNamespace(ns))) {
        const ns = object.metadata!.namespace!;
        observed.add(`${resource}/${ns}/${object.metadata!.name}`);
        if (quota.spec.user && object.metadata?.labels?.[USER_LABEL] !== userLabelValue(quota.spec.user))
          continue;
        if (!matchesScopes(ref, object, quota.spec.scopes, quota.spec.scopeSelector)) continue;
        const amounts = tracked(objectUsage(ref, object), hard);
        used = addAmounts(used, amounts);
        perNamespace.set(ns, addAmounts(perNamespace.get(ns) ?? new Map(), amounts));
      }
    }
    for (const name of hard.keys()) if (!used.has(name)) used.set(name, 0n);

    for (const nsQuota of quota.spec.namespaceQuotas ?? []) {
      if (!namespaces.has(nsQuota.namespace)) continue;
      const metadata = managedMetadata({ name: tenant, uid: "" }, `tenantry-${name}`, nsQuota.namespace);
      metadata.ownerReferences = [
        {
          apiVersion: quota.apiVersion!,
          kind: "TenantResourceQuota",
          name,
          uid: quota.metadata!.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ];
      await applyObject(this.options.client, {
        apiVersion: "v1",
        kind: "ResourceQuota",
        metadata,
        spec: { hard: nsQuota.hard },
      } as KubernetesObject);
    }

    const now = new Date();
    const statusFor = (base: TenantResourceQuota): TenantResourceQuotaStatus => {
      const reservations = settle(
        base.status?.reservations ?? [],
        (r) => observed.has(`${r.resource}/${r.namespace}/${r.name}`),
        now,
      );
      const usedList = toResourceList(used);
      const condition: Omit<Condition, "lastTransitionTime"> = {
        type: "Ready",
        status: "True",
        reason: "UsageCounted",
        // Nothing that changes as namespaces come and go: each change would be a status write (and
        // the Tenant's after it) while a new tenant's namespaces are created one by one.
        message: "usage counted from the objects in the tenant's namespaces",
        observedGeneration: base.metadata?.generation,
      };
      return {
        ...base.status,
        observedGeneration: base.metadata?.generation,
        hard: base.spec.hard,
        used: usedList,
        reserved: toResourceList(reservedTotal(reservations)),
        reservations,
        namespaces: [...perNamespace]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([namespace, amounts]) => ({ namespace, used: toResourceList(amounts) })),
        summary: formatUsageSummary(base.spec.hard, usedList),
        conditions: setCondition(base.status?.conditions as Condition[] | undefined, condition, now),
      };
    };
    // When the cached copy already says what this would write, there is nothing to do (a newer
    // copy brings the quota back here anyway).
    const unchanged = sameStoredJson(statusFor(quota), quota.status ?? {});
    // Decided on the cached copy, as unchanged was: its resourceVersion makes the write a
    // compare-and-swap, so no read comes first (a conflict reads and decides again).
    const written = unchanged ? quota : await this.options.store.updateStatus(name, statusFor, quota);
    this.lastOutcome.set(name, controllerOwned(written?.status));
    // Reservations whose objects never appear must be released when they expire.
    const pending = written?.status?.reservations ?? [];
    if (pending.length > 0) {
      const next = Math.min(...pending.map((r) => Date.parse(r.expiresAt))) - Date.now();
      // Look again when the first reservation expires, or within 5 minutes in any case.
      return requeueAfter(Math.min(Math.max(next, 0) + 100, 5 * 60_000));
    }
    return reconcileDone();
  }
}

/** The parts of a quota's status that the controller computes (admission writes the reservations). */
function controllerOwned(status: TenantResourceQuotaStatus | undefined): TenantResourceQuotaStatus {
  const { reservations: _reservations, reserved: _reserved, ...owned } = status ?? {};
  return owned;
}
