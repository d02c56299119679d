import { setTimeout as sleep } from "node:timers/promises";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { type ClusterClient, isConflict } from "../../kube/index.js";
import { TENANTRY_GROUP, TENANTS_VERSION } from "../api/group.js";
import type { TenantResourceQuota } from "../api/tenant-resource-quota.js";

const coordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenantresourcequotas" };

/** What a status change may answer: the status to write, nothing to write, or "decide again on a fresh read". */
export const READ_FRESH = Symbol("read fresh");
export type StatusChange = (
  quota: TenantResourceQuota,
  /** Whether `quota` was just read from the API server, rather than the copy this store last wrote. */
  fresh: boolean,
) => TenantResourceQuota["status"] | undefined | typeof READ_FRESH;

/**
 * Writes TenantResourceQuota status as a compare-and-swap: with the resourceVersion of the copy the
 * change was decided on, so the write fails with 409 if anyone wrote in between. That is what keeps
 * concurrent admissions from overrunning the quota. The change starts from the copy this store last
 * wrote (saving a read per write while it is the only writer, the common case) and from a fresh
 * read after a conflict; a change that refuses something asks for a fresh read first, so a refusal
 * is never based on an old copy.
 */
export class QuotaStore {
  private readonly api: CustomObjectsApi;
  /** The copy of each quota as this store last wrote or read it. */
  private readonly latest = new Map<string, TenantResourceQuota>();

  constructor(client: ClusterClient) {
    this.api = client.kubeConfig.makeApiClient(CustomObjectsApi);
  }

  async get(name: string): Promise<TenantResourceQuota> {
    const quota = (await this.api.getClusterCustomObject({ ...coordinates, name })) as TenantResourceQuota;
    this.latest.set(name, quota);
    return quota;
  }

  /** Forgets the copies of quotas that are gone. */
  forget(name: string): void {
    this.latest.delete(name);
  }

  /**
   * Lets `change` compute the new status and writes it back; on conflict, reads and decides again.
   * `cached` (an informer's copy) is the starting point when this store has written none yet.
   */
  async updateStatus(
    name: string,
    change: StatusChange,
    cached?: TenantResourceQuota,
    attempts = 50,
  ): Promise<TenantResourceQuota | undefined> {
    let quota = this.latest.get(name) ?? cached;
    let fresh = false;
    for (let attempt = 1; ; attempt++) {
      if (!quota) {
        try {
          quota = await this.get(name);
          fresh = true;
        } catch (err) {
          if (!isTransient(err) || attempt >= attempts) throw err;
          continue;
        }
      }
      const status = change(quota, fresh);
      if (status === READ_FRESH) {
        if (fresh) throw new Error(`quota ${name}: a change asked for a fresh read of a fresh copy`);
        quota = undefined;
        continue;
      }
      if (status === undefined) return undefined;
      try {
        // Without managedFields the API server keeps its own, and has less to read and check.
        const { managedFields: _managedFields, ...metadata } = quota.metadata ?? {};
        const written = (await this.api.replaceClusterCustomObjectStatus({
          ...coordinates,
          name,
          body: { ...quota, metadata, status },
        })) as TenantResourceQuota;
        this.latest.set(name, written);
        return written;
      } catch (err) {
        if (!(isConflict(err) || isTransient(err)) || attempt >= attempts) throw err;
        this.latest.delete(name);
        quota = undefined;
        // Back off a little with jitter so that racing writers spread out.
        if (attempt > 1) await sleep(Math.random() * Math.min(50, attempt * 5));
      }
    }
  }
}

/**
 * A kept-alive connection the API server closed just as it was reused: the request never reached
 * it (or its answer was lost), and both the read and the compare-and-swap are safe to repeat.
 */
function isTransient(err: unknown): boolean {
  return /Premature close|ECONNRESET|socket hang up|EPIPE/.test(String((err as Error)?.message ?? err));
}
