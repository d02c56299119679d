import type { FastifyInstance } from "fastify";
import { fetch as undiciFetch } from "undici";
import { kubernetesUserOf, LOGIN_PATH } from "../../identity/index.js";
import type { DashboardContext } from "../context.js";
import { SESSION_COOKIE } from "../sessions.js";

/** Login (through the identity service's own, its throttling included), logout and the session. */
export function sessionRoutes(app: FastifyInstance, ctx: DashboardContext): void {
  const { options, sessions } = ctx;
  app.post("/api/login", async (request, reply) => {
    if (!request.headers["content-type"]?.startsWith("application/json"))
      return ctx.fail(reply, 415, "send the credentials as application/json");
    const body = (request.body ?? {}) as { username?: unknown; password?: unknown };
    if (typeof body.username !== "string" || !body.username)
      return ctx.fail(reply, 400, "username: required", "username");
    if (typeof body.password !== "string" || !body.password)
      return ctx.fail(reply, 400, "password: required", "password");
    // The identity service's own login (its throttling and first-login provisioning included).
    const res = await undiciFetch(`${options.access.url}${LOGIN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": request.ip },
      body: JSON.stringify({ username: body.username, password: body.password }),
      dispatcher: ctx.loginAgent,
    });
    const answer = (await res.json().catch(() => ({}))) as {
      token?: string;
      detail?: string;
      title?: string;
    };
    if (!res.ok || !answer.token)
      return ctx.fail(
        reply,
        res.status >= 400 ? res.status : 502,
        answer.detail ?? answer.title ?? `login failed (HTTP ${res.status})`,
      );
    const authentication = await options.authenticator.authenticate(answer.token);
    if (!authentication.authenticated) return ctx.fail(reply, 401, authentication.reason);
    const created = sessions.create(
      answer.token,
      authentication.identity,
      kubernetesUserOf(authentication.identity),
      options.sessionTtlMs ?? 8 * 3600_000,
    );
    reply.setCookie(SESSION_COOKIE, created.id, {
      httpOnly: true,
      sameSite: "strict",
      secure: false,
      path: "/",
      maxAge: Math.max(1, Math.floor((created.expiresAt - Date.now()) / 1000)),
    });
    return ctx.describeSession(created);
  });

  app.post("/api/logout", async (request, reply) => {
    sessions.delete(ctx.session(request).id);
    reply.clearCookie(SESSION_COOKIE, { path: "/" });
    return { ok: true };
  });

  app.get("/api/session", async (request) => ctx.describeSession(ctx.session(request)));
}
