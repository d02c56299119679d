/**
 * Who calls the JupyterHub REST API, and with which scopes: a token of this API (its scopes,
 * within what its owner holds now), or a token of tenantry's identity providers (the `user` role,
 * and the `admin` role for those holding the delegation permission). Credentials come as JupyterHub
 * clients send them: `Authorization: token …` or `Bearer …`, or `?token=`.
 */
import type { FastifyRequest } from "fastify";
import { PROVIDER_EXTRA_KEY } from "../../identity/index.js";
import type { UserCaller } from "../admin/callers.js";
import type { Acting } from "../admin/route-context.js";
import type { HubBackend } from "./backend.js";
import { allows, roleScopes, type ScopeTarget, tokenScopes } from "./scopes.js";
import { shareScopes } from "./shares.js";
import { HUB_TOKEN_PREFIX, type HubTokenOwner } from "./tokens.js";

/** An error the JupyterHub API answers as `{"status": …, "message": …}`. */
export class HubError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export interface HubCaller {
  user: UserCaller;
  scopes: Set<string>;
  admin: boolean;
  /** The API token the request came with, if it was one of this API's. */
  tokenId?: string;
}

const CREDENTIAL = /^(?:token|bearer)\s+(\S+)\s*$/i;

export function credentialOf(request: FastifyRequest): string | undefined {
  const header = CREDENTIAL.exec(request.headers.authorization ?? "")?.[1];
  if (header) return header;
  const query = (request.query as { token?: unknown } | undefined)?.token;
  return typeof query === "string" && query ? query : undefined;
}

export function callerOfOwner(owner: HubTokenOwner): UserCaller {
  return {
    kind: "user",
    username: owner.username,
    ...(owner.uid ? { uid: owner.uid } : {}),
    groups: owner.groups,
    extra: owner.extra ?? {},
    ...(owner.tenant ? { tenant: owner.tenant } : {}),
  };
}

/** Whom a token issued to `user` belongs to (the identity provider that vouched for them included). */
export function tokenOwner(user: UserCaller): HubTokenOwner {
  return {
    username: user.username,
    ...(user.uid ? { uid: user.uid } : {}),
    groups: user.groups,
    ...(Object.keys(user.extra).length ? { extra: user.extra } : {}),
    ...(user.tenant ? { tenant: user.tenant } : {}),
    ...(user.extra[PROVIDER_EXTRA_KEY]?.[0] ? { provider: user.extra[PROVIDER_EXTRA_KEY][0] } : {}),
  };
}

export async function hubCaller(request: FastifyRequest, backend: HubBackend): Promise<HubCaller> {
  const token = credentialOf(request);
  if (!token) throw new HubError(403, "Missing or invalid credentials.");
  return callerOfToken(token, backend);
}

/** Who holds `token` (one of this API's, or of tenantry's identity providers), with their scopes. */
export async function callerOfToken(token: string, backend: HubBackend): Promise<HubCaller> {
  if (token.startsWith(HUB_TOKEN_PREFIX)) {
    const record = backend.tokens.find(token);
    if (!record) throw new HubError(403, "Invalid or expired token.");
    const user = callerOfOwner(record.owner);
    const admin = await backend.isAdmin(user);
    const scopes = tokenScopes(record.scopes, userScopes(backend, user, admin), user.username);
    return { user, scopes, admin, tokenId: record.id };
  }
  const result = await backend.authenticate(token);
  if (!result.ok) throw new HubError(result.status === 503 ? 503 : 403, result.detail);
  if (result.caller.kind !== "user") {
    throw new HubError(403, "a runtime's agent has no access to the JupyterHub API");
  }
  const admin = await backend.isAdmin(result.caller);
  return { user: result.caller, scopes: userScopes(backend, result.caller, admin), admin };
}

/** What a user holds now: their roles' scopes, and access to the servers shared with them (`spec.access`). */
function userScopes(backend: HubBackend, user: UserCaller, admin: boolean): Set<string> {
  const scopes = roleScopes(user.username, admin);
  for (const scope of shareScopes(backend.runtimes, user.username, user.groups)) scopes.add(scope);
  return scopes;
}

/** Throws JupyterHub's 403 unless the caller holds one of `scopes` on `target`. */
export function need(caller: HubCaller, scopes: string[], target?: ScopeTarget): void {
  if (scopes.some((scope) => allows(caller.scopes, scope, target))) return;
  throw new HubError(
    403,
    `Action is not authorized with current scopes; requires any of [${scopes.join(", ")}]`,
  );
}

/** Whether the caller holds `scope` on every user (not only narrowed to some). */
export const holdsForAll = (caller: HubCaller, scope: string) => caller.scopes.has(scope);

/** The caller acting on `user`'s servers: themselves in their tenant, or for another (their scopes allowed it). */
export function actingFor(caller: HubCaller, user: string): Acting {
  if (caller.user.username !== user) return { caller: caller.user, delegated: true };
  if (!caller.user.tenant) throw new HubError(403, `${user} belongs to no tenant: runtimes run in a tenant`);
  return { caller: caller.user, delegated: false };
}
