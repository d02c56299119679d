import type { V1Namespace } from "@kubernetes/client-node";
import { type ResourceAmounts, toAmounts, toResourceList } from "../../common/index.js";
import type { Informer } from "../../kube/index.js";
import {
  type AdmissionCheck,
  type AdmissionDecision,
  type AdmissionRequest,
  allow,
  deny,
  NOT_NAMESPACE_BOOTSTRAP,
  oncePerRequest,
  tenantOfNamespaceKey,
} from "../../webhooks/index.js";
import { userLabelValue } from "../admission/identity.js";
import type { TenantResourceQuota } from "../api/tenant-resource-quota.js";
import { IN_TENANT_NAMESPACES, TENANT_LABEL, USER_LABEL } from "../controllers/labels.js";
import { GroupCommitter } from "./batcher.js";
import { admit, describeExceeded, type Reservation, reservedTotal } from "./reservations.js";
import { type QuotaStore, READ_FRESH } from "./store.js";
import { matchesScopes, objectUsage, tracked } from "./usage.js";

export interface QuotaAdmissionOptions {
  store: QuotaStore;
  namespaces: Informer<V1Namespace>;
  /** The tenant's quotas, from the cache (an index, not a scan of every quota). */
  quotasOf: (tenant: string) => TenantResourceQuota[];
  /**
   * Reads a namespace the cache has not seen yet (created a moment ago): a cache miss must not let
   * a creation in a tenant namespace past its quota.
   */
  readNamespace: (name: string) => Promise<V1Namespace | undefined>;
  /** How long an admitted creation holds its reservation if its object never shows up. */
  reservationTtlMs?: number;
}

/**
 * Admission for TenantResourceQuota: every creation in a tenant namespace reserves its usage on
 * each quota of the tenant that tracks it, by compare-and-swap on the quota's resourceVersion.
 * Creations racing across namespaces (and across tenantry replicas) therefore never exceed hard.
 */
export class QuotaAdmission {
  private readonly committer: GroupCommitter<QuotaRequest, string | undefined>;

  constructor(private readonly options: QuotaAdmissionOptions) {
    this.committer = new GroupCommitter((name, requests) => this.commit(name, requests));
  }

  webhook(): AdmissionCheck {
    return {
      name: "quota.tenants.tenantry.dev",
      kind: "validating",
      path: "/validate/tenant-quota",
      // Quota must hold: if tenantry cannot answer, creations in tenant namespaces wait.
      failurePolicy: "Fail",
      timeoutSeconds: 10,
      // Reservations are written on real requests only; dry runs decide without writing.
      sideEffects: "NoneOnDryRun",
      // Last, and only for a request every other check allowed: a refused one reserves nothing.
      reserves: true,
      namespaceSelector: IN_TENANT_NAMESPACES,
      // The quota controller counts those from the objects; admission must not block a new namespace.
      matchConditions: [NOT_NAMESPACE_BOOTSTRAP],
      rules: [
        {
          apiGroups: ["*"],
          apiVersions: ["*"],
          operations: ["CREATE"],
          resources: ["*"],
          scope: "Namespaced",
        },
        // What an update can grow, as kube-apiserver's ResourceQuota evaluates it: a pod's
        // resources (in-place resize), a claim's storage, a Service's type and ports.
        {
          apiGroups: [""],
          apiVersions: ["v1"],
          operations: ["UPDATE"],
          resources: GROWING_UPDATES,
          scope: "Namespaced",
        },
      ],
      handle: (request) => this.handle(request),
    };
  }

  /**
   * Decides a batch of requests against one quota, in arrival order, and stores the admitted ones'
   * reservations in one compare-and-swap; on conflict the whole batch is decided again on fresh state.
   * Returns, per request, undefined when admitted or the refusal message.
   */
  private async commit(name: string, requests: QuotaRequest[]): Promise<(string | undefined)[]> {
    let decisions: (string | undefined)[] = [];
    await this.options.store.updateStatus(name, (quota, fresh) => {
      let reservations: Reservation[] = quota.status?.reservations ?? [];
      const used = quota.status?.used ?? {};
      decisions = requests.map((request) => {
        const result = admit(
          { hard: quota.spec.hard, used, reservations },
          request.reservation,
          new Date(),
          this.options.reservationTtlMs ?? 30_000,
        );
        if (!result.admitted) return describeExceeded(name, request.tenant, result.exceeded);
        reservations = result.reservations;
        return undefined;
      });
      // Admissions are safe on any copy (the write fails if it is not current); refusals are not.
      if (!fresh && decisions.some((d) => d !== undefined)) return READ_FRESH;
      if (decisions.every((d) => d !== undefined)) return undefined;
      return withReservations(quota.status, reservations);
    });
    return decisions;
  }

  async handle(request: AdmissionRequest): Promise<AdmissionDecision> {
    if (!request.namespace) return allow();
    const growing = request.operation === "UPDATE";
    if (request.subResource && !(growing && request.subResource === "resize")) return allow();
    const tenant = await this.tenantOf(request.namespace);
    if (!tenant) return allow();
    const ref = { group: request.resource.group, resource: request.resource.resource };
    const object = request.object as
      | { metadata?: { name?: string; labels?: Record<string, string> } }
      | undefined;
    const user = object?.metadata?.labels?.[USER_LABEL];
    const quotas = this.options
      .quotasOf(tenant)
      .filter(
        (q) =>
          !q.spec.user || userLabelValue(q.spec.user) === user || q.spec.user === request.userInfo.username,
      )
      .filter((q) => matchesScopes(ref, object, q.spec.scopes, q.spec.scopeSelector));
    // An update reserves only what it adds to the object's usage; a creation all of it.
    const usage = growing
      ? growth(objectUsage(ref, request.oldObject), objectUsage(ref, object))
      : objectUsage(ref, object);
    if (usage.size === 0) return allow();
    const reserved: string[] = [];
    for (const quota of quotas) {
      const name = quota.metadata!.name!;
      const amounts = tracked(usage, toAmounts(quota.spec.hard));
      if (amounts.size === 0) continue;
      const reservation = {
        id: request.uid,
        namespace: request.namespace,
        resource: ref.group ? `${ref.resource}.${ref.group}` : ref.resource,
        name: object?.metadata?.name ?? request.name ?? "",
        amounts: toResourceList(amounts),
      };
      // A dry run is decided as the real request would be, on a fresh read, and writes nothing.
      const refusal = request.dryRun
        ? await this.decideDryRun(name, tenant, reservation)
        : await this.committer.submit(name, { tenant, reservation });
      if (refusal) {
        if (!request.dryRun) await this.release(reserved, request.uid);
        return deny(refusal, 403);
      }
      reserved.push(name);
    }
    return allow();
  }

  /** Shared with the request's other checks (see oncePerRequest). */
  private tenantOf(namespace: string): Promise<string | undefined> {
    return oncePerRequest(tenantOfNamespaceKey(namespace), async () => {
      const cached = this.options.namespaces.get(undefined, namespace);
      const found = cached ?? (await this.options.readNamespace(namespace));
      return found?.metadata?.labels?.[TENANT_LABEL];
    });
  }

  private async decideDryRun(
    name: string,
    tenant: string,
    reservation: Omit<Reservation, "expiresAt">,
  ): Promise<string | undefined> {
    const quota = await this.options.store.get(name);
    const result = admit(
      {
        hard: quota.spec.hard,
        used: quota.status?.used ?? {},
        reservations: quota.status?.reservations ?? [],
      },
      reservation,
      new Date(),
      this.options.reservationTtlMs ?? 30_000,
    );
    return result.admitted ? undefined : describeExceeded(name, tenant, result.exceeded);
  }

  /** Gives back what an earlier quota reserved when a later one refuses. */
  private async release(quotaNames: string[], id: string): Promise<void> {
    for (const name of quotaNames) {
      await this.options.store
        .updateStatus(name, (quota) =>
          withReservations(
            quota.status,
            (quota.status?.reservations ?? []).filter((r) => r.id !== id),
          ),
        )
        .catch(() => {
          // The reservation expires on its own.
        });
    }
  }
}

/** Core resources whose updates can grow quota usage. */
const GROWING_UPDATES = ["pods", "pods/resize", "persistentvolumeclaims", "services"];

/** What `after` uses beyond `before`, per resource; nothing for what shrank or stayed. */
function growth(before: ResourceAmounts, after: ResourceAmounts): ResourceAmounts {
  const grown: ResourceAmounts = new Map();
  for (const [name, value] of after) {
    const added = value - (before.get(name) ?? 0n);
    if (added > 0n) grown.set(name, added);
  }
  return grown;
}

interface QuotaRequest {
  tenant: string;
  reservation: Omit<Reservation, "expiresAt">;
}

/** A quota status with new reservations, and the total they reserve to match. */
function withReservations(
  status: TenantResourceQuota["status"],
  reservations: Reservation[],
): TenantResourceQuota["status"] {
  return { ...status, reservations, reserved: toResourceList(reservedTotal(reservations)) };
}
