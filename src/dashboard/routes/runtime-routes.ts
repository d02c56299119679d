import type { FastifyInstance } from "fastify";
import { ON_BEHALF_OF_HEADER } from "../../runtimes/index.js";
import { ActionError } from "../actions.js";
import type { DashboardContext } from "../context.js";
import type { RuntimesAnswer } from "../model.js";

/** Runtimes through the Admin API as the person; backups and restores as objects made as the person. */
export function runtimeRoutes(app: FastifyInstance, ctx: DashboardContext): void {
  const { runtimes } = ctx;
  app.get("/api/runtimes", async (request): Promise<RuntimesAnswer> => {
    const items = await ctx.runtimesOf(ctx.session(request));
    return {
      items,
      backups: Object.fromEntries(items.map((r) => [`${r.namespace}/${r.name}`, ctx.backupsOf(r)])),
      services: ctx.options.runtimesInformers.services
        .list()
        .map((r) => r.metadata!.name!)
        .sort(),
    };
  });

  app.post("/api/runtimes", async (request) => {
    const s = ctx.session(request);
    const body = (request.body ?? {}) as { service?: unknown; instance?: unknown };
    for (const field of ["service", "instance"] as const) {
      if (typeof body[field] !== "string" || !body[field])
        throw new ActionError(400, `${field}: required`, field);
    }
    return runtimes.call(
      s.token,
      "POST",
      `/services/${encodeURIComponent(s.user.username)}/${encodeURIComponent(String(body.service))}/${encodeURIComponent(String(body.instance))}`,
      {},
    );
  });

  app.post("/api/runtimes/:user/:service/:instance/:action", async (request, reply) => {
    const s = ctx.session(request);
    const { user, service, instance, action } = request.params as {
      user: string;
      service: string;
      instance: string;
      action: string;
    };
    const path = `/services/${encodeURIComponent(user)}/${encodeURIComponent(service)}/${encodeURIComponent(instance)}`;
    // Another user's runtime (an operator's page): the Admin API's delegation, which it checks.
    const onBehalf: Record<string, string> = user === s.user.username ? {} : { [ON_BEHALF_OF_HEADER]: user };
    if (action === "start") return runtimes.call(s.token, "POST", path, {}, onBehalf);
    if (action === "stop") return runtimes.call(s.token, "DELETE", `${path}/stop`, undefined, onBehalf);
    if (action === "delete") return runtimes.call(s.token, "DELETE", path, undefined, onBehalf);
    if (action !== "backup" && action !== "restore")
      return ctx.fail(reply, 404, `no action "${action}": start, stop, delete, backup or restore`);
    // Backups are Kubernetes objects beside the Runtime, made as the person (as `tenantry runtime
    // backup` does with the person's kubeconfig): only of a runtime the Admin API shows them.
    const runtime = (await ctx.runtimesOf(s)).find(
      (r) => r.user === user && r.service === service && r.instance === instance,
    );
    if (!runtime) return ctx.fail(reply, 404, `runtime ${service}/${instance} of ${user} not found`);
    if (action === "backup") return reply.code(201).send(await ctx.actions.backUp(s.token, runtime));
    const body = (request.body ?? {}) as { backup?: unknown };
    if (typeof body.backup !== "string" || !ctx.backupsOf(runtime).some((b) => b.name === body.backup))
      throw new ActionError(400, `backup: not a backup of ${service}/${instance}`, "backup");
    return reply.code(201).send(await ctx.actions.restore(s.token, runtime.namespace, body.backup));
  });
}
