/** `/hub/api/user`, `/users` and `/users/{name}`: users and their servers, as the caller's scopes show them. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type HubCaller, HubError, holdsForAll, hubCaller, need } from "./caller.js";
import type { HubContext } from "./context.js";
import { filterUser } from "./context.js";
import { isActive, type UserModel } from "./models.js";
import { integer, pageUrl, truthy } from "./request.js";

const DEFAULT_PAGE = 50;
const MAX_PAGE = 200;
const PAGINATION_TYPE = "application/jupyterhub-pagination+json";

type UsersQuery = { state?: string; offset?: string; limit?: string; sort?: string };

export function userRoutes(api: FastifyInstance, hub: HubContext): void {
  api.get("/user", async (request) => {
    const caller = await hubCaller(request, hub.backend);
    const name = caller.user.username;
    const model = hub.model(request, caller, name, truthy(request, "include_stopped_servers"));
    return {
      ...model,
      kind: "user",
      name,
      scopes: [...caller.scopes].sort(),
      token_id: caller.tokenId ?? null,
      session_id: null,
    };
  });

  api.get("/users", async (request, reply) => {
    const caller = await hubCaller(request, hub.backend);
    if (![...caller.scopes].some((s) => s === "list:users" || s.startsWith("list:users!"))) {
      need(caller, ["list:users"]);
    }
    return listUsers(hub, request, reply, caller);
  });

  api.get("/users/:name", async (request) => {
    const caller = await hubCaller(request, hub.backend);
    const { name } = request.params as { name: string };
    need(caller, ["read:users", "read:users:name", "read:servers", "read:users:activity"], { user: name });
    const model = hub.model(request, caller, name, truthy(request, "include_stopped_servers"));
    const known = caller.user.username === name || hub.visible(caller, name).length > 0;
    if (!known && !caller.scopes.has("admin:users")) throw new HubError(404, `No such user: ${name}`);
    return model;
  });
}

/** Users with runtimes the caller may list, filtered by state, sorted and paged as JupyterHub does. */
function listUsers(hub: HubContext, request: FastifyRequest, reply: FastifyReply, caller: HubCaller) {
  const everyone = holdsForAll(caller, "list:users");
  const names = [...new Set(hub.backend.runtimes.list().map((r) => r.spec.user))].filter(
    (user) => everyone || caller.scopes.has(`list:users!user=${user}`),
  );
  const query = request.query as UsersQuery;
  const includeStopped = truthy(request, "include_stopped_servers");
  const models = inState(
    names.map((user) => hub.fullModel(request, caller, user, true)),
    query.state,
  ).map((m) => (includeStopped ? m : withoutStopped(m)));
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
}

const serversOf = (m: UserModel) => Object.values(m.servers ?? {});

/** JupyterHub's `state` filter: any server ready, any active (ready or pending), or none active. */
function inState(models: UserModel[], state: string | undefined): UserModel[] {
  switch (state) {
    case undefined:
      return models;
    case "ready":
      return models.filter((m) => serversOf(m).some((s) => s.ready));
    case "active":
      return models.filter((m) => serversOf(m).some(isActive));
    case "inactive":
      return models.filter((m) => !serversOf(m).some(isActive));
    default:
      throw new HubError(400, `Unrecognized state filter: '${state}'`);
  }
}

function withoutStopped(model: UserModel): UserModel {
  if (!model.servers) return model;
  return {
    ...model,
    servers: Object.fromEntries(
      serversOf(model)
        .filter(isActive)
        .map((s) => [s.name, s]),
    ),
  };
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
