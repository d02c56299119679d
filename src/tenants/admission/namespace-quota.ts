import { setTimeout as sleep } from "node:timers/promises";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { isConflict, isNotFound } from "../../kube/index.js";
import { TENANTRY_GROUP, TENANTS_VERSION } from "../api/group.js";
import type { Tenant } from "../api/tenant.js";
import { NAMESPACE_ORIGIN_LABEL } from "../controllers/labels.js";
import type { TenantInformers } from "../informers.js";
import { KeyedMutex } from "./keyed-mutex.js";

/**
 * Namespace creations admitted but not yet seen by the namespace cache, kept on the Tenant as a
 * JSON list. An annotation rather than a status field: the tenant controller owns the status
 * (server-side applies it) and the status schema has no place for reservations, whereas
 * metadata is free, and a write of the whole Tenant with the resourceVersion just read is a
 * compare-and-swap that fails with 409 if anyone (another replica, the controller) wrote in
 * between. So concurrent creations, in this process or in any other, can never both take the
 * last free slot.
 */
export const NAMESPACE_RESERVATIONS_ANNOTATION = "tenantry.dev/namespace-reservations";

export interface NamespaceReservation {
  namespace: string;
  /** RFC 3339; after this the reservation no longer counts (the creation failed or was seen). */
  expiresAt: string;
}

export function readReservations(tenant: Tenant): NamespaceReservation[] {
  const text = tenant.metadata?.annotations?.[NAMESPACE_RESERVATIONS_ANNOTATION];
  if (!text) return [];
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (r): r is NamespaceReservation => typeof r?.namespace === "string" && typeof r?.expiresAt === "string",
    );
  } catch {
    // Anything unreadable counts as no reservation; it is rewritten at the next reservation.
    return [];
  }
}

export type ReservationOutcome =
  | { admitted: true; reservations: NamespaceReservation[]; changed: boolean }
  | { admitted: false; used: number; quota: number };

/**
 * Decides one namespace creation against the quota: namespaces already counted are the
 * owner-created ones in the cache plus live reservations, as one set of names (a reserved
 * namespace that reached the cache counts once, and its reservation is dropped).
 */
export function reserveNamespace(input: {
  quota: number | undefined;
  existing: ReadonlySet<string>;
  /** Every owner namespace the cache has seen, including those being deleted (default: existing). */
  seen?: ReadonlySet<string>;
  reservations: readonly NamespaceReservation[];
  namespace: string;
  now: Date;
  ttlMs: number;
}): ReservationOutcome {
  const { quota, existing, reservations, namespace, now } = input;
  const seen = input.seen ?? existing;
  const live = reservations.filter((r) => Date.parse(r.expiresAt) > now.getTime() && !seen.has(r.namespace));
  const pruned = live.length !== reservations.length;
  if (quota === undefined) return { admitted: true, reservations: live, changed: pruned };
  const counted = new Set([...existing, ...live.map((r) => r.namespace)]);
  // The name already holds a slot: this creation either fails as AlreadyExists or is a retry.
  if (counted.has(namespace)) return { admitted: true, reservations: live, changed: pruned };
  if (counted.size >= quota) return { admitted: false, used: counted.size, quota };
  const expiresAt = new Date(now.getTime() + input.ttlMs).toISOString();
  return { admitted: true, reservations: [...live, { namespace, expiresAt }], changed: true };
}

export interface NamespaceQuotaOptions {
  informers: TenantInformers;
  /** How long an admitted creation holds its slot before the namespace cache must show it. */
  ttlMs?: number;
  now?: () => Date;
}

/** Enforces Tenant.spec.namespaceQuota on namespaces the owners create, race-free across replicas. */
export class NamespaceQuota {
  private readonly mutex = new KeyedMutex();
  private readonly customObjects: CustomObjectsApi;
  private readonly coordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenants" };

  constructor(private readonly options: NamespaceQuotaOptions) {
    this.customObjects = options.informers.client.kubeConfig.makeApiClient(CustomObjectsApi);
  }

  /**
   * Names of the namespaces the tenant's owners created, as the cache knows them. A namespace being
   * deleted no longer counts: its owner asked for the slot back, and the namespace controller may
   * take minutes to empty it.
   */
  ownerNamespaces(tenant: string): { counted: Set<string>; seen: Set<string> } {
    const owned = this.options.informers
      .namespacesOf(tenant)
      .filter((n) => n.metadata?.labels?.[NAMESPACE_ORIGIN_LABEL] === "owner");
    return {
      counted: new Set(owned.filter((n) => !n.metadata?.deletionTimestamp).map((n) => n.metadata!.name!)),
      seen: new Set(owned.map((n) => n.metadata!.name!)),
    };
  }

  /**
   * Takes a slot for `namespace` in the tenant's quota, or says how full it is. One request per
   * tenant at a time in this process (so its own requests do not fight over the resourceVersion);
   * the compare-and-swap covers the other replicas. A dry run decides without writing.
   */
  async reserve(
    tenantName: string,
    namespace: string,
    dryRun = false,
  ): Promise<{ admitted: true } | { admitted: false; used: number; quota: number }> {
    return this.mutex.run(tenantName, async () => {
      for (let attempt = 1; ; attempt++) {
        let fresh: Tenant;
        try {
          fresh = (await this.customObjects.getClusterCustomObject({
            ...this.coordinates,
            name: tenantName,
          })) as Tenant;
        } catch (err) {
          if (isNotFound(err)) return { admitted: false, used: 0, quota: 0 };
          throw err;
        }
        const owned = this.ownerNamespaces(tenantName);
        const outcome = reserveNamespace({
          quota: fresh.spec.namespaceQuota,
          existing: owned.counted,
          seen: owned.seen,
          reservations: readReservations(fresh),
          namespace,
          now: this.options.now?.() ?? new Date(),
          ttlMs: this.options.ttlMs ?? 60_000,
        });
        if (!outcome.admitted) return outcome;
        if (!outcome.changed || dryRun) return { admitted: true };
        const annotations = { ...fresh.metadata?.annotations };
        if (outcome.reservations.length)
          annotations[NAMESPACE_RESERVATIONS_ANNOTATION] = JSON.stringify(outcome.reservations);
        else delete annotations[NAMESPACE_RESERVATIONS_ANNOTATION];
        try {
          // resourceVersion from the read above: the write fails if the Tenant changed since.
          await this.customObjects.replaceClusterCustomObject({
            ...this.coordinates,
            name: tenantName,
            body: { ...fresh, metadata: { ...fresh.metadata, annotations } },
          });
          return { admitted: true };
        } catch (err) {
          if (!isConflict(err) || attempt >= 50) throw err;
          await sleep(Math.random() * Math.min(50, attempt * 5));
        }
      }
    });
  }
}
