/**
 * `/hub/api/oauth2/authorize` and `/hub/api/oauth2/token`: how a single-user server's HubOAuth logs
 * a browser in (oauth.ts). Authorize knows the user by their credential (`Authorization: token|bearer`);
 * a browser reaches it under its server's route (the proxy's `.tenantry/hub/`), where the proxy asks it
 * as the route's session. A browser with no credential is sent to tenantry's login when one is
 * configured. Refusals are JupyterHub's (oauthlib's): an unknown client
 * or a redirect URI not the client's is a 400 answered here, never redirected; other problems of an
 * authorize request go back to the redirect URI as `error=`; the token endpoint answers RFC 6749's
 * `{"error": …}` (401 invalid_client, 400 invalid_grant, …).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { HubBackend } from "./backend.js";
import { callerOfToken, credentialOf, type HubCaller, HubError, tokenOwner } from "./caller.js";
import { OAUTH_TOKEN_SECONDS, OAuthError, pkceChallenge } from "./oauth.js";
import { allows } from "./scopes.js";
import type { HubOAuthClient } from "./tokens.js";

type AuthorizeQuery = Record<string, string | undefined>;

export interface OAuthRouteOptions {
  /** Where a browser without a session logs in (`?next=` the authorize URL); without it, 403. */
  loginUrl?: string;
}

/** The registered client of `client_id`: 400, never a redirect, when unknown or its redirect URI differs. */
function clientOf(backend: HubBackend, query: AuthorizeQuery): HubOAuthClient {
  if (!query.client_id) throw new HubError(400, "Missing client_id parameter.");
  const client = backend.tokens.forClient(query.client_id)[0]?.binding?.client;
  if (!client) throw new HubError(400, "Invalid client_id parameter value.");
  if (query.redirect_uri !== undefined && query.redirect_uri !== client.redirectUri) {
    throw new HubError(400, "Mismatching redirect URI.");
  }
  return client;
}

function redirectWith(reply: FastifyReply, uri: string, params: Record<string, string | undefined>) {
  const [path, search = ""] = uri.split("?", 2) as [string, string?];
  const query = new URLSearchParams(search);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.set(k, v);
  return reply.redirect(`${path}?${query}`, 302);
}

/** The user behind the authorize request, or undefined when it carries no credential at all. */
async function authorizingUser(request: FastifyRequest, backend: HubBackend): Promise<HubCaller | undefined> {
  const token = credentialOf(request);
  return token ? callerOfToken(token, backend) : undefined;
}

export function oauthRoutes(api: FastifyInstance, backend: HubBackend, options: OAuthRouteOptions): void {
  api.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string" },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
  );

  api.get("/oauth2/authorize", async (request, reply) => {
    const query = request.query as AuthorizeQuery;
    const client = clientOf(backend, query);
    const fail = (error: string, description: string) =>
      redirectWith(reply, client.redirectUri, { error, error_description: description, state: query.state });
    if (!query.response_type) return fail("invalid_request", "Missing response_type parameter.");
    if (query.response_type !== "code") return fail("unsupported_response_type", "Only code is supported.");
    if (query.code_challenge && (query.code_challenge_method ?? "plain") !== "S256") {
      return fail(
        "invalid_request",
        "Transform algorithm not supported: code_challenge_method must be S256.",
      );
    }
    const caller = await authorizingUser(request, backend);
    if (!caller) {
      if (!options.loginUrl)
        throw new HubError(403, "Missing or invalid credentials: log in to tenantry first.");
      const next = `${request.url}`;
      return reply.redirect(`${options.loginUrl}?next=${encodeURIComponent(next)}`, 302);
    }
    const target = { user: client.user, server: client.server };
    if (!allows(caller.scopes, "access:servers", target)) {
      throw new HubError(
        403,
        `${caller.user.username} may not access server ${client.user}/${client.server} (requires access:servers!server=${client.user}/${client.server})`,
      );
    }
    const code = await backend.oauthCodes.issue({
      clientId: client.id,
      redirectUri: client.redirectUri,
      owner: tokenOwner(caller.user),
      scopes: client.scopes,
      runtimeUid: backend.tokens.forClient(client.id)[0]!.binding!.runtimeUid,
      ...(query.code_challenge ? { codeChallenge: query.code_challenge } : {}),
    });
    return redirectWith(reply, client.redirectUri, { code, state: query.state });
  });

  api.post("/oauth2/token", async (request, reply) => {
    reply.header("Cache-Control", "no-store");
    try {
      return await exchange(request, backend);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      return reply
        .code(err.status)
        .type("application/json")
        .send({ error: err.error, error_description: err.message });
    }
  });
}

type TokenBody = Record<string, string | undefined>;

/** The client's secret: in the body, HTTP Basic, or HubAuth's `Authorization: token` header. */
function clientCredentials(request: FastifyRequest, body: TokenBody): { id?: string; secret?: string } {
  const basic = /^basic\s+(\S+)$/i.exec(request.headers.authorization ?? "")?.[1];
  if (basic) {
    const [id, secret] = Buffer.from(basic, "base64").toString("utf8").split(":", 2);
    return { id: decodeURIComponent(id ?? ""), secret: decodeURIComponent(secret ?? "") };
  }
  return { id: body.client_id, secret: body.client_secret ?? credentialOf(request) };
}

async function exchange(request: FastifyRequest, backend: HubBackend) {
  const body = (request.body ?? {}) as TokenBody;
  if (typeof body !== "object") throw new OAuthError(400, "invalid_request", "Body must be form-encoded.");
  const credentials = clientCredentials(request, body);
  const client = credentials.secret ? backend.tokens.find(credentials.secret)?.binding?.client : undefined;
  if (!client || client.id !== credentials.id) {
    throw new OAuthError(401, "invalid_client", "Client authentication failed.");
  }
  if (body.grant_type !== "authorization_code") {
    throw new OAuthError(400, "unsupported_grant_type", "Only authorization_code is supported.");
  }
  if (!body.code) throw new OAuthError(400, "invalid_request", "Missing code parameter.");
  const code = await backend.oauthCodes.redeem(body.code);
  if (!code || code.clientId !== client.id) {
    throw new OAuthError(400, "invalid_grant", "The code is unknown, expired or already used.");
  }
  if ((body.redirect_uri ?? code.redirectUri) !== code.redirectUri) {
    throw new OAuthError(400, "invalid_request", "Mismatching redirect URI.");
  }
  if (code.codeChallenge) {
    if (!body.code_verifier) throw new OAuthError(400, "invalid_request", "Code verifier required.");
    if (pkceChallenge(body.code_verifier) !== code.codeChallenge) {
      throw new OAuthError(400, "invalid_grant", "The code verifier does not match the challenge.");
    }
  }
  const { token } = await backend.tokens.issue(code.owner, {
    scopes: code.scopes,
    note: `OAuth token for ${client.id}`,
    expiresInSeconds: OAUTH_TOKEN_SECONDS,
    kind: "oauth",
    binding: { runtimeUid: code.runtimeUid },
  });
  return {
    access_token: token,
    token_type: "Bearer",
    expires_in: OAUTH_TOKEN_SECONDS,
    scope: code.scopes.join(" "),
  };
}
