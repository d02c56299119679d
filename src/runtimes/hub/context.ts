/**
 * What the JupyterHub API's routes share: the backend, and a user's runtimes as the caller may
 * see them — as servers, in a user's model cut to the caller's scopes (JupyterHub's access map).
 */
import type { FastifyRequest } from "fastify";
import type { Runtime } from "../api/runtime.js";
import { BY_USER } from "../informers.js";
import type { HubBackend } from "./backend.js";
import { type HubCaller, HubError } from "./caller.js";
import {
  type Resolved,
  resolveServer,
  type ServerModel,
  serverModel,
  serverName,
  type UserModel,
  userModel,
} from "./models.js";

export class HubContext {
  constructor(
    readonly backend: HubBackend,
    /** How long a start or stop waits for the runtime before answering 202. */
    readonly waitMs: number,
  ) {}

  /** The user's runtimes the caller may see: a user those of their own tenant, an admin all. */
  visible(caller: HubCaller, user: string): Runtime[] {
    const all = this.backend.runtimes.byIndex(BY_USER, user);
    // Another tenant's runtimes of a same-named user are not theirs to see.
    return caller.user.username === user && !caller.admin
      ? all.filter((r) => r.spec.tenant === caller.user.tenant)
      : all;
  }

  servers(request: FastifyRequest, caller: HubCaller, runtimes: Runtime[]): ServerModel[] {
    const base = this.backend.publicBase(request);
    const withState = caller.scopes.has("admin:server_state");
    return runtimes.map((r) =>
      serverModel(r, this.backend.statusOf(r, request), serverName(r, runtimes), base, withState),
    );
  }

  /** The user's whole model, before the caller's scopes cut it. */
  fullModel(request: FastifyRequest, caller: HubCaller, user: string, includeStopped: boolean): UserModel {
    const runtimes = this.visible(caller, user);
    const created = runtimes
      .map((r) => String(r.metadata?.creationTimestamp ?? ""))
      .filter(Boolean)
      .map((t) => new Date(t).toISOString())
      .sort()[0];
    const self = caller.user.username === user;
    return userModel(user, this.servers(request, caller, runtimes), created ?? null, {
      admin: self && caller.admin,
      groups: self ? caller.user.groups : [],
      includeStopped,
      withServers: true,
    });
  }

  model(request: FastifyRequest, caller: HubCaller, user: string, includeStopped: boolean) {
    return filterUser(this.fullModel(request, caller, user, includeStopped), caller, user);
  }

  /** The runtime a server name names, as far as the caller sees; a 400 when it names two. */
  find(
    caller: HubCaller,
    user: string,
    server: string,
  ): { runtimes: Runtime[]; resolved: Exclude<Resolved, { kind: "ambiguous" }> } {
    const runtimes = this.visible(caller, user);
    const resolved = resolveServer(runtimes, server);
    if (resolved.kind === "ambiguous") {
      throw new HubError(
        400,
        `server name '${server}' is an instance of ${resolved.services.join(" and ")}: name it <service>.${server}`,
      );
    }
    return { runtimes, resolved };
  }

  /** The server's runtime, or JupyterHub's 404. */
  require(caller: HubCaller, user: string, server: string): { runtime: Runtime; runtimes: Runtime[] } {
    const { runtimes, resolved } = this.find(caller, user, server);
    if (resolved.kind !== "found") throw new HubError(404, `${user} has no server named '${server}'`);
    return { runtime: resolved.runtime, runtimes };
  }

  /** Resolves once `done` holds for the runtime as the cache shows it (undefined: gone), or false after waitMs. */
  waitFor(runtime: Runtime, done: (current: Runtime | undefined) => boolean): Promise<boolean> {
    const { namespace, name } = runtime.metadata as { namespace: string; name: string };
    const informer = this.backend.runtimes;
    const current = () => informer.get(namespace, name);
    if (done(current())) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = () => {
        if (done(current())) finish(true);
      };
      const remove = informer.addHandler({ onAdd: check, onUpdate: check, onDelete: check });
      const timer = setTimeout(() => finish(false), this.waitMs);
      function finish(value: boolean) {
        clearTimeout(timer);
        remove();
        resolve(value);
      }
    });
  }
}

/** Which of a user's fields each scope shows. */
const FIELDS_OF: [string, (keyof UserModel)[]][] = [
  [
    "read:users",
    ["kind", "name", "admin", "roles", "groups", "server", "pending", "created", "last_activity"],
  ],
  ["read:users:name", ["kind", "name", "admin"]],
  ["read:users:groups", ["kind", "name", "groups"]],
  ["read:users:activity", ["kind", "name", "last_activity"]],
  ["read:servers", ["kind", "name", "servers"]],
  ["read:roles:users", ["kind", "name", "roles", "admin"]],
  ["admin:auth_state", ["kind", "name", "auth_state"]],
];

/** A user's model as the caller's scopes allow. */
export function filterUser(model: UserModel, caller: HubCaller, user: string): Partial<UserModel> {
  const has = (scope: string) => caller.scopes.has(scope) || caller.scopes.has(`${scope}!user=${user}`);
  const keys = new Set<string>(FIELDS_OF.filter(([scope]) => has(scope)).flatMap(([, fields]) => fields));
  let servers = model.servers;
  if (servers && !has("read:servers")) {
    // Servers narrowed one by one (`read:servers!server=alice/lab`).
    const own = Object.entries(servers).filter(([name]) =>
      caller.scopes.has(`read:servers!server=${user}/${name}`),
    );
    if (own.length) {
      servers = Object.fromEntries(own);
      keys.add("kind").add("name").add("servers");
    }
  }
  const picked = Object.fromEntries(Object.entries({ ...model, servers }).filter(([k]) => keys.has(k)));
  return picked as Partial<UserModel>;
}
