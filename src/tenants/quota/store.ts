import { CustomObjectsApi } from "@kubernetes/client-node";
import { type ClusterClient, isConflict } from "../../kube/index.js";
import { TENANTRY_GROUP, TENANTS_VERSION } from "../api/group.js";
import type { TenantResourceQuota } from "../api/tenant-resource-quota.js";

const coordinates = { group: TENANTRY_GROUP, version: TENANTS_VERSION, plural: "tenantresourcequotas" };

/**
 * Reads and writes TenantResourceQuotas straight from the API server (never a cache), and writes
 * status with the resourceVersion it read: a compare-and-swap that fails with 409 if anyone wrote
 * in between, which is what keeps concurrent admissions from overrunning the quota.
 */
export class QuotaStore {
  private readonly api: CustomObjectsApi;

  constructor(client: ClusterClient) {
    this.api = client.kubeConfig.makeApiClient(CustomObjectsApi);
  }

  async get(name: string): Promise<TenantResourceQuota> {
    return (await this.api.getClusterCustomObject({ ...coordinates, name })) as TenantResourceQuota;
  }

  /** Reads, lets `change` compute the new status, writes it back; retries on conflict. */
  async updateStatus(
    name: string,
    change: (quota: TenantResourceQuota) => TenantResourceQuota["status"] | undefined,
    attempts = 50,
  ): Promise<TenantResourceQuota | undefined> {
    for (let attempt = 1; ; attempt++) {
      let quota: TenantResourceQuota;
      try {
        quota = await this.get(name);
      } catch (err) {
        if (!isTransient(err) || attempt >= attempts) throw err;
        continue;
      }
      const status = change(quota);
      if (status === undefined) return undefined;
      try {
        return (await this.api.replaceClusterCustomObjectStatus({
          ...coordinates,
          name,
          body: { ...quota, status },
        })) as TenantResourceQuota;
      } catch (err) {
        if (!(isConflict(err) || isTransient(err)) || attempt >= attempts) throw err;
        // Back off a little with jitter so that racing writers spread out.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, attempt * 5)));
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
