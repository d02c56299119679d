/**
 * What a request asks for, worked out the way kube-apiserver's RequestInfoFactory does, so the
 * gateway's decisions (filter, 404, forward as the caller) are about the request the API server
 * will serve.
 */

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export interface GatewayPath {
  /** Tenant named by a `/tenants/{tenant}/` prefix (the Arktos API layer). */
  tenant?: string;
  /** The path the API server gets: the prefix removed, otherwise exactly as sent (still percent-encoded). */
  upstreamPath: string;
  /** Decoded segments of upstreamPath, without leading and trailing empty ones. */
  segments: string[];
}

export type PathResult = { ok: true; path: GatewayPath } | { ok: false; message: string };

/**
 * Splits and checks a request path. Empty, `.` and `..` segments and encoded slashes are refused:
 * servers and proxies disagree about them, and the gateway must decide on the same path the API
 * server serves.
 */
export function parsePath(rawPath: string): PathResult {
  if (!rawPath.startsWith("/")) return { ok: false, message: "the request path must start with /" };
  const raw = rawPath.split("/").slice(1);
  // One trailing slash is harmless (`/api/`); the API server trims it too.
  if (raw[raw.length - 1] === "") raw.pop();
  const segments: string[] = [];
  for (const part of raw) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(part);
    } catch {
      return { ok: false, message: `invalid percent-encoding in path segment "${part}"` };
    }
    if (decoded === "" || decoded === "." || decoded === ".." || decoded.includes("/")) {
      return {
        ok: false,
        message: "the request path must not contain empty, '.' or '..' segments or encoded '/'",
      };
    }
    segments.push(decoded);
  }
  if (segments[0] === "tenants" && segments.length >= 2) {
    const tenant = segments[1]!;
    if (!DNS_LABEL.test(tenant)) return { ok: false, message: `"${tenant}" is not a tenant name` };
    const rest = raw.slice(2);
    return {
      ok: true,
      path: { tenant, upstreamPath: `/${rest.join("/")}`, segments: segments.slice(2) },
    };
  }
  return { ok: true, path: { upstreamPath: rawPath, segments } };
}

export interface ResourceRequest {
  isResource: true;
  /** get, list, watch, create, update, patch, delete, deletecollection, proxy. */
  verb: string;
  apiGroup: string;
  apiVersion: string;
  namespace?: string;
  resource: string;
  name?: string;
  subresource?: string;
  /** The deprecated `/watch/` path prefix was used. */
  legacyWatch: boolean;
}

export interface NonResourceRequest {
  isResource: false;
  verb: string;
}

export type RequestInfo = ResourceRequest | NonResourceRequest;

const NAMESPACE_SUBRESOURCES = new Set(["status", "finalize"]);

/** The API server reads a boolean query parameter as true when present, unless it is "0" or "false" (even when empty). */
export function queryFlag(value: string | null): boolean {
  if (value === null) return false;
  return !(value === "0" || value.toLowerCase() === "false");
}

const METHOD_VERBS: Record<string, string> = {
  GET: "get",
  HEAD: "get",
  POST: "create",
  PUT: "update",
  PATCH: "patch",
  DELETE: "delete",
};

/** kube-apiserver's RequestInfoFactory.NewRequestInfo for the `api` and `apis` prefixes. */
export function requestInfo(method: string, segments: string[], query: URLSearchParams): RequestInfo {
  const nonResource: NonResourceRequest = { isResource: false, verb: method.toLowerCase() };
  if (segments.length < 3 || (segments[0] !== "api" && segments[0] !== "apis")) return nonResource;
  let parts = segments.slice(1);
  let apiGroup = "";
  if (segments[0] === "apis") {
    if (parts.length < 3) return nonResource;
    apiGroup = parts[0]!;
    parts = parts.slice(1);
  }
  const apiVersion = parts[0]!;
  parts = parts.slice(1);
  let verb: string;
  let legacyWatch = false;
  if (parts[0] === "watch" || parts[0] === "proxy") {
    if (parts.length < 2) return nonResource;
    verb = parts[0];
    legacyWatch = verb === "watch";
    parts = parts.slice(1);
  } else {
    verb = METHOD_VERBS[method] ?? "";
  }
  let namespace: string | undefined;
  if (parts[0] === "namespaces" && parts.length > 1) {
    namespace = parts[1];
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2]!)) parts = parts.slice(2);
  }
  const resource = parts[0] ?? "";
  const name = parts.length >= 2 ? parts[1] : undefined;
  const subresource = parts.length >= 3 && verb !== "proxy" ? parts[2] : undefined;
  if (!name && verb === "get") verb = queryFlag(query.get("watch")) ? "watch" : "list";
  if (!name && verb === "delete") verb = "deletecollection";
  return {
    isResource: true,
    verb,
    apiGroup,
    apiVersion,
    ...(namespace !== undefined ? { namespace } : {}),
    resource,
    ...(name !== undefined ? { name } : {}),
    ...(subresource !== undefined ? { subresource } : {}),
    legacyWatch,
  };
}

/** `pods`, `pods/exec`: the resource label of metrics. */
export function resourceLabel(info: RequestInfo): string {
  if (!info.isResource) return "";
  return info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
}
