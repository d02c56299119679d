import type { KubernetesObject, V1Namespace } from "@kubernetes/client-node";
import type { FastifyInstance } from "fastify";
import { EventStream } from "../common/index.js";
import type { Informer } from "../kube/index.js";
import { TENANT_LABEL, type Tenant } from "../tenants/index.js";
import type { DashboardContext, Listener } from "./context.js";

/**
 * Live updates: every informer event the pages show becomes a "change" event for each open page
 * that may see it (and a tenant's change records its usage). Returns what removes the handlers.
 */
export function watchChanges(ctx: DashboardContext): (() => void)[] {
  const { options, multicluster, tenants } = ctx;
  const notify = (kind: string) => ({
    onAdd: () => ctx.broadcast(kind),
    onUpdate: () => ctx.broadcast(kind),
    onDelete: () => ctx.broadcast(kind),
  });
  const usageChanged = (tenant: Tenant) => {
    ctx.recordUsage(tenant);
    ctx.broadcast("tenants", tenant.metadata!.name!);
  };
  const tenantChanged = (name: string | undefined) => {
    const tenant = name ? tenants.tenants.get(undefined, name) : undefined;
    if (tenant) usageChanged(tenant);
  };
  // A tenant's pods move its users' usage, its namespaces' AccessGrants its grants.
  const detailChanged = (obj: KubernetesObject) => {
    const tenant = obj.metadata?.labels?.[TENANT_LABEL] ?? ctx.tenantOfNamespace(obj.metadata?.namespace);
    // Its own kind: the overview (listening for "tenants") need not follow every pod.
    if (tenant) ctx.broadcast("tenant-details", tenant);
  };
  return [
    tenants.tenants.addHandler({
      onAdd: (t) => usageChanged(t),
      onUpdate: (_o, t) => usageChanged(t),
      onDelete: (t) => {
        ctx.history.forget(t.metadata!.name!);
        ctx.broadcast("tenants", t.metadata!.name!);
      },
    }),
    // A tenant's namespaces count against its namespace quota: their events move its usage too.
    tenants.tenantNamespaces.addHandler({
      onAdd: (ns: V1Namespace) => tenantChanged(ns.metadata?.labels?.[TENANT_LABEL]),
      onUpdate: (_old: V1Namespace, ns: V1Namespace) => tenantChanged(ns.metadata?.labels?.[TENANT_LABEL]),
      onDelete: (ns: V1Namespace) => tenantChanged(ns.metadata?.labels?.[TENANT_LABEL]),
    }),
    ...([ctx.pods, options.grants] as unknown as Informer<KubernetesObject>[]).map((informer) =>
      informer.addHandler({
        onAdd: detailChanged,
        onUpdate: (_old, obj) => detailChanged(obj),
        onDelete: detailChanged,
      }),
    ),
    ...(
      [
        [options.clusterRegistry.clusters, "clusters"],
        [multicluster.peerings, "clusters"],
        [multicluster.virtualNodes, "clusters"],
        [multicluster.offloadings, "offloading"],
        [options.nodes.informers.workerNodes, "nodes"],
        [options.cloudInformers.clouds, "clouds"],
        [options.runtimesInformers.runtimes, "runtimes"],
        [ctx.backups, "runtimes"],
        [ctx.restores, "runtimes"],
        [ctx.monitorRules, "alerts"],
      ] as unknown as [Informer<never>, string][]
    ).map(([informer, kind]) => informer.addHandler(notify(kind))),
  ];
}

/** The server-sent events an open page follows: changes arriving together are sent together, at most once per 200 ms. */
export function eventRoutes(app: FastifyInstance, ctx: DashboardContext): void {
  app.get("/api/events", async (request, reply) => {
    const s = ctx.session(request);
    reply.hijack();
    const events = new EventStream(reply.raw, { retryMs: 2000, keepAliveMs: 25_000 });
    let pending = new Map<string, { kind: string; name?: string }>();
    let timer: NodeJS.Timeout | undefined;
    const listener: Listener = {
      session: s,
      send(event) {
        pending.set(`${event.kind}/${event.name ?? ""}`, event);
        timer ??= setTimeout(() => {
          timer = undefined;
          const batch = [...pending.values()];
          pending = new Map();
          if (ctx.sessions.get(s.id)) events.send(batch, "change");
          else events.end();
        }, 200);
      },
      end: () => events.end(),
    };
    ctx.listeners.add(listener);
    events.onEnd(() => {
      ctx.listeners.delete(listener);
      if (timer) clearTimeout(timer);
    });
  });
}
