import { existsSync } from "node:fs";
import cookie from "@fastify/cookie";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HttpServer, ProblemError, statusTitle } from "../common/index.js";
import { ActionError, actionErrorOf } from "./actions.js";
import { DashboardContext, type DashboardOptions } from "./context.js";
import { eventRoutes, watchChanges } from "./live.js";
import { cloudRoutes } from "./routes/cloud-routes.js";
import { clusterRoutes } from "./routes/cluster-routes.js";
import { runtimeRoutes } from "./routes/runtime-routes.js";
import { sessionRoutes } from "./routes/session-routes.js";
import { tenantRoutes } from "./routes/tenant-routes.js";
import { CSRF_HEADER, csrfMatches, SESSION_COOKIE, type Session } from "./sessions.js";

export type { DashboardOptions } from "./context.js";

export interface RunningDashboard {
  url: string;
  /** Asks browsers to reconnect elsewhere (a replica going away). */
  drain(): void;
  stop(): Promise<void>;
}

/** Forms and their JSON: small. */
const BODY_LIMIT = 64 * 1024;

const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/**
 * The web dashboard: the built client and a JSON API over tenantry's caches. People log in with
 * tenantry's identity service; reads show what they may see (SubjectAccessReviews as them, the
 * gateway's tenant rule), writes are made with their own token; server-sent events tell open pages
 * what changed, from the informers' events.
 */
export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const ctx = await DashboardContext.create(options);
  const removers = watchChanges(ctx);
  const shell = HttpServer.fastify({
    what: "dashboard",
    host: options.host ?? "127.0.0.1",
    port: options.port ?? 0,
    bodyLimit: BODY_LIMIT,
    logger: options.logger.child({ component: "dashboard" }),
    problems: {
      // Pages are the client's routes (below); /api/* has its own 404.
      ownNotFound: true,
      // Refusals of what a person asked for, passed on with the field they name (Fastify's own have a statusCode).
      translate: (err) => {
        if ((err as { statusCode?: number }).statusCode !== undefined) return undefined;
        const error = actionErrorOf(err);
        return new ProblemError(error.status, statusTitle(error.status), error.message, {
          field: error.field,
        });
      },
    },
    // @fastify/static walks the built assets when registered: on a busy machine that outlasted
    // Fastify's default 10 s and tenantry exited at start.
    fastify: { pluginTimeout: 120_000 },
  });
  const { app } = shell;
  await app.register(cookie);
  guardApi(app, ctx);
  for (const routes of [sessionRoutes, tenantRoutes, clusterRoutes, cloudRoutes, runtimeRoutes, eventRoutes])
    routes(app, ctx);
  app.all("/api/*", async (_request, reply) => ctx.fail(reply, 404, "no such API"));
  await serveClient(app, ctx);

  const url = await shell.listen();
  return {
    url,
    drain: () => shell.drain(),
    async stop() {
      for (const remove of removers) remove();
      for (const listener of ctx.listeners) listener.end();
      await shell.close();
      await ctx.close();
    },
  };
}

/**
 * Every /api request but login needs a session; mutating ones also the session's CSRF token, and
 * a JSON body (a cross-site form cannot send one without the browser asking first). Every answer
 * carries the headers that keep the pages from being framed or sniffed.
 */
function guardApi(app: FastifyInstance, ctx: DashboardContext): void {
  app.addHook("onRequest", async (request, reply) => {
    if (!request.url.startsWith("/api/")) return;
    const mutating = request.method !== "GET" && request.method !== "HEAD";
    const origin = request.headers.origin;
    if (
      mutating &&
      origin &&
      origin !== `http://${request.headers.host}` &&
      origin !== `https://${request.headers.host}`
    )
      return ctx.fail(reply, 403, `requests from origin ${origin} are not accepted`);
    if (request.url === "/api/login") return;
    const session = ctx.sessions.get(request.cookies[SESSION_COOKIE]);
    if (!session) return ctx.fail(reply, 401, "not logged in (or the session expired): log in again");
    if (mutating && !csrfMatches(session, request.headers[CSRF_HEADER]))
      return ctx.fail(reply, 403, `missing or wrong ${CSRF_HEADER} header (reload the page)`);
    (request as FastifyRequest & { session?: Session }).session = session;
  });
  app.addHook("onSend", async (_request, reply) => {
    reply.header("content-security-policy", CONTENT_SECURITY_POLICY);
    reply.header("x-content-type-options", "nosniff");
    reply.header("referrer-policy", "no-referrer");
  });
}

/** The built client; pages are its routes, so every other GET gets the application. */
async function serveClient(app: FastifyInstance, ctx: DashboardContext): Promise<void> {
  const { assetsDir } = ctx.options;
  if (existsSync(`${assetsDir}/index.html`)) {
    await app.register(fastifyStatic, { root: assetsDir, wildcard: false, index: "index.html" });
    app.setNotFoundHandler((request, reply) => {
      if (request.method !== "GET") return ctx.fail(reply, 404, "not found");
      return reply.sendFile("index.html");
    });
  } else {
    app.setNotFoundHandler((_request, reply) =>
      ctx.fail(
        reply,
        503,
        `the dashboard's client is not built (${assetsDir}): run npx tsx scripts/dashboard-build.ts`,
      ),
    );
  }
}

export { ActionError };
