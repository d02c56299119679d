/**
 * A runtime's `spec.access` as JupyterHub's shares: each user it names, and each member of a group it
 * names, holds `access:servers!server=<owner>/<server>` on it, as a JupyterHub share grants. So the
 * Hub's OAuth authorize gives a granted user a code for the owner's single-user server, and the
 * token that code becomes keeps that scope while the grant stands (a token never holds more than
 * its owner holds now: taking the grant back takes the scope from every token at once).
 */
import type { Informer } from "../../kube/index.js";
import type { Runtime } from "../api/runtime.js";
import { BY_USER } from "../informers.js";
import { serverName } from "./models.js";

const BY_GRANTEE = "runtimes/hub-grantee";

const grantees = (runtime: Runtime): string[] => [
  ...(runtime.spec?.access?.users ?? []).map((user) => `user:${user}`),
  ...(runtime.spec?.access?.groups ?? []).map((group) => `group:${group}`),
];

/** The `access:servers` scopes that the runtimes shared with `username` (or one of `groups`) grant them. */
export function shareScopes(
  runtimes: Informer<Runtime>,
  username: string,
  groups: readonly string[],
): string[] {
  runtimes.ensureIndex(BY_GRANTEE, grantees);
  const shared = new Set(runtimes.byIndex(BY_GRANTEE, `user:${username}`));
  for (const group of groups)
    for (const runtime of runtimes.byIndex(BY_GRANTEE, `group:${group}`)) shared.add(runtime);
  const scopes: string[] = [];
  for (const runtime of shared) {
    const owner = runtime.spec.user;
    if (owner === username) continue;
    const server = serverName(runtime, runtimes.byIndex(BY_USER, owner));
    scopes.push(`access:servers!server=${owner}/${server}`);
  }
  return scopes;
}
