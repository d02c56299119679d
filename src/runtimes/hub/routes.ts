/**
 * The JupyterHub REST API (`/hub/api/…`, JupyterHub 6's shapes and status codes) over tenantry's
 * runtimes, served by the Admin API's server beside its own routes, so that what speaks to
 * JupyterHub — jupyterhub-idle-culler, admin scripts, dashboards — speaks to tenantry: users and
 * their named servers (runtimes), server options (a RuntimeService as the profile, the plugin's
 * parameters), `pending`, `ready`, `url`, `last_activity`, the progress event stream, activity
 * reports, and API tokens with scopes. Errors are JupyterHub's `{"status": …, "message": …}`.
 */
import type { FastifyInstance } from "fastify";
import type { HubBackend } from "./backend.js";
import { HubError, hubCaller, need } from "./caller.js";
import { HubContext } from "./context.js";
import { oauthRoutes } from "./oauth-routes.js";
import { lenientJson } from "./request.js";
import { serverRoutes } from "./server-routes.js";
import { tokenRoutes } from "./token-routes.js";
import { userRoutes } from "./user-routes.js";

export const HUB_API_PREFIX = "/hub/api";
/** The JupyterHub API this one follows (clients pick features by it). */
export const HUB_API_VERSION = "6.0.0";

export interface HubRouteOptions {
  /** How long a start or stop waits for the runtime before answering 202 (JupyterHub's slow_spawn_timeout). */
  waitMs?: number;
  /** Where a browser without a session logs in before OAuth authorizes it (`?next=`). */
  loginUrl?: string;
}

type ErrorWithStatus = Error & { statusCode?: number; status?: number; headers?: Record<string, string> };

export function hubRoutes(api: FastifyInstance, backend: HubBackend, options: HubRouteOptions = {}): void {
  lenientJson(api);
  // Single-user servers read the Hub's version off this header at startup (and warn on a mismatch).
  api.addHook("onSend", async (_request, reply) => {
    reply.header("X-JupyterHub-Version", HUB_API_VERSION);
  });
  // Errors of the Admin API's start (limits, plugin checks) come as problems: JupyterHub's shape here.
  api.setErrorHandler((err: ErrorWithStatus, _request, reply) => {
    const status = err instanceof HubError ? err.status : (err.status ?? err.statusCode ?? 500);
    for (const [k, v] of Object.entries(err.headers ?? {})) reply.header(k, v);
    return reply.code(status).type("application/json").send({ status, message: err.message });
  });
  api.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .type("application/json")
      .send({ status: 404, message: `Not Found: ${request.url.split("?")[0]}` }),
  );

  api.get("/", async () => ({ version: HUB_API_VERSION }));
  api.get("/info", async (request) => {
    need(await hubCaller(request, backend), ["read:hub"]);
    return {
      version: HUB_API_VERSION,
      python: null,
      sys_executable: null,
      authenticator: { class: "tenantry identity (the Authenticator)", version: HUB_API_VERSION },
      spawner: { class: "tenantry runtimes (RuntimeServices as profiles)", version: HUB_API_VERSION },
    };
  });

  const hub = new HubContext(backend, options.waitMs ?? 10_000);
  userRoutes(api, hub);
  serverRoutes(api, hub);
  tokenRoutes(api, backend);
  oauthRoutes(api, backend, options.loginUrl ? { loginUrl: options.loginUrl } : {});
}
