/**
 * JupyterHub's scopes (jupyterhub/scopes.py), the part its REST API for servers and users uses:
 * a scope names a permission (`servers`, `read:users:activity`, …), may hold others (`servers`
 * holds `read:servers`, `start:servers`, `delete:servers`), and may be narrowed to one user
 * (`servers!user=alice`) or one server (`servers!server=alice/lab`). The `user` role is `self`
 * (a user's own resources), the `admin` role holds everything here; a token holds what it was
 * given, never more than its owner (`inherit`: all of it).
 */

const SUBSCOPES: Readonly<Record<string, readonly string[]>> = {
  "admin:users": ["admin:auth_state", "users", "read:roles:users", "delete:users"],
  users: ["read:users", "list:users", "users:activity"],
  "list:users": ["read:users:name"],
  "read:users": ["read:users:name", "read:users:groups", "read:users:activity"],
  "users:activity": ["read:users:activity"],
  "admin:servers": ["admin:server_state", "servers"],
  servers: ["read:servers", "start:servers", "delete:servers"],
  "read:servers": ["read:users:name"],
  tokens: ["read:tokens"],
  "read:roles": ["read:roles:users", "read:roles:services", "read:roles:groups"],
  shares: ["access:servers", "read:shares", "users:shares", "groups:shares"],
  "users:shares": ["read:users:shares"],
  "groups:shares": ["read:groups:shares"],
};

/** Every scope tenantry knows: a token may ask only for these (and `inherit`). */
export const KNOWN_SCOPES: ReadonlySet<string> = new Set([
  ...Object.keys(SUBSCOPES),
  ...Object.values(SUBSCOPES).flat(),
  "self",
  "access:servers",
  "read:hub",
  "admin-ui",
  "read:metrics",
]);

/** What `self` stands for, for the user `name`. */
const SELF = [
  "read:users",
  "users:shares",
  "read:shares",
  "users:activity",
  "servers",
  "tokens",
  "access:servers",
];

/** The `admin` role's scopes (those of JupyterHub's that mean something here). */
export const ADMIN_SCOPES = [
  "admin-ui",
  "admin:users",
  "admin:servers",
  "tokens",
  "read:hub",
  "access:servers",
  "read:roles",
  "read:metrics",
  "shares",
];

/** A scope and everything it holds, each narrowed as it is. */
export function expandScope(scope: string): string[] {
  const [name, filter] = splitScope(scope);
  const out = new Set<string>();
  const visit = (s: string) => {
    if (out.has(s)) return;
    out.add(s);
    for (const sub of SUBSCOPES[s] ?? []) visit(sub);
  };
  visit(name);
  return [...out].map((s) => (filter ? `${s}!${filter}` : s));
}

/** Every scope a set holds; `self` stands for the user's own resources. */
export function expandScopes(scopes: Iterable<string>, user: string): Set<string> {
  const out = new Set<string>();
  for (const scope of scopes) {
    const [name, filter] = splitScope(scope);
    if (name === "self") {
      for (const own of SELF) for (const s of expandScope(own)) out.add(`${s}!user=${user}`);
    } else if (name !== "inherit") {
      for (const s of expandScope(filter ? `${name}!${filter}` : name)) out.add(s);
    }
  }
  return out;
}

/** The scopes of a user of the `user` role, and of the `admin` role when they hold it. */
export function roleScopes(user: string, admin: boolean): Set<string> {
  return expandScopes(admin ? ["self", ...ADMIN_SCOPES] : ["self"], user);
}

/** A token's scopes: what it asked for (`inherit` or nothing: all its owner's), never more than its owner. */
export function tokenScopes(asked: readonly string[], owner: Set<string>, user: string): Set<string> {
  if (asked.length === 0 || asked.includes("inherit")) return new Set(owner);
  const wanted = expandScopes(asked, user);
  return new Set([...wanted].filter((scope) => covers(owner, scope)));
}

/** The asked scopes a token may not have: unknown ones, or more than its owner holds. */
export function scopesBeyond(asked: readonly string[], owner: Set<string>, user: string): string[] {
  return asked.filter((scope) => {
    if (scope === "inherit") return false;
    if (!KNOWN_SCOPES.has(splitScope(scope)[0])) return true;
    return [...expandScopes([scope], user)].some((s) => !covers(owner, s));
  });
}

/** What a request acts on: a user, and one of their servers. */
export interface ScopeTarget {
  user: string;
  server?: string;
}

/** Whether `held` allows `needed` on `target` (unnarrowed, or narrowed to the target). */
export function allows(held: Set<string>, needed: string, target?: ScopeTarget): boolean {
  if (held.has(needed)) return true;
  if (!target) return false;
  if (held.has(`${needed}!user=${target.user}`)) return true;
  return target.server !== undefined && held.has(`${needed}!server=${target.user}/${target.server}`);
}

/** Whether `held` allows the possibly narrowed `scope` (a user-narrowed scope by the unnarrowed one, …). */
function covers(held: Set<string>, scope: string): boolean {
  if (held.has(scope)) return true;
  const [name, filter] = splitScope(scope);
  if (!filter) return false;
  if (held.has(name)) return true;
  const server = /^server=([^/]+)\//.exec(filter);
  return server !== null && held.has(`${name}!user=${server[1]}`);
}

function splitScope(scope: string): [string, string | undefined] {
  const bang = scope.indexOf("!");
  return bang < 0 ? [scope, undefined] : [scope.slice(0, bang), scope.slice(bang + 1)];
}
