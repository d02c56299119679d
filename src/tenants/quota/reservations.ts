import {
  addAmounts,
  formatQuantity,
  type ResourceAmounts,
  type ResourceList,
  type ResourceListInput,
  toAmounts,
  toResourceList,
} from "../../common/index.js";

/**
 * An admitted creation not yet seen as an object. Admission records it on the quota with a
 * compare-and-swap of the quota's resourceVersion, so two creations racing in different namespaces
 * can never both take the last unit; the quota controller drops it once the object is counted in
 * `used`, or once it expired with no such object in the controller's synced caches (the creation
 * failed after admission). Admission never drops one by the clock: `used` is only as fresh as the
 * controller, and while none runs (killed, or handing the lease over) an expired reservation may
 * be the only record of a pod that `used` does not count yet.
 */
export interface Reservation {
  /** AdmissionReview uid: unique per request. */
  id: string;
  namespace: string;
  /** `pods`, `deployments.apps`, … */
  resource: string;
  name: string;
  amounts: ResourceList;
  expiresAt: string;
}

export interface QuotaState {
  hard: ResourceListInput;
  used: ResourceListInput;
  reservations: Reservation[];
}

export interface Exceeded {
  resource: string;
  requested: string;
  used: string;
  reserved: string;
  hard: string;
}

export type AdmitResult =
  | { admitted: true; reservations: Reservation[] }
  | { admitted: false; exceeded: Exceeded[] };

const isBinary = (name: string) => /memory|storage/.test(name);
const fmt = (name: string, value: bigint) => formatQuantity(value, isBinary(name));

export function liveReservations(reservations: Reservation[], now: Date): Reservation[] {
  return reservations.filter((r) => Date.parse(r.expiresAt) > now.getTime());
}

/** Decides one creation against the quota; on success returns the reservations to store. */
export function admit(
  state: QuotaState,
  request: Omit<Reservation, "expiresAt">,
  now: Date,
  ttlMs: number,
): AdmitResult {
  const hard = toAmounts(state.hard);
  const requested = new Map(
    [...toAmounts(request.amounts)].filter(([name, value]) => hard.has(name) && value > 0n),
  );
  // Expired ones too (see Reservation); a retried request replaces its own.
  const held = state.reservations.filter((r) => r.id !== request.id);
  if (requested.size === 0) return { admitted: true, reservations: held };
  const used = toAmounts(state.used);
  const reserved = addAmounts(...held.map((r) => toAmounts(r.amounts)));
  const exceeded: Exceeded[] = [];
  for (const [name, amount] of requested) {
    const limit = hard.get(name)!;
    const inUse = used.get(name) ?? 0n;
    const inFlight = reserved.get(name) ?? 0n;
    if (inUse + inFlight + amount > limit) {
      exceeded.push({
        resource: name,
        requested: fmt(name, amount),
        used: fmt(name, inUse),
        reserved: fmt(name, inFlight),
        hard: fmt(name, limit),
      });
    }
  }
  if (exceeded.length > 0) return { admitted: false, exceeded };
  return {
    admitted: true,
    reservations: [
      ...held,
      {
        ...request,
        amounts: toResourceList(requested),
        expiresAt: new Date(now.getTime() + ttlMs).toISOString(),
      },
    ],
  };
}

/**
 * Reservations still needed after the controller counted `observed` objects into `used`: those of
 * objects not yet observed and not expired.
 */
export function settle(
  reservations: Reservation[],
  observed: (r: Reservation) => boolean,
  now: Date,
): Reservation[] {
  return liveReservations(reservations, now).filter((r) => !observed(r));
}

export function reservedTotal(reservations: Reservation[]): ResourceAmounts {
  return addAmounts(...reservations.map((r) => toAmounts(r.amounts)));
}

export function describeExceeded(quotaName: string, tenant: string, exceeded: Exceeded[]): string {
  const parts = exceeded.map(
    (e) =>
      `${e.resource}: requested ${e.requested}, used ${e.used}, reserved ${e.reserved}, limited to ${e.hard}`,
  );
  return `exceeded quota of tenant "${tenant}" (TenantResourceQuota ${quotaName}): ${parts.join("; ")}`;
}
