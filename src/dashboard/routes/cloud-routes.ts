import type { FastifyInstance } from "fastify";
import type { DashboardContext } from "../context.js";
import { logicalCloudView } from "../views.js";

/** Logical clouds the person may list, and a cloud's kubeconfig from the DCM API. */
export function cloudRoutes(app: FastifyInstance, ctx: DashboardContext): void {
  app.get("/api/clouds", async (request) => {
    const s = ctx.session(request);
    const clouds = ctx.options.cloudInformers.clouds.list();
    const namespaces = [...new Set(clouds.map((c) => c.metadata!.namespace!))];
    const allowed = new Set<string>();
    for (const namespace of namespaces) {
      const may = await ctx.reviewer.allowed(s.user, {
        verb: "list",
        group: "tenantry.dev",
        resource: "logicalclouds",
        namespace,
      });
      if (may) allowed.add(namespace);
    }
    return {
      items: clouds
        .filter((c) => allowed.has(c.metadata!.namespace!))
        .map((c) => logicalCloudView(c, ctx.projectOf(c.metadata!.namespace!)))
        .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)),
    };
  });

  // `tenantry cloud kubeconfig`: the DCM API's own download, asked with the person's token.
  app.get("/api/clouds/:project/:name/kubeconfig", async (request, reply) => {
    const { project, name } = request.params as { project: string; name: string };
    const { user } = request.query as { user?: string };
    const text = await ctx.dcm.call(
      ctx.session(request).token,
      "GET",
      `/v2/projects/${encodeURIComponent(project)}/logical-clouds/${encodeURIComponent(name)}/kubeconfig${user ? `?user=${encodeURIComponent(user)}` : ""}`,
    );
    return reply
      .type("application/yaml")
      .header("content-disposition", `attachment; filename="${project}-${name}.kubeconfig"`)
      .header("cache-control", "no-store")
      .send(String(text));
  });
}
