import type { FastifyInstance } from "fastify";
import { type DashboardContext, pageQuery } from "../context.js";
import type { ClustersAnswer } from "../model.js";
import { clusterView, offloadingView, pageOf, peeringView, workerNodeView } from "../views.js";

/** Clusters and peerings, offloaded namespaces, and worker nodes. */
export function clusterRoutes(app: FastifyInstance, ctx: DashboardContext): void {
  const { options, reviewer, multicluster } = ctx;
  app.get("/api/clusters", async (request, reply): Promise<ClustersAnswer> => {
    const s = ctx.session(request);
    const [seesRegistry, seesPeerings] = await Promise.all(
      ["clusters", "peerings"].map((resource) =>
        reviewer.allowed(s.user, { verb: "list", group: "tenantry.dev", resource }),
      ),
    );
    if (!seesRegistry && !seesPeerings)
      return ctx.fail(
        reply,
        403,
        "you may list neither the cluster registry (clusters.tenantry.dev) nor peerings",
      );
    return {
      items: seesRegistry ? options.clusterRegistry.list().map(clusterView) : null,
      peerings: seesPeerings
        ? multicluster.peerings
            .list()
            .map((p) =>
              peeringView(
                p,
                p.status?.virtualNode
                  ? multicluster.virtualNodes.get(undefined, p.status.virtualNode)
                  : undefined,
              ),
            )
            .sort((a, b) => a.name.localeCompare(b.name))
        : null,
    };
  });

  app.get("/api/offloading", async (request) => {
    const scope = await ctx.tenantScope(ctx.session(request));
    const visible = multicluster.offloadings.list().flatMap((o) => {
      const tenant = ctx.tenantOfNamespace(o.metadata!.namespace!) ?? "";
      return scope.all || scope.names.has(tenant) ? [{ offloading: o, tenant }] : [];
    });
    return pageOf(
      visible,
      (v) => v.offloading.metadata!.namespace!,
      pageQuery(request.query),
      (v) => offloadingView(v.offloading, v.tenant),
    );
  });

  app.get("/api/nodes", async (request) => {
    const nodes = await ctx.visibleNodes(ctx.session(request));
    return {
      items: nodes.map(workerNodeView).sort((a, b) => a.name.localeCompare(b.name)),
      providers: options.nodes.informers.providers.list().map((p) => ({
        name: p.metadata!.name!,
        flavors: (p.status?.flavors ?? []).map((f) => f.name),
      })),
    };
  });

  app.post("/api/nodes", async (request, reply) =>
    reply
      .code(201)
      .send(await ctx.actions.requestNode(ctx.session(request).token, (request.body ?? {}) as object)),
  );
}
