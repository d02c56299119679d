/**
 * `/hub/api/users/{name}/tokens`: a user's API tokens, as JupyterHub's. A token is issued to its
 * owner only (with their identity token, or a token of theirs holding `tokens`), with the scopes
 * asked for (or its roles' scopes; nothing asked: everything the requesting credential holds),
 * never more than the requesting credential holds.
 */
import type { FastifyInstance } from "fastify";
import type { HubBackend } from "./backend.js";
import { HubError, hubCaller, need, tokenOwner } from "./caller.js";
import { ADMIN_SCOPES, scopesBeyond, tokenScopes } from "./scopes.js";
import type { HubToken } from "./tokens.js";

type Params = { name: string; id?: string };

/** JupyterHub's role names a token may be asked with, as scopes for `user`. */
function roleScopes(role: string, user: string): string[] {
  switch (role) {
    case "user":
      return ["self"];
    case "admin":
      return ADMIN_SCOPES;
    case "token":
      return ["inherit"];
    case "server":
      return [`users:activity!user=${user}`, `access:servers!user=${user}`];
    default:
      throw new HubError(403, `Requested role does not exist: ${role}`);
  }
}

function tokenModel(token: HubToken) {
  return {
    id: token.id,
    kind: token.kind ?? "api_token",
    user: token.owner.username,
    roles: [],
    scopes: token.scopes,
    note: token.note,
    created: token.created,
    expires_at: token.expiresAt,
    last_activity: null,
    session_id: null,
  };
}

export function tokenRoutes(api: FastifyInstance, backend: HubBackend): void {
  api.get("/users/:name/tokens", async (request) => {
    const caller = await hubCaller(request, backend);
    const { name } = request.params as Params;
    need(caller, ["read:tokens"], { user: name });
    return { api_tokens: backend.tokens.list(name).map(tokenModel), oauth_tokens: [] };
  });

  api.get("/users/:name/tokens/:id", async (request) => {
    const caller = await hubCaller(request, backend);
    const { name, id } = request.params as Params;
    need(caller, ["read:tokens"], { user: name });
    const token = backend.tokens.get(name, id!);
    if (!token) throw new HubError(404, `No such token: ${id}`);
    return tokenModel(token);
  });

  api.delete("/users/:name/tokens/:id", async (request, reply) => {
    const caller = await hubCaller(request, backend);
    const { name, id } = request.params as Params;
    need(caller, ["tokens"], { user: name });
    if (!(await backend.tokens.revoke(name, id!))) throw new HubError(404, `No such token: ${id}`);
    return reply.code(204).send();
  });

  api.post("/users/:name/tokens", async (request, reply) => {
    const caller = await hubCaller(request, backend);
    const { name } = request.params as Params;
    need(caller, ["tokens"], { user: name });
    if (name !== caller.user.username) {
      throw new HubError(
        403,
        `tokens are issued to their owner only: ${caller.user.username} may not issue one for ${name}`,
      );
    }
    const body = (request.body ?? {}) as {
      expires_in?: unknown;
      note?: unknown;
      scopes?: unknown;
      roles?: unknown;
    };
    if (typeof body !== "object" || Array.isArray(body))
      throw new HubError(400, "Body must be a JSON dict or empty");
    const list = (value: unknown, field: string): string[] => {
      if (value === undefined || value === null) return [];
      if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
        throw new HubError(400, `${field} must be a list of strings`);
      }
      return value as string[];
    };
    const asked = [
      ...list(body.scopes, "scopes"),
      ...list(body.roles, "roles").flatMap((r) => roleScopes(r, name)),
    ];
    const beyond = scopesBeyond(asked, caller.scopes, name);
    if (beyond.length) {
      throw new HubError(403, `Not assigning requested scopes ${beyond.join(", ")} not held by ${name}`);
    }
    const expires = body.expires_in ?? 0;
    if (typeof expires !== "number" || !Number.isFinite(expires) || expires < 0) {
      throw new HubError(400, "expires_in must be a number of seconds ≥ 0 (0: the longest, a year)");
    }
    if (body.note !== undefined && typeof body.note !== "string")
      throw new HubError(400, "note must be a string");
    const scopes = [...tokenScopes(asked, caller.scopes, name)].sort();
    const { token, record } = await backend.tokens.issue(tokenOwner(caller.user), {
      scopes,
      ...(typeof body.note === "string" ? { note: body.note } : {}),
      expiresInSeconds: expires,
    });
    return reply.code(201).send({ token, ...tokenModel(record) });
  });
}
