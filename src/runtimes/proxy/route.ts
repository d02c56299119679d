/**
 * What the proxy makes of a Runtime object: its route token, whether it may be forwarded to, and
 * where (contract rule 3: `/r/<token><rest>` goes to `<status.endpoint.url><rest>`).
 */
import { findCondition } from "../../kube/index.js";
import type { Runtime } from "../api/runtime.js";

/** Every runtime is served under `/r/<token>/`; every other path is the Admin API's. */
export const ROUTE_PREFIX = "/r/";
/** Paths under a route the proxy answers itself (the start page's progress stream, modules' own pages). */
export const RESERVED_SEGMENT = "/.tenantry/";
/**
 * JupyterHub's hub as a single-user server behind this route sees it: its `JUPYTERHUB_BASE_URL` is
 * the route's base path plus this, so the browser's OAuth authorize request comes under the route,
 * with the route's session cookie (see the proxy's `hubAuthorize`).
 */
export const HUB_SEGMENT = `${RESERVED_SEGMENT}hub/`;

/** `JUPYTERHUB_BASE_URL` of a single-user server at `basePath` (`/r/<token>/`): the hub under its route. */
export const hubBaseUrl = (basePath: string) => `${basePath}${RESERVED_SEGMENT.slice(1)}`;

const TOKEN = /^[A-Za-z0-9_-]{32,128}$/;

export interface RoutePath {
  token: string;
  /** What follows the token: "" or a path starting with `/`, with the query kept. */
  rest: string;
}

/** The token and the rest of a `/r/<token>…` request target; undefined for anything else. */
export function parseRoutePath(url: string): RoutePath | undefined {
  if (!url.startsWith(ROUTE_PREFIX)) return undefined;
  let end = ROUTE_PREFIX.length;
  while (end < url.length) {
    const c = url.charCodeAt(end);
    if (c === 47 /* / */ || c === 63 /* ? */) break;
    end++;
  }
  const token = url.slice(ROUTE_PREFIX.length, end);
  if (!TOKEN.test(token)) return undefined;
  return { token, rest: url.slice(end) };
}

/** Where a runtime's route stands: only `ready` is forwarded. */
export type RouteStatus = "ready" | "starting" | "stopped" | "failed" | "deleting";

export interface RouteTarget {
  /** `http://host:port`: the key of the backend's connection pool. */
  origin: string;
  hostname: string;
  port: number;
  /** The endpoint's path without its trailing slash ("" for a service serving at its root). */
  basePath: string;
}

export interface RouteView {
  /** `namespace/name` of the Runtime: the key of its activity and open connections. */
  key: string;
  namespace: string;
  name: string;
  token: string;
  user: string;
  tenant: string;
  service: string;
  instance: string;
  status: RouteStatus;
  phase: string;
  reason?: string;
  message?: string;
  /** Who besides its user may use it (`spec.access`). */
  access: { users: ReadonlySet<string>; groups: ReadonlySet<string> };
  /** Set when `ready`; absent with `targetError` when the endpoint cannot be used. */
  target?: RouteTarget;
  targetError?: string;
}

const views = new WeakMap<Runtime, RouteView | null>();

/**
 * The route of a Runtime, or undefined when it has no token. Computed once per object the
 * informer holds (a changed runtime is a new object), so the request path only reads fields.
 */
export function routeView(runtime: Runtime): RouteView | undefined {
  const cached = views.get(runtime);
  if (cached !== undefined) return cached ?? undefined;
  const view = computeView(runtime);
  views.set(runtime, view ?? null);
  return view;
}

function computeView(runtime: Runtime): RouteView | undefined {
  const token = runtime.status?.route?.token;
  const namespace = runtime.metadata?.namespace;
  const name = runtime.metadata?.name;
  if (!token || !namespace || !name) return undefined;
  const status = runtime.status;
  const phase = status?.phase ?? "Pending";
  const view: RouteView = {
    key: `${namespace}/${name}`,
    namespace,
    name,
    token,
    user: runtime.spec.user,
    tenant: runtime.spec.tenant,
    service: runtime.spec.service,
    instance: runtime.spec.instance,
    status: routeStatus(runtime),
    access: {
      users: new Set(runtime.spec.access?.users ?? []),
      groups: new Set(runtime.spec.access?.groups ?? []),
    },
    phase: runtime.metadata?.deletionTimestamp ? "Deleting" : phase,
    ...(status?.reason ? { reason: status.reason } : {}),
    ...(status?.message ? { message: status.message } : {}),
  };
  if (view.status === "ready") {
    const parsed = parseEndpoint(status!.endpoint!.url);
    if (typeof parsed === "string") view.targetError = parsed;
    else view.target = parsed;
  }
  return view;
}

function routeStatus(runtime: Runtime): RouteStatus {
  if (runtime.metadata?.deletionTimestamp) return "deleting";
  // A stop invalidates the session at once, even while the pod is still answering.
  if (runtime.spec.desiredState === "Stopped") return "stopped";
  const status = runtime.status;
  if (status?.phase === "Failed") return "failed";
  const ready = findCondition(status?.conditions, "Ready");
  if (status?.phase === "Running" && status.endpoint?.url && (!ready || ready.status === "True")) {
    return "ready";
  }
  return "starting";
}

/** An endpoint URL as a target, or why it cannot be one. */
export function parseEndpoint(url: string): RouteTarget | string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `status.endpoint.url ${JSON.stringify(url)} is not a URL`;
  }
  if (parsed.protocol !== "http:") {
    return `status.endpoint.url ${JSON.stringify(url)}: only http endpoints are served (pod IPs, contract rule 3)`;
  }
  if (parsed.username || parsed.password || parsed.search || parsed.hash) {
    return `status.endpoint.url ${JSON.stringify(url)} may hold only scheme, host, port and path`;
  }
  const port = Number(parsed.port || 80);
  return {
    origin: `http://${parsed.host}`,
    hostname: parsed.hostname.replace(/^\[|\]$/g, ""),
    port,
    basePath: parsed.pathname === "/" ? "" : parsed.pathname.replace(/\/+$/, ""),
  };
}

/** The backend path of `/r/<token><rest>`: the endpoint's path, then the rest (always starting with `/`). */
export function targetPath(target: RouteTarget, rest: string): string {
  const path = target.basePath + rest;
  if (path === "") return "/";
  return path.charCodeAt(0) === 47 ? path : `/${path}`;
}
