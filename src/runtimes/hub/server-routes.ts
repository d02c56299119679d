/**
 * A user's servers (`/hub/api/users/{name}/server` for the default one, `…/servers/{server}` for
 * named ones): start with server options, stop (or remove), follow a start's progress, report
 * activity — with JupyterHub's status codes: 201 started, 202 still pending, 204 stopped, 400 for
 * what the server's state does not allow.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DNS1123_LABEL } from "../../apis/index.js";
import type { ProgressFormat, StartQuery } from "../admin/schemas.js";
import type { Runtime } from "../api/runtime.js";
import { BY_USER } from "../informers.js";
import type { HubBackend } from "./backend.js";
import { actingFor, type HubCaller, HubError, hubCaller, need } from "./caller.js";
import type { HubContext } from "./context.js";
import { defaultProfile, pendingOf, serverName } from "./models.js";
import { timestamp } from "./request.js";

type ServerParams = { name: string; server?: string };

export function serverRoutes(api: FastifyInstance, hub: HubContext): void {
  const { backend } = hub;
  const target = async (request: FastifyRequest, scope: string) => {
    const caller = await hubCaller(request, backend);
    const { name, server = "" } = request.params as ServerParams;
    need(caller, [scope], { user: name, server });
    return { caller, name, server };
  };

  api.get("/users/:name/servers/:server", async (request) => {
    const { caller, name, server } = await target(request, "read:servers");
    const { runtime, runtimes } = hub.require(caller, name, server);
    const wanted = serverName(runtime, runtimes);
    return hub.servers(request, caller, runtimes).find((s) => s.name === wanted);
  });

  const start = async (request: FastifyRequest, reply: FastifyReply) => {
    const { caller, name, server } = await target(request, "start:servers");
    const acting = actingFor(caller, name);
    const plan = startPlan(hub, request, caller, name, server);
    if (plan === "pending") return reply.code(202).type("text/plain").send("");
    const tenant = acting.delegated ? tenantOf(request, backend, name) : undefined;
    const query: StartQuery = tenant ? { tenant } : {};
    const params = { user: name, service: plan.service, instance: plan.instance };
    const runtime = await backend.start(acting, params, plan.config, query);
    const ready = await hub.waitFor(runtime, (r) => !!r && backend.statusOf(r, request).ready);
    return reply
      .code(ready ? 201 : 202)
      .type("text/plain")
      .send("");
  };
  api.post("/users/:name/server", start);
  api.post("/users/:name/servers/:server", start);

  const stop = async (request: FastifyRequest, reply: FastifyReply) => {
    const { caller, name, server } = await target(request, "delete:servers");
    const acting = actingFor(caller, name);
    const remove = (request.body as { remove?: unknown } | undefined)?.remove === true;
    if (remove && server === "") throw new HubError(400, "Cannot delete the default server");
    const { runtime } = hub.require(caller, name, server);
    const answer = (done: boolean) =>
      reply
        .code(done ? 204 : 202)
        .type("text/plain")
        .send("");
    if (remove) {
      await backend.remove(acting, runtime);
      return answer(await hub.waitFor(runtime, (r) => r === undefined));
    }
    const pending = pendingOf(runtime);
    if (pending === "stop") return answer(false);
    if (runtime.spec.desiredState === "Stopped" && pending === null) return answer(true);
    await backend.stop(acting, runtime);
    return answer(await hub.waitFor(runtime, (r) => r?.status?.phase === "Stopped"));
  };
  api.delete("/users/:name/server", stop);
  api.delete("/users/:name/servers/:server", stop);

  const progress = async (request: FastifyRequest, reply: FastifyReply) => {
    const { caller, name, server } = await target(request, "read:servers");
    const { runtime } = hub.require(caller, name, server);
    const status = backend.statusOf(runtime, request);
    if (!status.ready && pendingOf(runtime) !== "spawn" && status.phase !== "Failed") {
      throw new HubError(400, `${name}'s server '${server}' is not starting...`);
    }
    backend.streamProgress(runtime, request, reply, hubProgressEvent);
    return reply;
  };
  api.get("/users/:name/server/progress", progress);
  api.get("/users/:name/servers/:server/progress", progress);

  api.post("/users/:name/activity", async (request, reply) => {
    const caller = await hubCaller(request, backend);
    const { name } = request.params as { name: string };
    need(caller, ["users:activity"], { user: name });
    for (const [runtime, time] of activityOf(hub, caller, name, request.body)) {
      await backend.writeActivity(runtime, time);
    }
    return reply.code(200).type("application/json").send("");
  });
}

type StartPlan = { service: string; instance: string; config: Record<string, unknown> };

/**
 * What a start runs: an existing server with its options (none given: those of its last start, as
 * JupyterHub reuses them), or a new one of the profile asked for; "pending" when it is starting.
 */
function startPlan(
  hub: HubContext,
  request: FastifyRequest,
  caller: HubCaller,
  name: string,
  server: string,
): StartPlan | "pending" {
  const options = serverRequest(request.body);
  const { resolved } = hub.find(caller, name, server);
  const { profile, ...rest } = options ?? {};
  if (resolved.kind === "found") {
    return existingPlan(hub, request, resolved.runtime, options, `${name}/${server}`);
  }
  const { instance } = resolved;
  if (!new RegExp(DNS1123_LABEL).test(instance) || instance.length > 63) {
    throw new HubError(
      400,
      `server name '${server}': must be a DNS label (lowercase letters, digits, '-'), at most 63`,
    );
  }
  const service = resolved.service ?? profileOf(profile, hub.backend);
  return { service, instance, config: rest };
}

function existingPlan(
  hub: HubContext,
  request: FastifyRequest,
  runtime: Runtime,
  options: Record<string, unknown> | null,
  logName: string,
): StartPlan | "pending" {
  const pending = pendingOf(runtime);
  if (pending === "spawn") return "pending";
  if (pending === "stop") throw new HubError(400, `${logName} is pending stop`);
  if (hub.backend.statusOf(runtime, request).ready) throw new HubError(400, `${logName} is already running`);
  const { profile, ...rest } = options ?? {};
  if (profile !== undefined && profile !== runtime.spec.service) {
    throw new HubError(400, `user_options.profile: ${logName} runs profile ${runtime.spec.service}`);
  }
  const { service, instance } = runtime.spec;
  const config = options === null ? ((runtime.spec.config as Record<string, unknown>) ?? {}) : rest;
  return { service, instance, config };
}

/** JupyterHub's progress events: `{progress, message}`, then `ready` with the server's URL, or `failed`. */
const hubProgressEvent: ProgressFormat = (status, { progress, message }) => {
  const url = status.url ? new URL(status.url).pathname : undefined;
  if (status.ready) {
    return {
      progress: 100,
      ready: true,
      message: `Server ready at ${url}`,
      html_message: `Server ready at <a href="${url}">${url}</a>`,
      url,
      full_url: status.url,
    };
  }
  if (status.phase === "Failed") {
    return { progress: 100, failed: true, message: `Spawn failed: ${status.message ?? status.reason ?? ""}` };
  }
  return { progress, message };
};

/** JupyterHub's start body: `{user_options, display_name}`, or (before 6.0) the options themselves; null: reuse. */
function serverRequest(body: unknown): Record<string, unknown> | null {
  if (body === undefined || body === null || body === "") return null;
  if (typeof body !== "object" || Array.isArray(body)) throw new HubError(400, "Body must be a JSON object");
  const fields = body as Record<string, unknown>;
  if ("display_name" in fields && typeof fields.display_name !== "string") {
    throw new HubError(400, "display_name must be a string");
  }
  if (!("user_options" in fields) && !("display_name" in fields))
    return Object.keys(fields).length ? fields : null;
  const options = fields.user_options ?? null;
  if (options !== null && (typeof options !== "object" || Array.isArray(options))) {
    throw new HubError(400, "user_options must be an object or null");
  }
  return options as Record<string, unknown> | null;
}

/** The RuntimeService a new server runs: the profile named, else the default profile. */
function profileOf(profile: unknown, backend: HubBackend): string {
  const services = backend.services.list();
  const names = services.map((s) => s.metadata!.name!).sort();
  if (profile === undefined) {
    const chosen = defaultProfile(services);
    if (!chosen) {
      throw new HubError(
        400,
        `user_options.profile: name one of the profiles (${names.join(", ")}): no default profile is set`,
      );
    }
    return chosen.metadata!.name!;
  }
  if (typeof profile !== "string" || !names.includes(profile)) {
    throw new HubError(
      400,
      `user_options.profile: ${JSON.stringify(profile)} is not one of ${names.join(", ")}`,
    );
  }
  return profile;
}

/** The tenant a start for another user goes in: the query's, else that of their runtimes. */
function tenantOf(request: FastifyRequest, backend: HubBackend, user: string): string {
  const asked = (request.query as { tenant?: unknown }).tenant;
  if (typeof asked === "string" && asked) return asked;
  const tenant = backend.runtimes.byIndex(BY_USER, user)[0]?.spec.tenant;
  if (!tenant) throw new HubError(400, `tenant: name ${user}'s tenant (?tenant=): they have no runtime yet`);
  return tenant;
}

/** An activity report's servers and times: `{last_activity?, servers: {name: {last_activity}}}`. */
function activityOf(hub: HubContext, caller: HubCaller, name: string, body: unknown): [Runtime, Date][] {
  const report = body as { last_activity?: unknown; servers?: unknown } | undefined;
  if (!report || typeof report !== "object") throw new HubError(400, "body must be a json dict");
  if (!report.last_activity && !report.servers) {
    throw new HubError(400, "body must contain at least one of `last_activity` or `servers`");
  }
  const servers = report.servers ?? {};
  const shape = "servers must be a dict of the form {server_name: {last_activity: timestamp}}";
  if (typeof servers !== "object" || Array.isArray(servers)) throw new HubError(400, shape);
  if (report.last_activity !== undefined) timestamp(report.last_activity, "last_activity");
  return Object.entries(servers as Record<string, unknown>).map(([server, info]) => {
    const { resolved } = hub.find(caller, name, server);
    if (resolved.kind !== "found") throw new HubError(400, `No such server '${server}' for user ${name}`);
    return [resolved.runtime, timestamp((info as { last_activity?: unknown } | null)?.last_activity, shape)];
  });
}
