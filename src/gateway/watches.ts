import type { Informer } from "../kube/index.js";
import { type Tenant, tenantRole } from "../tenants/index.js";
import type { Caller } from "./scope.js";

interface OpenWatch {
  caller: Caller;
  /** Tenants the watch was filtered for. */
  scope: Set<string>;
  /** Whether a tenant the caller joins widens the watch (plain paths; a /tenants/{t}/ watch stays on t). */
  followsMembership: boolean;
  close(): void;
}

function member(tenant: Tenant, caller: Caller): boolean {
  return (
    caller.tenant === tenant.metadata?.name ||
    tenantRole(tenant, { username: caller.username, groups: caller.groups }) !== undefined
  );
}

/**
 * The filtered watches open through the gateway. A filter is fixed when a watch starts, so when a
 * tenant it depends on changes its spec (owners, users, node pool, allowed classes) or goes away,
 * or the caller joins another tenant, the watch is closed: the client lists and watches again
 * and gets what it may see now. Status-only updates of a tenant leave watches alone.
 */
export class FilteredWatches {
  private readonly open = new Set<OpenWatch>();
  private readonly unsubscribe: () => void;

  constructor(tenants: Informer<Tenant>) {
    this.unsubscribe = tenants.addHandler({
      onAdd: (tenant) => this.changed(undefined, tenant),
      onUpdate: (before, after) => {
        if (before.metadata?.generation !== after.metadata?.generation) this.changed(before, after);
      },
      onDelete: (tenant) => this.changed(tenant, undefined),
    });
  }

  add(watch: OpenWatch): () => void {
    this.open.add(watch);
    return () => this.open.delete(watch);
  }

  get size(): number {
    return this.open.size;
  }

  private changed(before: Tenant | undefined, after: Tenant | undefined): void {
    const name = (after ?? before)?.metadata?.name ?? "";
    for (const watch of [...this.open]) {
      const joined =
        watch.followsMembership && after && !watch.scope.has(name) && member(after, watch.caller);
      if (watch.scope.has(name) || joined) {
        this.open.delete(watch);
        watch.close();
      }
    }
  }

  stop(): void {
    this.unsubscribe();
    for (const watch of this.open) watch.close();
    this.open.clear();
  }
}
