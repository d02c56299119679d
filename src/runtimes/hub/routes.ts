/**
 * The JupyterHub REST API (`/hub/api/…`, JupyterHub 6's shapes and status codes) over tenantry's
 * runtimes, served by the Admin API's server beside its own routes, so that what speaks to
 * JupyterHub — jupyterhub-idle-culler, admin scripts, dashboards — speaks to tenantry: users and
 * their named servers (runtimes), server options (a RuntimeService as the profile, the plugin's
 * parameters), `pending`, `ready`, `url`, `last_activity`, the progress event stream, activity
 * reports, and API tokens with scopes. Errors are JupyterHub's `{"status": …, "message": …}`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DNS1123_LABEL } from "../../apis/index.js";
import type { StartQuery } from "../admin/schemas.js";
import type { ProgressFormat } from "../admin/server.js";
import type { Runtime } from "../api/runtime.js";
import { BY_USER } from "../informers.js";
import type { HubBackend } from "./backend.js";
import { actingFor, type HubCaller, HubError, holdsForAll, hubCaller, need } from "./caller.js";
import {
  defaultProfile,
  isActive,
  pendingOf,
  resolveServer,
  serverModel,
  serverName,
  type UserModel,
  userModel,
} from "./models.js";
import { tokenRoutes } from "./token-routes.js";

export const HUB_API_PREFIX = "/hub/api";
/** The JupyterHub API this one follows (clients pick features by it). */
export const HUB_API_VERSION = "6.0.0";
const DEFAULT_PAGE = 50;
const MAX_PAGE = 200;
const PAGINATION_TYPE = "application/jupyterhub-pagination+json";

export interface HubRouteOptions {
  /** How long a start or stop waits for the runtime before answering 202 (JupyterHub's slow_spawn_timeout). */
  waitMs?: number;
}

type UserParams = { name: string };
type ServerParams = { name: string; server?: string };

export function hubRoutes(api: FastifyInstance, backend: HubBackend, options: HubRouteOptions = {}): void {
  const waitMs = options.waitMs ?? 10_000;
  lenientJson(api);
  api.setErrorHandler(
    (
      err: Error & { statusCode?: number; status?: number; headers?: Record<string, string> },
      _request,
      reply,
    ) => {
      const status = err instanceof HubError ? err.status : (err.status ?? err.statusCode ?? 500);
      for (const [k, v] of Object.entries(err.headers ?? {})) reply.header(k, v);
      return reply.code(status).type("application/json").send({ status, message: err.message });
    },
  );
  api.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .type("application/json")
      .send({ status: 404, message: `Not Found: ${request.url.split("?")[0]}` }),
  );

  const visible = (caller: HubCaller, user: string): Runtime[] => {
    const all = backend.runtimes.byIndex(BY_USER, user);
    // Another tenant's runtimes of a same-named user are not theirs to see.
    return caller.user.username === user && !caller.admin
      ? all.filter((r) => r.spec.tenant === caller.user.tenant)
      : all;
  };

  const serversOf = (request: FastifyRequest, caller: HubCaller, runtimes: Runtime[]) => {
    const base = backend.publicBase(request);
    const withState = caller.scopes.has("admin:server_state");
    return runtimes.map((r) =>
      serverModel(r, backend.statusOf(r, request), serverName(r, runtimes), base, withState),
    );
  };

  const fullModel = (request: FastifyRequest, caller: HubCaller, user: string, includeStopped: boolean) => {
    const runtimes = visible(caller, user);
    const created = runtimes
      .map((r) => String(r.metadata?.creationTimestamp ?? ""))
      .filter(Boolean)
      .map((t) => new Date(t).toISOString())
      .sort()[0];
    const self = caller.user.username === user;
    return userModel(user, serversOf(request, caller, runtimes), created ?? null, {
      admin: self && caller.admin,
      groups: self ? caller.user.groups : [],
      includeStopped,
      withServers: true,
    });
  };
  const modelOf = (request: FastifyRequest, caller: HubCaller, user: string, includeStopped: boolean) =>
    filterUser(fullModel(request, caller, user, includeStopped), caller, user);

  api.get("/", async () => ({ version: HUB_API_VERSION }));

  api.get("/info", async (request) => {
    const caller = await hubCaller(request, backend);
    need(caller, ["read:hub"]);
    return {
      version: HUB_API_VERSION,
      python: null,
      sys_executable: null,
      authenticator: { class: "tenantry identity (the Authenticator)", version: HUB_API_VERSION },
      spawner: { class: "tenantry runtimes (RuntimeServices as profiles)", version: HUB_API_VERSION },
    };
  });

  api.get("/user", async (request) => {
    const caller = await hubCaller(request, backend);
    const model = modelOf(request, caller, caller.user.username, truthy(request, "include_stopped_servers"));
    return {
      ...model,
      kind: "user",
      name: caller.user.username,
      scopes: [...caller.scopes].sort(),
      token_id: caller.tokenId ?? null,
      session_id: null,
    };
  });

  api.get("/users", async (request, reply) => {
    const caller = await hubCaller(request, backend);
    if (![...caller.scopes].some((s) => s === "list:users" || s.startsWith("list:users!"))) {
      need(caller, ["list:users"]);
    }
    const everyone = holdsForAll(caller, "list:users");
    const names = [...new Set(backend.runtimes.list().map((r) => r.spec.user))].filter(
      (user) => everyone || caller.scopes.has(`list:users!user=${user}`),
    );
    const query = request.query as { state?: string; offset?: string; limit?: string; sort?: string };
    const includeStopped = truthy(request, "include_stopped_servers");
    let models = names.map((user) => fullModel(request, caller, user, true));
    const servers = (m: UserModel) => Object.values(m.servers ?? {});
    if (query.state === "ready") models = models.filter((m) => servers(m).some((s) => s.ready));
    else if (query.state === "active") models = models.filter((m) => servers(m).some(isActive));
    else if (query.state === "inactive") models = models.filter((m) => !servers(m).some(isActive));
    else if (query.state !== undefined)
      throw new HubError(400, `Unrecognized state filter: '${query.state}'`);
    if (!includeStopped) {
      models = models.map((m) =>
        m.servers
          ? {
              ...m,
              servers: Object.fromEntries(
                servers(m)
                  .filter(isActive)
                  .map((s) => [s.name, s]),
              ),
            }
          : m,
      );
    }
    models.sort(userOrder(query.sort));
    const offset = integer(query.offset, "offset", 0);
    const limit = Math.min(integer(query.limit, "limit", DEFAULT_PAGE), MAX_PAGE);
    const page = models.slice(offset, offset + limit).map((m) => filterUser(m, caller, m.name));
    if (!(request.headers.accept ?? "").includes(PAGINATION_TYPE)) return page;
    const next = offset + limit < models.length ? offset + limit : undefined;
    return reply.send({
      items: page,
      _pagination: {
        offset,
        limit,
        total: models.length,
        next: next === undefined ? null : { offset: next, limit, url: pageUrl(request, next, limit) },
      },
    });
  });

  api.get("/users/:name", async (request) => {
    const caller = await hubCaller(request, backend);
    const { name } = request.params as UserParams;
    need(caller, ["read:users", "read:users:name", "read:servers", "read:users:activity"], { user: name });
    const model = modelOf(request, caller, name, truthy(request, "include_stopped_servers"));
    if (!caller.scopes.has("admin:users") && caller.user.username !== name && !visible(caller, name).length) {
      throw new HubError(404, `No such user: ${name}`);
    }
    return model;
  });

  // --- servers -----------------------------------------------------------------------------------

  const findServer = (caller: HubCaller, user: string, server: string) => {
    const runtimes = visible(caller, user);
    const resolved = resolveServer(runtimes, server);
    if (resolved.kind === "ambiguous") {
      throw new HubError(
        400,
        `server name '${server}' is an instance of ${resolved.services.join(" and ")}: name it <service>.${server}`,
      );
    }
    return { runtimes, resolved };
  };

  const getServer = async (request: FastifyRequest) => {
    const caller = await hubCaller(request, backend);
    const { name, server = "" } = request.params as ServerParams;
    need(caller, ["read:servers"], { user: name, server });
    const { runtimes, resolved } = findServer(caller, name, server);
    if (resolved.kind !== "found") throw new HubError(404, `${name} has no server named '${server}'`);
    return serversOf(request, caller, runtimes).find(
      (s) => s.name === serverName(resolved.runtime, runtimes),
    );
  };
  api.get("/users/:name/servers/:server", getServer);

  const startServer = async (request: FastifyRequest, reply: FastifyReply) => {
    const caller = await hubCaller(request, backend);
    const { name, server = "" } = request.params as ServerParams;
    need(caller, ["start:servers"], { user: name, server });
    const acting = actingFor(caller, name);
    const options = serverRequest(request.body);
    const { resolved } = findServer(caller, name, server);
    const logName = `${name}'s server${server ? ` '${server}'` : ""}`;
    let service: string;
    let instance: string;
    let config: Record<string, unknown>;
    const { profile, ...rest } = options ?? {};
    if (resolved.kind === "found") {
      const runtime = resolved.runtime;
      const pending = pendingOf(runtime);
      if (pending === "spawn") return reply.code(202).type("text/plain").send("");
      if (pending === "stop") throw new HubError(400, `${logName} is pending stop`);
      if (backend.statusOf(runtime, request).ready) throw new HubError(400, `${logName} is already running`);
      if (profile !== undefined && profile !== runtime.spec.service) {
        throw new HubError(400, `user_options.profile: ${logName} runs profile ${runtime.spec.service}`);
      }
      ({ service, instance } = runtime.spec);
      // No options: those of its last start, as JupyterHub reuses them.
      config = options === null ? ((runtime.spec.config as Record<string, unknown>) ?? {}) : rest;
    } else {
      service = resolved.service ?? profileOf(profile, backend);
      instance = resolved.instance;
      if (!new RegExp(DNS1123_LABEL).test(instance) || instance.length > 63) {
        throw new HubError(
          400,
          `server name '${server}': must be a DNS label (lowercase letters, digits, '-')`,
        );
      }
      config = rest;
    }
    const tenant = acting.delegated ? tenantOf(request, backend, name) : undefined;
    const query: StartQuery = tenant ? { tenant } : {};
    const runtime = await backend.start(acting, { user: name, service, instance }, config, query);
    const ready = await waitFor(backend, runtime, (r) => !!r && backend.statusOf(r, request).ready, waitMs);
    return reply
      .code(ready ? 201 : 202)
      .type("text/plain")
      .send("");
  };
  api.post("/users/:name/server", startServer);
  api.post("/users/:name/servers/:server", startServer);

  const stopServer = async (request: FastifyRequest, reply: FastifyReply) => {
    const caller = await hubCaller(request, backend);
    const { name, server = "" } = request.params as ServerParams;
    need(caller, ["delete:servers"], { user: name, server });
    const acting = actingFor(caller, name);
    const remove = (request.body as { remove?: unknown } | undefined)?.remove === true;
    if (remove && server === "") throw new HubError(400, "Cannot delete the default server");
    const { resolved } = findServer(caller, name, server);
    if (resolved.kind !== "found") throw new HubError(404, `${name} has no server named '${server}'`);
    const runtime = resolved.runtime;
    if (remove) {
      await backend.remove(acting, runtime);
      const gone = await waitFor(backend, runtime, (r) => r === undefined, waitMs);
      return reply
        .code(gone ? 204 : 202)
        .type("text/plain")
        .send("");
    }
    const pending = pendingOf(runtime);
    if (pending === "stop") return reply.code(202).type("text/plain").send("");
    if (runtime.spec.desiredState === "Stopped" && pending === null) return reply.code(204).send();
    await backend.stop(acting, runtime);
    const stopped = await waitFor(backend, runtime, (r) => r?.status?.phase === "Stopped", waitMs);
    return reply
      .code(stopped ? 204 : 202)
      .type("text/plain")
      .send("");
  };
  api.delete("/users/:name/server", stopServer);
  api.delete("/users/:name/servers/:server", stopServer);

  const progress = async (request: FastifyRequest, reply: FastifyReply) => {
    const caller = await hubCaller(request, backend);
    const { name, server = "" } = request.params as ServerParams;
    need(caller, ["read:servers"], { user: name, server });
    const { resolved } = findServer(caller, name, server);
    if (resolved.kind !== "found") throw new HubError(404, `${name} has no server named '${server}'`);
    const runtime = resolved.runtime;
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
    const { name } = request.params as UserParams;
    need(caller, ["users:activity"], { user: name });
    const body = request.body as { last_activity?: unknown; servers?: unknown } | undefined;
    if (!body || typeof body !== "object") throw new HubError(400, "body must be a json dict");
    if (!body.last_activity && !body.servers) {
      throw new HubError(400, "body must contain at least one of `last_activity` or `servers`");
    }
    const servers = body.servers ?? {};
    const shape = "servers must be a dict of the form {server_name: {last_activity: timestamp}}";
    if (typeof servers !== "object" || Array.isArray(servers)) throw new HubError(400, shape);
    const updates: [Runtime, Date][] = [];
    for (const [server, info] of Object.entries(servers as Record<string, unknown>)) {
      const { resolved } = findServer(caller, name, server);
      if (resolved.kind !== "found") throw new HubError(400, `No such server '${server}' for user ${name}`);
      const time = timestamp((info as { last_activity?: unknown } | null)?.last_activity, shape);
      updates.push([resolved.runtime, time]);
    }
    if (body.last_activity !== undefined) timestamp(body.last_activity, "last_activity");
    for (const [runtime, time] of updates) await backend.writeActivity(runtime, time);
    return reply.code(200).type("application/json").send("");
  });

  tokenRoutes(api, backend);
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

/** Resolves once `ready` holds for the runtime as the cache shows it (undefined: gone), or false after `ms`. */
function waitFor(
  backend: HubBackend,
  runtime: Runtime,
  ready: (current: Runtime | undefined) => boolean,
  ms: number,
): Promise<boolean> {
  const { namespace, name } = runtime.metadata as { namespace: string; name: string };
  const current = () => backend.runtimes.get(namespace, name);
  if (ready(current())) return Promise.resolve(true);
  return new Promise((resolve) => {
    const check = () => {
      if (!ready(current())) return;
      finish(true);
    };
    const remove = backend.runtimes.addHandler({ onAdd: check, onUpdate: check, onDelete: check });
    const timer = setTimeout(() => finish(false), ms);
    function finish(value: boolean) {
      clearTimeout(timer);
      remove();
      resolve(value);
    }
  });
}

/** A user's model as the caller's scopes allow (JupyterHub's access map). */
function filterUser(model: UserModel, caller: HubCaller, user: string): Partial<UserModel> {
  const has = (scope: string) => caller.scopes.has(scope) || caller.scopes.has(`${scope}!user=${user}`);
  const keys = new Set<string>();
  const grant = (scope: string, fields: string[]) => {
    if (has(scope)) for (const f of fields) keys.add(f);
  };
  grant("read:users", [
    "kind",
    "name",
    "admin",
    "roles",
    "groups",
    "server",
    "pending",
    "created",
    "last_activity",
  ]);
  grant("read:users:name", ["kind", "name", "admin"]);
  grant("read:users:groups", ["kind", "name", "groups"]);
  grant("read:users:activity", ["kind", "name", "last_activity"]);
  grant("read:servers", ["kind", "name", "servers"]);
  grant("read:roles:users", ["kind", "name", "roles", "admin"]);
  grant("admin:auth_state", ["kind", "name", "auth_state"]);
  let servers = model.servers;
  if (servers && !has("read:servers")) {
    // Servers narrowed one by one (`read:servers!server=alice/lab`).
    const own = Object.entries(servers).filter(([name]) =>
      caller.scopes.has(`read:servers!server=${user}/${name}`),
    );
    if (own.length) {
      servers = Object.fromEntries(own);
      keys.add("servers");
    }
  }
  const picked = Object.fromEntries(Object.entries({ ...model, servers }).filter(([k]) => keys.has(k)));
  return picked as Partial<UserModel>;
}

function userOrder(sort: string | undefined): (a: UserModel, b: UserModel) => number {
  const key = (sort ?? "name").replace(/^-/, "");
  const sign = sort?.startsWith("-") ? -1 : 1;
  if (key === "last_activity") {
    return (a, b) => sign * (Date.parse(a.last_activity ?? "0") - Date.parse(b.last_activity ?? "0"));
  }
  if (key !== "name" && key !== "id")
    throw new HubError(400, `sort: ${sort} is not one of id, name, last_activity`);
  return (a, b) => sign * a.name.localeCompare(b.name);
}

function integer(value: string | undefined, field: string, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new HubError(400, `${field}: ${value} is not a whole number ≥ 0`);
  return field === "limit" && n === 0 ? fallback : n;
}

function truthy(request: FastifyRequest, name: string): boolean {
  const value = (request.query as Record<string, unknown>)[name];
  return value !== undefined && value !== "false" && value !== "0";
}

function pageUrl(request: FastifyRequest, offset: number, limit: number): string {
  const url = new URL(request.url, `${request.protocol}://${request.headers.host ?? request.host}`);
  url.searchParams.set("offset", String(offset));
  url.searchParams.set("limit", String(limit));
  return url.toString();
}

function timestamp(value: unknown, message: string): Date {
  const time = typeof value === "string" ? new Date(value) : undefined;
  if (!time || !Number.isFinite(time.getTime())) throw new HubError(400, `Not a valid timestamp: ${message}`);
  return new Date(Math.min(time.getTime(), Date.now()));
}

/** JSON bodies as JupyterHub's clients send them: empty, without a content type, or as text. */
function lenientJson(api: FastifyInstance): void {
  api.removeAllContentTypeParsers();
  api.addContentTypeParser("*", { parseAs: "string" }, (_request, body, done) => {
    const text = String(body).trim();
    if (!text) return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new HubError(400, "Body must be valid JSON"), undefined);
    }
  });
}
