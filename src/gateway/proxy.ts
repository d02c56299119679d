import type {
  ClientRequest,
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
  ServerResponse,
} from "node:http";
import { type Agent, request as httpsRequest } from "node:https";
import { pipeline } from "node:stream";
import type { TLSSocket } from "node:tls";
import type { Logger } from "pino";
import { connectionListed, HOP_BY_HOP_HEADERS } from "../common/index.js";
import type { TenantInformers } from "../tenants/index.js";
import { TENANT_LABEL, type Tenant } from "../tenants/index.js";
import type { CallerAuthenticator } from "./authentication.js";
import { filterList, objectVisible, WatchFilter, watchFilterStream } from "./filter.js";
import type { GatewayMetrics } from "./metrics.js";
import type { KeyedTokenBuckets } from "./rate-limit.js";
import { parsePath, queryFlag, type RequestInfo, requestInfo, resourceLabel } from "./request-info.js";
import {
  type Caller,
  callerIsClusterAdmin,
  type FilteredKind,
  filteredKind,
  type Memberships,
  NAMESPACES,
  namespaceSelector,
  type ObjectLike,
} from "./scope.js";
import {
  badRequest,
  forbidden,
  notFound,
  type Status,
  sendStatus,
  serviceUnavailable,
  status,
  tooManyRequests,
  unauthorized,
} from "./status.js";
import type { Upstream } from "./upstream.js";
import type { FilteredWatches } from "./watches.js";

/** Headers about one connection, or set by the gateway itself (Host): never forwarded in either direction. */
function isHopByHop(name: string, listed: Set<string> | undefined): boolean {
  return HOP_BY_HOP_HEADERS.has(name) || name === "host" || (listed?.has(name) ?? false);
}

/** Caller headers the API server would read as credentials or as someone else's identity. */
function isCredentialHeader(name: string): boolean {
  return name === "authorization" || name.startsWith("impersonate-") || name.startsWith("x-remote-");
}

/** How a request is answered. */
export type Plan =
  | { kind: "refuse"; status: Status; headers?: Record<string, string> }
  | {
      kind: "forward";
      /** Forward with the caller impersonated, or read with the gateway's own identity and filter. */
      as: "caller" | "gateway";
      /** Path and query sent to the API server. */
      path: string;
      /** The path and query as the caller sent them (prefix removed), for forwarding as the caller. */
      callerPath: string;
      /** For gateway reads: the one request header set this plan decides (Accept). */
      accept?: string;
      /** stream: pass through; list/get/watch: check what comes back. */
      response: "stream" | "list" | "get" | "watch";
      visible?: (object: ObjectLike) => boolean;
      keepRowObjects?: boolean;
      /** The answer when the object exists but may not be seen. */
      missing?: Status;
      /** A filtered watch: closed when the tenants it was filtered for change. */
      scope?: { tenants: Set<string>; followsMembership: boolean };
    };

type ForwardPlan = Extract<Plan, { kind: "forward" }>;

/** What is known about a request once it is planned, for metrics and logs. */
export interface RequestContext {
  caller?: Caller;
  tenant: string;
  verb: string;
  resource: string;
  /** Watches, followed logs and upgraded connections: not timed. */
  longRunning: boolean;
}

export interface ProxyOptions {
  upstream: Upstream;
  informers: TenantInformers;
  authenticate: CallerAuthenticator;
  buckets: KeyedTokenBuckets;
  metrics: GatewayMetrics;
  watches: FilteredWatches;
  memberships: Memberships;
  logger: Logger;
  /** Reads a namespace the cache does not have yet (created a moment ago), with the gateway's identity. */
  readNamespaceTenant(name: string): Promise<string | undefined>;
}

const JSON_ONLY = "application/json";

/** Keeps the JSON media types of an Accept header (Table, PartialObjectMetadata, plain): the gateway reads those. */
function jsonAccept(accept: string | undefined): string {
  const json = (accept ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part.startsWith("application/json"));
  return json.length ? json.join(",") : JSON_ONLY;
}

function resourcePath(
  basePath: string,
  info: Extract<RequestInfo, { isResource: true }>,
  name?: string,
): string {
  const prefix = info.apiGroup ? `/apis/${info.apiGroup}/${info.apiVersion}` : `/api/${info.apiVersion}`;
  return `${basePath}${prefix}/${info.resource}${name !== undefined ? `/${encodeURIComponent(name)}` : ""}`;
}

/**
 * The tenant gateway's request handling: authenticate, decide (refuse, forward as the caller, or
 * read with the gateway's identity and filter), then stream the answer back.
 */
export class GatewayProxy {
  constructor(private readonly options: ProxyOptions) {}

  /** Plans a request; shared by plain requests and upgraded connections. */
  async plan(
    method: string,
    rawUrl: string,
    headers: IncomingHttpHeaders,
    socket: TLSSocket,
    context: RequestContext,
  ): Promise<Plan> {
    const queryAt = rawUrl.indexOf("?");
    const rawPath = queryAt >= 0 ? rawUrl.slice(0, queryAt) : rawUrl;
    const rawQuery = queryAt >= 0 ? rawUrl.slice(queryAt + 1) : "";
    const parsed = parsePath(rawPath);
    if (!parsed.ok) return { kind: "refuse", status: badRequest(parsed.message) };
    const path = parsed.path;
    const query = new URLSearchParams(rawQuery);
    const info = requestInfo(method, path.segments, query);
    context.verb = info.verb;
    context.resource = resourceLabel(info);
    context.longRunning =
      info.verb === "watch" ||
      (info.isResource && info.subresource === "log" && queryFlag(query.get("follow")));

    for (const name of Object.keys(headers)) {
      if (name.startsWith("impersonate-")) {
        return {
          kind: "refuse",
          status: forbidden(`the gateway impersonates callers itself: the ${name} header is not allowed`),
        };
      }
    }
    const authentication = await this.options.authenticate.authenticate(socket, headers);
    if (!authentication.ok) return { kind: "refuse", status: unauthorized(authentication.message) };
    const caller = authentication.caller;
    context.caller = caller;
    const admin = callerIsClusterAdmin(caller);
    const tenants = this.options.memberships.of(caller);
    const tenantNames = new Set(tenants.map((t) => t.metadata!.name!));

    let pathTenant: Tenant | undefined;
    if (path.tenant) {
      pathTenant = this.options.informers.tenants.get(undefined, path.tenant);
      if (!pathTenant || !(admin || tenantNames.has(path.tenant))) {
        return {
          kind: "refuse",
          status: status(404, "NotFound", `tenant "${path.tenant}" not found`, {
            name: path.tenant,
            group: "tenantry.dev",
            kind: "tenants",
          }),
        };
      }
    }

    const namespace = info.isResource ? info.namespace : undefined;
    const cachedNamespaceTenant = namespace
      ? this.options.informers.tenantNamespaces.get(undefined, namespace)?.metadata?.labels?.[TENANT_LABEL]
      : undefined;
    context.tenant =
      path.tenant ??
      (cachedNamespaceTenant && tenantNames.has(cachedNamespaceTenant) ? cachedNamespaceTenant : undefined) ??
      (caller.tenant && tenantNames.has(caller.tenant) ? caller.tenant : undefined) ??
      tenants[0]?.metadata?.name ??
      "";

    if (!admin) {
      const waitMs = this.options.buckets.take(context.tenant || `user:${caller.username}`);
      if (waitMs > 0) {
        this.options.metrics.rateLimited.inc({ tenant: context.tenant });
        const seconds = Math.max(1, Math.ceil(waitMs / 1000));
        return {
          kind: "refuse",
          status: tooManyRequests(seconds, context.tenant || undefined),
          headers: { "Retry-After": String(seconds) },
        };
      }
    }

    const scope = pathTenant ? [pathTenant] : tenants;
    const scopeNames = pathTenant ? new Set([path.tenant!]) : tenantNames;
    const inScope = async (ns: string) => {
      const cached = this.options.informers.tenantNamespaces.get(undefined, ns)?.metadata?.labels?.[
        TENANT_LABEL
      ];
      return scopeNames.has(cached ?? (await this.options.readNamespaceTenant(ns)) ?? "");
    };

    // Under /tenants/{t}/ a namespace of another tenant (or of none) does not exist.
    if (pathTenant && namespace !== undefined && !(await inScope(namespace))) {
      return { kind: "refuse", status: notFound("namespaces", namespace) };
    }

    const callerPath = `${this.options.upstream.basePath}${path.upstreamPath}${rawQuery ? `?${rawQuery}` : ""}`;
    const forwardAsCaller: Plan = {
      kind: "forward",
      as: "caller",
      path: callerPath,
      callerPath,
      response: "stream",
    };
    if (!info.isResource) return forwardAsCaller;
    const kind = filteredKind(info);
    // Cluster administrators see everything on plain paths; callers in no tenant get what RBAC gives them.
    const filtered = kind && (pathTenant || (!admin && scope.length > 0));
    if (!kind || !filtered) return forwardAsCaller;

    const readsOne = info.verb === "get" && info.name !== undefined && !info.subresource && !info.legacyWatch;
    const readsMany = info.verb === "list" || info.verb === "watch";
    if (!readsOne && !readsMany) {
      // Changing (or reading a subresource of) a namespace outside the caller's tenants: it does not exist for them.
      if (kind === NAMESPACES && info.name !== undefined && !(await inScope(info.name))) {
        return { kind: "refuse", status: notFound("namespaces", info.name) };
      }
      return forwardAsCaller;
    }
    return this.filteredRead(kind, info, query, headers, scope, caller, !!pathTenant, callerPath);
  }

  private filteredRead(
    kind: FilteredKind,
    info: Extract<RequestInfo, { isResource: true }>,
    query: URLSearchParams,
    headers: IncomingHttpHeaders,
    scope: Tenant[],
    caller: Caller,
    tenantPath: boolean,
    callerPath: string,
  ): Plan {
    for (const key of new Set(query.keys())) {
      if (query.getAll(key).length > 1) {
        return { kind: "refuse", status: badRequest(`query parameter ${key} is given more than once`) };
      }
    }
    const basePath = this.options.upstream.basePath;
    const visible = kind.visible(scope, caller);
    const accept = headers.accept;
    const missing = notFound(kind.resource, info.name ?? "", kind.group);
    const params = new URLSearchParams(query);
    params.delete("watch");

    if (info.verb === "get") {
      const asTable = (accept ?? "").includes("as=Table");
      if (asTable) params.set("includeObject", "Metadata");
      return {
        kind: "forward",
        as: "gateway",
        callerPath,
        path: `${resourcePath(basePath, info, info.name)}${params.size ? `?${params}` : ""}`,
        accept: jsonAccept(accept),
        response: "get",
        visible,
        missing,
      };
    }

    const watch = info.verb === "watch";
    if (watch) params.set("watch", "1");
    if (info.legacyWatch && info.name !== undefined) {
      // `/watch/{resource}/{name}` watches one object: the same as a field selector on its name.
      const own = `metadata.name=${info.name}`;
      const caller = params.get("fieldSelector");
      params.set("fieldSelector", caller ? `${own},${caller}` : own);
    }
    const watchScope = watch
      ? { tenants: new Set(scope.map((t) => t.metadata!.name!)), followsMembership: !tenantPath }
      : undefined;

    if (kind === NAMESPACES) {
      // The API server filters namespaces by label, for lists, Tables and watches alike.
      params.set("labelSelector", namespaceSelector(scope, query.get("labelSelector")));
      return {
        kind: "forward",
        as: "gateway",
        callerPath,
        path: `${resourcePath(basePath, info)}?${params}`,
        ...(accept ? { accept } : {}),
        response: "stream",
        ...(watchScope ? { scope: watchScope } : {}),
      };
    }
    const callerIncludeObject = params.get("includeObject");
    if ((accept ?? "").includes("as=Table")) params.set("includeObject", "Metadata");
    return {
      kind: "forward",
      as: "gateway",
      callerPath,
      path: `${resourcePath(basePath, info)}${params.size ? `?${params}` : ""}`,
      accept: jsonAccept(accept),
      response: watch ? "watch" : "list",
      visible,
      keepRowObjects: callerIncludeObject !== "None",
      ...(watchScope ? { scope: watchScope } : {}),
    };
  }

  /** Headers for the API server: the caller's own (minus credentials) when impersonating, only Accept otherwise. */
  async upstreamHeaders(
    plan: ForwardPlan,
    caller: Caller,
    headers: IncomingHttpHeaders,
    remoteAddress: string | undefined,
  ): Promise<{ headers: OutgoingHttpHeaders; agent: Agent }> {
    const credentials = await this.options.upstream.current();
    const out: OutgoingHttpHeaders = {};
    if (plan.as === "caller") {
      const listed = connectionListed(headers.connection);
      for (const [name, value] of Object.entries(headers)) {
        if (value === undefined || isHopByHop(name, listed) || isCredentialHeader(name)) continue;
        out[name] = value;
      }
      Object.assign(out, impersonationHeaders(caller));
    } else {
      out.accept = plan.accept ?? JSON_ONLY;
      if (plan.response === "stream" && headers["accept-encoding"])
        out["accept-encoding"] = headers["accept-encoding"];
      if (headers["user-agent"]) out["user-agent"] = headers["user-agent"];
    }
    const forwardedFor = headers["x-forwarded-for"];
    out["x-forwarded-for"] = [forwardedFor, remoteAddress].filter(Boolean).join(", ");
    out.host = this.options.upstream.authority;
    if (credentials.authorization) out.authorization = credentials.authorization;
    return { headers: out, agent: credentials.agent };
  }

  /** Answers one HTTP request (not an upgrade). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const context: RequestContext = {
      tenant: "",
      verb: (req.method ?? "").toLowerCase(),
      resource: "",
      longRunning: false,
    };
    let code = 0;
    const done = () => {
      const labels = { tenant: context.tenant, verb: context.verb, resource: context.resource };
      this.options.metrics.requests.inc({ ...labels, code: String(code || res.statusCode) });
      if (!context.longRunning) {
        this.options.metrics.duration.observe(
          { tenant: context.tenant, verb: context.verb },
          (performance.now() - started) / 1000,
        );
      }
    };
    res.once("close", done);
    let plan: Plan;
    try {
      plan = await this.plan(
        req.method ?? "GET",
        req.url ?? "/",
        req.headers,
        req.socket as TLSSocket,
        context,
      );
    } catch (err) {
      this.options.logger.error({ err, url: req.url }, "gateway could not decide on a request");
      code = 503;
      sendStatus(
        res,
        serviceUnavailable(`the gateway could not check the request: ${(err as Error).message}`),
      );
      return;
    }
    if (plan.kind === "refuse") {
      code = plan.status.code;
      req.resume();
      sendStatus(res, plan.status, plan.headers);
      return;
    }
    await this.forward(plan, req, res, context);
  }

  private async forward(
    plan: ForwardPlan,
    req: IncomingMessage,
    res: ServerResponse,
    context: RequestContext,
  ): Promise<void> {
    const caller = context.caller!;
    const upstreamRequest = await this.upstreamHeaders(plan, caller, req.headers, req.socket.remoteAddress);
    new ForwardedRequest(this.options, plan, req, res, context, caller, upstreamRequest).start();
  }
}

/**
 * One request on its way to the API server and back: sent (once more when a kept-alive connection
 * turns out closed), and its answer relayed as it comes, or checked against what the caller may see.
 */
class ForwardedRequest {
  private readonly method: string;
  private readonly replayable: boolean;
  /** The API server's answer was read to its end: nothing is left to stop when the caller goes. */
  private answered = false;
  private outgoing!: ClientRequest;
  private stopTracking: (() => void) | undefined;

  constructor(
    private readonly options: ProxyOptions,
    private readonly plan: ForwardPlan,
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly context: RequestContext,
    private readonly caller: Caller,
    private readonly upstreamRequest: { headers: OutgoingHttpHeaders; agent: Agent },
  ) {
    this.method = plan.as === "caller" ? (req.method ?? "GET") : "GET";
    // A request without a body can be sent again when a kept-alive connection turns out closed.
    this.replayable = this.method === "GET" || this.method === "HEAD";
  }

  start(): void {
    this.res.once("close", () => {
      // The caller went away (or the watch was closed): stop reading from the API server too.
      if (!this.answered) this.outgoing.destroy();
      this.stopTracking?.();
    });
    if (this.replayable) this.req.resume();
    this.send(this.replayable);
  }

  private send(retry: boolean): void {
    const upstream = this.options.upstream;
    this.outgoing = httpsRequest({
      host: upstream.host,
      port: upstream.port,
      method: this.method,
      path: this.plan.path,
      headers: this.upstreamRequest.headers,
      agent: this.upstreamRequest.agent,
    });
    const sent = this.outgoing;
    sent.on("error", (err: NodeJS.ErrnoException) => this.sendFailed(sent, retry, err));
    sent.on("response", (answer) => this.relay(answer));
    if (this.replayable) sent.end();
    else {
      pipeline(this.req, sent, (err) => {
        if (err) sent.destroy();
      });
    }
  }

  /** Sends again on a kept-alive connection found closed (when `retry`); otherwise tells the caller. */
  private sendFailed(sent: ClientRequest, retry: boolean, err: NodeJS.ErrnoException): void {
    const res = this.res;
    if (retry && sent.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE") && !res.destroyed) {
      this.send(false);
      return;
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    this.options.logger.warn({ err, path: this.plan.path }, "the API server could not be reached");
    sendStatus(res, serviceUnavailable(`the API server could not be reached: ${err.message}`));
  }

  /** Passes the answer through, filters a watch's events, or reads a get's or list's body to check it. */
  private relay(answer: IncomingMessage): void {
    const code = answer.statusCode ?? 502;
    answer.once("end", () => {
      this.answered = true;
    });
    const plan = this.plan;
    const inspect = plan.response !== "stream" && (code === 200 || (plan.response === "get" && code === 404));
    if (!inspect) this.relayUnchanged(answer, code);
    else if (plan.response === "watch") this.relayFilteredWatch(answer, code);
    else this.relayCheckedBody(answer, code);
  }

  private relayUnchanged(answer: IncomingMessage, code: number): void {
    const res = this.res;
    if (this.context.verb === "watch" && code === 200) this.startWatch();
    res.writeHead(code, responseHeaders(answer.rawHeaders));
    // A watch or a followed log may stay silent for long: the caller must see the answer begin.
    if (this.context.longRunning) res.flushHeaders();
    pipeline(answer, res, (err) => this.streamed(err));
  }

  private relayFilteredWatch(answer: IncomingMessage, code: number): void {
    const res = this.res;
    this.startWatch();
    res.writeHead(code, responseHeaders(answer.rawHeaders, true));
    res.flushHeaders();
    const filter = new WatchFilter(this.plan.visible!, this.plan.keepRowObjects ?? true);
    pipeline(answer, watchFilterStream(filter), res, (err) => this.streamed(err));
  }

  private streamed(err: Error | null | undefined): void {
    if (err) this.res.destroy();
  }

  private relayCheckedBody(answer: IncomingMessage, code: number): void {
    const chunks: Buffer[] = [];
    answer.on("data", (chunk: Buffer) => chunks.push(chunk));
    answer.on("error", () => this.res.destroy());
    answer.on("end", () => this.sendVisiblePart(answer, code, chunks));
  }

  /** The object, or the list's items, the caller may see; the plan's 404 for an object they may not. */
  private sendVisiblePart(answer: IncomingMessage, code: number, chunks: Buffer[]): void {
    const { plan, res } = this;
    if (code === 404) {
      sendStatus(res, plan.missing!);
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      sendStatus(res, serviceUnavailable("the API server sent a response the gateway cannot read"));
      return;
    }
    if (plan.response === "get") {
      if (!objectVisible(body, plan.visible!)) {
        sendStatus(res, plan.missing!);
        return;
      }
    } else {
      body = filterList(body, plan.visible!, plan.keepRowObjects ?? true);
    }
    const text = JSON.stringify(body);
    res.writeHead(code, {
      ...responseHeaders(answer.rawHeaders, true),
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  }

  /** Counts the watch, and closes a filtered one when the tenants it was filtered for change. */
  private startWatch(): void {
    this.options.metrics.watches.inc({ tenant: this.context.tenant });
    const scope = this.plan.scope;
    const untrack = scope
      ? this.options.watches.add({
          caller: this.caller,
          scope: scope.tenants,
          followsMembership: scope.followsMembership,
          close: () => {
            this.outgoing.destroy();
            this.res.end();
          },
        })
      : undefined;
    this.stopTracking = () => {
      untrack?.();
      this.options.metrics.watches.dec({ tenant: this.context.tenant });
    };
  }
}

/** The Impersonate-* headers that make the API server authorize and audit the request as the caller. */
export function impersonationHeaders(caller: Caller): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = { "impersonate-user": caller.username };
  if (caller.groups.length) headers["impersonate-group"] = caller.groups;
  if (caller.uid) headers["impersonate-uid"] = caller.uid;
  for (const [key, values] of Object.entries(caller.extra)) {
    if (values.length) headers[`impersonate-extra-${extraKey(key)}`] = values;
  }
  return headers;
}

/** An extra's key in a header name: percent-encoded, as the API server decodes it. */
function extraKey(key: string): string {
  return key.replace(/[^A-Za-z0-9\-._~]/g, (c) =>
    [...Buffer.from(c, "utf8")].map((b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join(""),
  );
}

/** The API server's response headers for the caller, without hop-by-hop ones (and without length when rewritten). */
export function responseHeaders(raw: string[], rewritten = false): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  let listed: Set<string> | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (raw[i]!.toLowerCase() === "connection") listed = connectionListed(raw[i + 1], listed);
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    if (isHopByHop(name, listed) || (rewritten && (name === "content-length" || name === "content-encoding")))
      continue;
    const existing = out[name];
    out[name] =
      existing === undefined ? value : Array.isArray(existing) ? [...existing, value] : [existing, value];
  }
  return out;
}
