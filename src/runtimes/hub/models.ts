/**
 * tenantry's runtimes as JupyterHub's models (docs/source/_static/rest-api.yml of JupyterHub):
 * a user's runtimes are their servers. A server's name is its runtime's instance (`""`, the
 * default server, is the instance `default`); when two services of the user have an instance of
 * that name, it is `<service>.<instance>` (a DNS label has no dot). The service a new server runs
 * is the start's `user_options.profile` (KubeSpawner's profiles), else the default profile.
 */

import type { RuntimeStatusBody } from "../admin/schemas.js";
import type { Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";

/** The instance of the default server (`""`). */
export const DEFAULT_INSTANCE = "default";
/** A RuntimeService with this annotation `"true"` is the profile a start without one runs. */
export const DEFAULT_PROFILE_ANNOTATION = "tenantry.dev/default-profile";

/** The server name of a runtime among the user's runtimes. */
export function serverName(runtime: Runtime, userRuntimes: readonly Runtime[]): string {
  const { service, instance } = runtime.spec;
  const clash = userRuntimes.some((r) => r.spec.instance === instance && r.spec.service !== service);
  if (clash) return `${service}.${instance}`;
  return instance === DEFAULT_INSTANCE ? "" : instance;
}

export type Resolved =
  | { kind: "found"; runtime: Runtime }
  | { kind: "none"; instance: string; service?: string }
  | { kind: "ambiguous"; services: string[] };

/** The runtime a server name names among the user's runtimes. */
export function resolveServer(userRuntimes: readonly Runtime[], name: string): Resolved {
  const dot = name.indexOf(".");
  if (dot >= 0) {
    const service = name.slice(0, dot);
    const instance = name.slice(dot + 1);
    const runtime = userRuntimes.find((r) => r.spec.service === service && r.spec.instance === instance);
    return runtime ? { kind: "found", runtime } : { kind: "none", instance, service };
  }
  const instance = name === "" ? DEFAULT_INSTANCE : name;
  const matches = userRuntimes.filter((r) => r.spec.instance === instance);
  if (matches.length === 1) return { kind: "found", runtime: matches[0]! };
  if (matches.length > 1) return { kind: "ambiguous", services: matches.map((r) => r.spec.service).sort() };
  return { kind: "none", instance };
}

/** The profile a start without `profile` runs: the annotated service, else the only one. */
export function defaultProfile(services: readonly RuntimeService[]): RuntimeService | undefined {
  const usable = services.filter((s) => !s.metadata?.deletionTimestamp);
  const marked = usable
    .filter((s) => s.metadata?.annotations?.[DEFAULT_PROFILE_ANNOTATION] === "true")
    .sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  if (marked.length) return marked[0];
  return usable.length === 1 ? usable[0] : undefined;
}

/** JupyterHub's `pending`: a start or stop under way. */
export function pendingOf(runtime: Runtime): "spawn" | "stop" | null {
  const phase = runtime.status?.phase;
  if (runtime.metadata?.deletionTimestamp || phase === "Deleting") return "stop";
  if (runtime.spec.desiredState === "Stopped")
    return phase === "Stopped" || phase === "Failed" ? null : "stop";
  if (phase === "Running" || phase === "Failed") return null;
  return "spawn";
}

export interface ServerModel {
  name: string;
  display_name: string;
  full_name: string;
  last_activity: string | null;
  started: string | null;
  pending: "spawn" | "stop" | null;
  ready: boolean;
  stopped: boolean;
  url: string;
  progress_url: string;
  full_url: string | null;
  full_progress_url: string | null;
  user_options: Record<string, unknown>;
  state?: Record<string, unknown> | null;
}

/** A server's model; `base` is where users reach the proxy (and this API). */
export function serverModel(
  runtime: Runtime,
  status: RuntimeStatusBody,
  name: string,
  base: string,
  withState: boolean,
): ServerModel {
  const user = runtime.spec.user;
  const progressPath = `/hub/api/users/${encodeURIComponent(user)}/${name === "" ? "server" : `servers/${encodeURIComponent(name)}`}/progress`;
  const pending = pendingOf(runtime);
  const ready = status.ready && pending === null;
  const url = status.url ? new URL(status.url).pathname : "";
  return {
    name,
    display_name: name,
    full_name: `${user}/${name}`,
    last_activity: status.lastActivity ?? status.startedAt ?? null,
    started: status.startedAt ?? null,
    pending,
    ready,
    stopped: !ready && pending === null,
    url,
    progress_url: progressPath,
    full_url: status.url ?? null,
    full_progress_url: `${base}${progressPath}`,
    user_options: {
      profile: runtime.spec.service,
      ...((runtime.spec.config as Record<string, unknown>) ?? {}),
    },
    ...(withState
      ? {
          state: {
            namespace: status.namespace,
            name: status.name,
            service: status.service,
            instance: status.instance,
            phase: status.phase,
            ...(status.reason ? { reason: status.reason } : {}),
          },
        }
      : {}),
  };
}

/** Whether a server counts as active (ready or something pending), as `state=active` means. */
export const isActive = (server: ServerModel) => server.ready || server.pending !== null;

const latest = (times: (string | null | undefined)[]) =>
  times.filter((t): t is string => !!t).sort((a, b) => Date.parse(b) - Date.parse(a))[0] ?? null;

export interface UserModel {
  kind: "user";
  name: string;
  admin: boolean;
  roles: string[];
  groups: string[];
  server: string | null;
  pending: "spawn" | "stop" | null;
  created: string | null;
  last_activity: string | null;
  servers?: Record<string, ServerModel>;
  auth_state: null;
}

/** A user's model from their servers (all of them; `includeStopped` keeps the stopped ones). */
export function userModel(
  name: string,
  servers: ServerModel[],
  created: string | null,
  options: { admin: boolean; groups: string[]; includeStopped: boolean; withServers: boolean },
): UserModel {
  const shown = servers.filter((s) => options.includeStopped || isActive(s));
  const main = servers.find((s) => s.name === "");
  return {
    kind: "user",
    name,
    admin: options.admin,
    roles: options.admin ? ["admin", "user"] : ["user"],
    groups: options.groups,
    server: main?.ready ? main.url : null,
    pending: main?.pending ?? null,
    created,
    last_activity: latest(servers.map((s) => s.last_activity)),
    ...(options.withServers ? { servers: Object.fromEntries(shown.map((s) => [s.name, s])) } : {}),
    auth_state: null,
  };
}
