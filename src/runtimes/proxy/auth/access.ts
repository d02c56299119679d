/**
 * Who may use a runtime through the proxy: its own user (in its tenant), users and groups its
 * `spec.access` names, and holders of a JupyterHub API token whose scopes allow
 * `access:servers` on it (`access:servers!server=<user>/<instance>`, `…!user=<user>`, or all).
 * Decided per request from the Runtime the informer holds, so a changed grant counts at once.
 */
import { allows } from "../../hub/scopes.js";
import type { RouteView } from "../route.js";

export interface Principal {
  username: string;
  tenant?: string;
  /** Groups as kube-apiserver sees them (the tenant's group included). */
  groups: readonly string[];
  /** Set for a JupyterHub API token: what it may do (within its owner's scopes). */
  scopes?: ReadonlySet<string>;
  /** When the credential expires (ms since the epoch), if it does. */
  expiresAt?: number;
}

/** What lets the principal in, or undefined when nothing does. */
export type AccessReason = "owner" | "user grant" | "group grant" | "access:servers";

export function accessOf(principal: Principal, view: RouteView): AccessReason | undefined {
  const owner = principal.username === view.user && principal.tenant === view.tenant;
  if (principal.scopes) {
    // A JupyterHub token holds what its scopes say, its owner's grants only where it may access servers.
    const target = { user: view.user, server: view.instance };
    if (allows(principal.scopes as Set<string>, "access:servers", target)) {
      if (owner) return "owner";
      // The same name in another tenant is another user: only an unnarrowed scope (an admin's) reaches them.
      if (principal.username !== view.user || principal.scopes.has("access:servers")) return "access:servers";
    }
    const mayAccess = allows(principal.scopes as Set<string>, "access:servers", { user: principal.username });
    return mayAccess && !owner ? grantOf(principal, view) : undefined;
  }
  if (owner) return "owner";
  return grantOf(principal, view);
}

function grantOf(principal: Principal, view: RouteView): AccessReason | undefined {
  if (view.access.users.has(principal.username)) return "user grant";
  for (const group of principal.groups) if (view.access.groups.has(group)) return "group grant";
  return undefined;
}
