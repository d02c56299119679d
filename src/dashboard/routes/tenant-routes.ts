import type { FastifyInstance } from "fastify";
import { ActionError } from "../actions.js";
import { BY_TENANT, type DashboardContext, pageQuery } from "../context.js";
import {
  accessGrantView,
  alertsOf,
  clusterView,
  monitorAlerts,
  tenantDetail,
  tenantPage,
  userUsage,
} from "../views.js";

/** The overview, and a tenant's page with what its owners do there (namespaces, owners, grants). */
export function tenantRoutes(app: FastifyInstance, ctx: DashboardContext): void {
  const { options, actions, reviewer } = ctx;
  app.get("/api/overview", async (request) => {
    const s = ctx.session(request);
    const tenants = await ctx.visibleTenants(s);
    const seesAll = await reviewer.seesAllTenants(s.user);
    const seesClusters = await reviewer.allowed(s.user, {
      verb: "list",
      group: "tenantry.dev",
      resource: "clusters",
    });
    const clusters = seesClusters ? options.clusterRegistry.list() : [];
    const nodes = await ctx.visibleNodes(s, tenants);
    const names = new Set(tenants.map((t) => t.metadata!.name!));
    return {
      tenants: tenantPage(tenants, pageQuery(request.query), (tenant) => ctx.ownerNamespacesOf(tenant)),
      clusters: seesClusters ? clusters.map(clusterView) : null,
      alerts: [
        ...alertsOf({ tenants, clusters, nodes }),
        ...monitorAlerts(ctx.monitorRules.list(), seesAll, (tenant) => names.has(tenant)),
      ],
    };
  });

  app.post("/api/tenants", async (request, reply) =>
    reply
      .code(201)
      .send(await actions.createTenant(ctx.session(request).token, (request.body ?? {}) as object)),
  );

  app.get("/api/tenants/:name", async (request, reply) => {
    const s = ctx.session(request);
    const { name } = request.params as { name: string };
    const tenant = await ctx.seesTenant(s, name);
    if (!tenant) return ctx.fail(reply, 404, `tenant "${name}" not found`);
    const namespaces = ctx.tenants.namespacesOf(name);
    const inTenant = new Set(namespaces.map((n) => n.metadata!.name!));
    return tenantDetail({
      tenant,
      namespaces,
      query: pageQuery(request.query),
      history: ctx.history.of(name),
      usage: userUsage(ctx.pods.byIndex(BY_TENANT, name)),
      grants: options.grants
        .list()
        .filter((g) => inTenant.has(g.metadata!.namespace!))
        .map(accessGrantView)
        .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)),
    });
  });

  app.post("/api/tenants/:name/namespaces", async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!(await ctx.seesTenant(ctx.session(request), name)))
      return ctx.fail(reply, 404, `tenant "${name}" not found`);
    return reply
      .code(201)
      .send(await actions.createNamespace(ctx.session(request).token, name, (request.body ?? {}) as object));
  });

  app.post("/api/tenants/:name/owners", async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!(await ctx.seesTenant(ctx.session(request), name)))
      return ctx.fail(reply, 404, `tenant "${name}" not found`);
    await actions.addOwner(ctx.session(request).token, name, (request.body ?? {}) as object);
    return { ok: true };
  });

  app.post("/api/tenants/:name/grants", async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!(await ctx.seesTenant(ctx.session(request), name)))
      return ctx.fail(reply, 404, `tenant "${name}" not found`);
    const body = (request.body ?? {}) as { namespace?: unknown };
    if (
      typeof body.namespace === "string" &&
      body.namespace &&
      ctx.tenantOfNamespace(body.namespace) !== name
    )
      throw new ActionError(
        400,
        `metadata.namespace: "${body.namespace}" is not a namespace of tenant "${name}"`,
        "metadata.namespace",
      );
    return reply.code(201).send(await actions.grantAccess(ctx.session(request).token, body));
  });

  app.delete("/api/tenants/:name/grants/:namespace/:grant", async (request, reply) => {
    const { name, namespace, grant } = request.params as { name: string; namespace: string; grant: string };
    if (!(await ctx.seesTenant(ctx.session(request), name)) || ctx.tenantOfNamespace(namespace) !== name)
      return ctx.fail(reply, 404, `no AccessGrant "${grant}" in a namespace of tenant "${name}"`);
    await actions.revokeGrant(ctx.session(request).token, namespace, grant);
    return { ok: true };
  });
}
