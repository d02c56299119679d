/**
 * The runtimes proxy (Vasilenko & Kurapati §3.1): one HTTP endpoint in front of the Admin API and every
 * runtime. `/r/<token><rest>` goes to the runtime whose `status.route.token` is `<token>`, at
 * `<status.endpoint.url><rest>` (contract rule 3); every other path goes to the Admin API. Requests
 * and WebSocket upgrades pass the service's module first (Table 1), stream through in both
 * directions without buffering, and stamp the route's last activity.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { type Dispatcher, Pool } from "undici";
import { answerClientError, HttpServer } from "../../common/index.js";
import type { Authenticator } from "../../identity/index.js";
import { describeError, silentLogger } from "../../kube/index.js";
import type { Runtime } from "../api/runtime.js";
import { ActivityRecorder, type ActivityWriter, LiveRoute } from "./activity.js";
import { accessOf, type Principal } from "./auth/access.js";
import { PROXY_COOKIES, SESSION_COOKIE, setCookie, withoutCookies } from "./auth/credentials.js";
import { type HubTokenLookup, RouteGuard } from "./auth/guard.js";
import { SessionKeys } from "./auth/keys.js";
import {
  CALLBACK_SEGMENT,
  type IdentityLoginEndpoint,
  LOGIN_PAGE,
  LOGOUT_SEGMENT,
  RuntimeLogin,
} from "./auth/login.js";
import {
  type ForwardContext,
  forwardRequestHeaders,
  forwardResponseHeaders,
  HeaderEdits,
} from "./headers.js";
import { type AnsweredBy, ProxyMetrics } from "./metrics.js";
import { type ModuleState, ServiceModules } from "./modules/registry.js";
import type { HookOutcome, ProxyRequestOptions, ServiceModuleFactory } from "./modules/spi.js";
import { PROGRESS_SEGMENT, ProgressStream, RETRY_AFTER_SECONDS, sendNotReady } from "./progress.js";
import { type Problem, refuseUpgrade, sendProblem, wantsJson } from "./respond.js";
import {
  HUB_SEGMENT,
  parseRoutePath,
  RESERVED_SEGMENT,
  ROUTE_PREFIX,
  type RoutePath,
  type RouteView,
  routeView,
  targetPath,
} from "./route.js";
import type { RouteSource } from "./source.js";

/** Where paths outside `/r/` go: the Admin API's URL, or its request handler in this process. */
export type AdminBackend = { url: string } | { handle: RequestListener };

export interface RuntimesProxyOptions {
  /** The routes (informers on the Runtime objects in tenantry; the proxy starts and stops it). */
  source: RouteSource;
  admin?: AdminBackend;
  host?: string;
  port?: number;
  /**
   * Checks tokens of tenantry's identity providers: who may use a runtime (its user, and those its
   * `spec.access` names) unless its service is `routeAccess: Public`. Without it only JupyterHub
   * API tokens (`hubTokens`) and nothing else sign anyone in.
   */
  authenticator?: Authenticator;
  /** Who holds a JupyterHub API token, with its scopes (the runtimes Admin API's tokens). */
  hubTokens?: HubTokenLookup;
  /** The identity service's password login, for the login page (absent: it takes tokens only). */
  identityLogin?: IdentityLoginEndpoint;
  /**
   * The key sessions are sealed under (32 bytes), for a proxy whose routes are given in code.
   * Absent: the Secret `tenantry-runtimes-proxy-session-key` the route source reads.
   */
  sessionKey?: Buffer;
  /** Modules besides the built-in ones, by name. */
  modules?: Record<string, ServiceModuleFactory>;
  /** Where last activity is written (absent: kept in memory only), and how often (default 30 s). */
  activity?: { writer: ActivityWriter; intervalMs?: number };
  registry?: Registry;
  logger?: Logger;
  /** Keep X-Forwarded-Proto/Host and extend X-Forwarded-For as sent (behind a trusted ingress). */
  trustForwardedHeaders?: boolean;
  backends?: {
    /** Keep-alive connections per runtime at most (default 256). */
    connections?: number;
    /** No response headers within this time: 504 (default 120 s). */
    headersTimeoutMs?: number;
    /** No connection within this time: 504 (default 10 s). */
    connectTimeoutMs?: number;
    /** Idle keep-alive connections are closed after this (default 4 s, under Node servers' 5 s). */
    keepAliveTimeoutMs?: number;
  };
}

const STOPPED = new Error("the runtime stopped or its route went away");

/** Backend connection pools by origin, kept while a ready route points at them. */
class Backends {
  private readonly pools = new Map<string, { pool: Pool; routes: number }>();

  constructor(private readonly options: Pool.Options) {}

  pool(origin: string): Pool {
    let entry = this.pools.get(origin);
    if (!entry) {
      entry = { pool: new Pool(origin, this.options), routes: 0 };
      this.pools.set(origin, entry);
    }
    return entry.pool;
  }

  retain(origin: string): void {
    const entry = this.pools.get(origin);
    if (entry) entry.routes++;
    else this.pools.set(origin, { pool: new Pool(origin, this.options), routes: 1 });
  }

  /** One route fewer; the pool and its connections go with the last one. */
  release(origin: string): void {
    const entry = this.pools.get(origin);
    if (!entry) return;
    if (--entry.routes > 0) return;
    this.pools.delete(origin);
    void entry.pool.destroy(STOPPED).catch(() => {});
  }

  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.pool.destroy(STOPPED).catch(() => {})));
  }
}

export class RuntimesProxy {
  readonly metrics: ProxyMetrics;
  private readonly source: RouteSource;
  private readonly logger: Logger;
  private readonly shell: HttpServer;
  private readonly modules: ServiceModules;
  private readonly backends: Backends;
  private readonly adminPool?: Pool;
  private readonly live = new Map<string, LiveRoute>();
  private readonly progress = new Map<string, Set<ProgressStream>>();
  /** Callers' sockets of upgrade requests, from the upgrade until they close. */
  private readonly upgraded = new Set<Duplex>();
  private readonly activity?: ActivityRecorder;
  private readonly headersTimeout: number;
  private readonly connectTimeout: number;
  private readonly trustForwarded: boolean;
  private readonly guard: RouteGuard;
  private readonly login: RuntimeLogin;
  /** Who opened each upgraded connection to a guarded runtime: a grant taken back closes theirs. */
  private readonly socketPrincipals = new WeakMap<Duplex, Principal>();
  private unsubscribe: (() => void)[] = [];

  constructor(private readonly options: RuntimesProxyOptions) {
    this.source = options.source;
    this.logger = (options.logger ?? silentLogger).child({ component: "runtimes-proxy" });
    this.metrics = new ProxyMetrics(options.registry ?? new Registry(), this.source);
    this.headersTimeout = options.backends?.headersTimeoutMs ?? 120_000;
    this.connectTimeout = options.backends?.connectTimeoutMs ?? 10_000;
    this.trustForwarded = options.trustForwardedHeaders ?? false;
    const poolOptions: Pool.Options = {
      connections: options.backends?.connections ?? 256,
      keepAliveTimeout: options.backends?.keepAliveTimeoutMs ?? 4_000,
      headersTimeout: this.headersTimeout,
      // Server-sent events and long polls may be quiet for long: no body timeout.
      bodyTimeout: 0,
      connectTimeout: this.connectTimeout,
    };
    this.backends = new Backends(poolOptions);
    if (options.admin && "url" in options.admin) this.adminPool = new Pool(options.admin.url, poolOptions);
    const keys = new SessionKeys(this.source, this.logger, options.sessionKey);
    this.guard = new RouteGuard({
      keys,
      ...(options.authenticator ? { authenticator: options.authenticator } : {}),
      ...(options.hubTokens ? { hubTokens: options.hubTokens } : {}),
    });
    this.login = new RuntimeLogin({
      guard: this.guard,
      keys,
      ...(options.identityLogin ? { identityLogin: options.identityLogin } : {}),
      passwordProviders: () =>
        (options.authenticator?.providers ?? []).filter((p) => p.login).map((p) => p.name),
      logger: this.logger,
    });
    this.modules = new ServiceModules({
      ...(options.modules ? { factories: options.modules } : {}),
      ...(options.authenticator ? { authenticator: options.authenticator } : {}),
      logger: this.logger,
      onInit: (_service, module, error) =>
        this.metrics.moduleInits.inc({ module, result: error === undefined ? "ok" : "failed" }),
    });
    if (options.activity) {
      this.activity = new ActivityRecorder(this.live, {
        source: this.source,
        writer: options.activity.writer,
        ...(options.activity.intervalMs ? { intervalMs: options.activity.intervalMs } : {}),
        logger: this.logger,
        onWrite: (result) => this.metrics.activityWrites.inc({ result }),
      });
    }
    this.shell = HttpServer.plain(
      {
        what: "runtimes proxy",
        host: options.host ?? "127.0.0.1",
        port: options.port ?? 0,
        logger: this.logger,
        keepAliveTimeoutMs: 60_000,
      },
      // Uploads and downloads may take long; a slow sender of headers may not.
      { keepAlive: true, requestTimeout: 0, headersTimeout: 30_000 },
      this.onRequest,
      () => this.endOpenStreams(),
    );
    this.shell.server.on("upgrade", this.onUpgrade);
    // A request node's parser refused (malformed, headers too large): a problem, like every refusal.
    this.shell.server.on("clientError", (err, socket) => answerClientError(err, socket));
  }

  get url(): string {
    return this.shell.url;
  }

  /** Syncs the routes, initialises the modules, then listens. Resolves with the URL. */
  async start(): Promise<string> {
    await this.source.start();
    this.unsubscribe.push(this.modules.attach(this.source));
    this.unsubscribe.push(
      this.source.subscribe({ runtime: (previous, current) => this.changed(previous, current) }),
    );
    await this.modules.settled();
    this.activity?.start();
    return this.shell.listen();
  }

  /** Asks clients to reconnect elsewhere (a replica going away). */
  drain(): void {
    this.shell.drain();
  }

  /** What the HTTP server no longer owns and would hold it open: upgraded sockets, live streams. */
  private endOpenStreams(): void {
    // Upgraded connections are no longer the HTTP server's to close, but still hold it open.
    for (const socket of this.upgraded) socket.destroy();
    for (const route of this.live.values()) route.closeAll(STOPPED);
    for (const streams of this.progress.values()) for (const stream of [...streams]) stream.end();
  }

  async stop(): Promise<void> {
    await this.shell.close();
    for (const remove of this.unsubscribe) remove();
    this.unsubscribe = [];
    await this.activity?.stop();
    this.modules.close();
    await this.backends.close();
    await this.adminPool?.destroy().catch(() => {});
    await this.login.close();
    await this.source.stop();
  }

  /** Writes pending last-activity stamps now (tests, shutdown). */
  async flushActivity(): Promise<void> {
    await this.activity?.flush();
  }

  // --- route changes -------------------------------------------------------------------------------

  private changed(previous: Runtime | undefined, current: Runtime | undefined): void {
    const before = previous && routeView(previous);
    const after = current && routeView(current);
    const beforeOrigin = before?.status === "ready" ? before.target?.origin : undefined;
    const afterOrigin = after?.status === "ready" ? after.target?.origin : undefined;
    const sameRoute = before && after && before.token === after.token && beforeOrigin === afterOrigin;
    if (before && beforeOrigin && !sameRoute) {
      // Stopped, deleted, restarted elsewhere or given a new token: its connections end now.
      this.live.get(before.key)?.closeAll(STOPPED);
    } else if (sameRoute) {
      this.closeRevoked(after);
    }
    if (afterOrigin !== beforeOrigin) {
      if (afterOrigin) this.backends.retain(afterOrigin);
      if (beforeOrigin) this.backends.release(beforeOrigin);
    }
    if (before && before.token !== after?.token) this.notifyProgress(before.token);
    if (after) this.notifyProgress(after.token);
  }

  /** A grant taken back: the WebSocket connections it let in end now (new requests are refused anyway). */
  private closeRevoked(view: RouteView): void {
    const route = this.live.get(view.key);
    if (!route) return;
    for (const socket of [...route.sockets]) {
      const principal = this.socketPrincipals.get(socket);
      if (principal && !accessOf(principal, view)) socket.destroy();
    }
  }

  private notifyProgress(token: string): void {
    const streams = this.progress.get(token);
    if (!streams) return;
    const runtime = this.source.byToken(token);
    const view = runtime && routeView(runtime);
    for (const stream of [...streams]) stream.update(runtime, view);
  }

  private liveRoute(view: RouteView): LiveRoute {
    let route = this.live.get(view.key);
    if (!route || route.token !== view.token) {
      route?.closeAll(STOPPED);
      route = new LiveRoute(view.key, view.namespace, view.name, view.token);
      this.live.set(view.key, route);
    }
    return route;
  }

  // --- HTTP ----------------------------------------------------------------------------------------

  private readonly onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? "/";
    if (!url.startsWith(ROUTE_PREFIX)) {
      this.toAdmin(req, res);
      return;
    }
    const started = performance.now();
    if (url === LOGIN_PAGE || url.startsWith(`${LOGIN_PAGE}?`)) {
      void this.login
        .page(req, res)
        .then(() => this.metrics.answered("proxy", res.statusCode, started))
        .catch((err) => this.failed(res, started, "the login page", err));
      return;
    }
    const path = parseRoutePath(url);
    const runtime = path && this.source.byToken(path.token);
    const view = runtime && routeView(runtime);
    if (!path || !runtime || !view) {
      this.refuse(res, started, notFound());
      return;
    }
    void this.serveRoute(req, res, view, path, started).catch((err) =>
      this.failed(res, started, "a request", err),
    );
  };

  private failed(res: ServerResponse, started: number, what: string, err: unknown): void {
    this.logger.error({ err: describeError(err) }, `the proxy failed ${what}`);
    this.refuse(res, started, { status: 500, title: "internal error", detail: describeError(err) });
  }

  /** A request for a runtime: its sign-in endpoints, the guard, the service's module, then the runtime. */
  private async serveRoute(
    req: IncomingMessage,
    res: ServerResponse,
    view: RouteView,
    path: RoutePath,
    started: number,
  ): Promise<void> {
    const own = path.rest.split("?")[0] ?? "";
    if (own === CALLBACK_SEGMENT || own === LOGOUT_SEGMENT) {
      if (own === CALLBACK_SEGMENT) await this.login.callback(req, res, view, path.rest, this.isSecure(req));
      else this.login.logout(res, view, this.isSecure(req));
      this.metrics.answered("proxy", res.statusCode, started);
      return;
    }
    const edits = new HeaderEdits();
    const admitted = await this.admitRequest(req, res, view, path, edits, started);
    if (!admitted) return;
    if (own.startsWith(HUB_SEGMENT)) return this.hubAuthorize(req, res, own, admitted.token, started);
    // The route may have changed while the caller was identified: decide on the current one.
    const runtime = this.source.byToken(path.token);
    const current = runtime && routeView(runtime);
    if (!runtime || !current) return this.refuse(res, started, notFound());
    let state = this.moduleState(current);
    if (state.kind === "pending") {
      await state.settled;
      state = this.moduleState(current);
    }
    if (state.kind === "unavailable") return this.refuse(res, started, moduleUnavailable(state.detail));
    if (state.kind !== "ready" || !state.module.http) {
      return this.afterModule(req, res, runtime, current, path, edits, started);
    }
    await this.runHttpHook(req, res, state, current, path, edits, started);
  }

  /** Whether the caller may use the runtime (answering them when not); their credential is kept from it. */
  private async admitRequest(
    req: IncomingMessage,
    res: ServerResponse,
    view: RouteView,
    path: RoutePath,
    edits: HeaderEdits,
    started: number,
  ): Promise<{ token?: string } | undefined> {
    const admission = await this.admit(req, view, edits);
    if (admission.ok) return admission;
    const browser =
      (req.method === "GET" || req.method === "HEAD") &&
      !wantsJson(req) &&
      (req.headers.accept ?? "").includes("text/html");
    if (browser && admission.status === 401) {
      this.login.redirect(res, view, path.rest, this.isSecure(req), admission.badCookie);
    } else if (browser && admission.username !== undefined) {
      this.login.forbidden(res, view, admission.username);
    } else {
      this.refuse(res, started, admission.problem);
      return undefined;
    }
    this.metrics.answered("proxy", res.statusCode, started);
    return undefined;
  }

  /**
   * JupyterHub's OAuth authorize for a single-user server behind this route (its hub prefix is the
   * route's `.tenantry/hub/`): the browser comes with the route's session, so the Admin API's
   * authorize is asked as the credential that session holds. Nothing else of the hub is served here.
   */
  private hubAuthorize(
    req: IncomingMessage,
    res: ServerResponse,
    own: string,
    token: string | undefined,
    started: number,
  ): void {
    if (own !== `${HUB_SEGMENT}api/oauth2/authorize` || req.method !== "GET" || !token) {
      this.refuse(res, started, notFound());
      return;
    }
    const query = (req.url ?? "").split("?")[1];
    req.url = `/hub/api/oauth2/authorize${query ? `?${query}` : ""}`;
    req.headers.authorization = `Bearer ${token}`;
    delete req.headers.cookie;
    this.toAdmin(req, res);
  }

  /** The guard (unless the service is public): who calls, and whether the runtime is theirs or shared with them. */
  private async admit(
    req: IncomingMessage,
    view: RouteView,
    edits: HeaderEdits,
  ): Promise<
    | { ok: true; principal?: Principal; token?: string }
    | { ok: false; status: 401 | 403 | 503; problem: Problem; badCookie: boolean; username?: string }
  > {
    // Whatever the caller is, the proxy's own cookies are not the runtime's.
    const cookies = req.headers.cookie;
    if (cookies) {
      const rest = withoutCookies(cookies, PROXY_COOKIES);
      if (rest === undefined) edits.removeHeader("cookie");
      else if (rest !== cookies) edits.setHeader("cookie", rest);
    }
    const service = this.source.service(view.service);
    if (!service) {
      // How to guard it is its service's to say: until the proxy knows the service, nobody is served.
      const detail = `service ${view.service} of this runtime is not a RuntimeService the proxy knows`;
      return { ok: false, status: 503, badCookie: false, problem: moduleUnavailable(detail) };
    }
    if (service.spec.routeAccess === "Public") return { ok: true };
    const who = await this.guard.identify(req, view);
    if (!who.principal) {
      const clear: Record<string, string> = who.badCookie
        ? { "set-cookie": clearedSession(view, this.isSecure(req)) }
        : {};
      return {
        ok: false,
        status: 401,
        badCookie: who.badCookie,
        problem: {
          status: 401,
          title: "unauthorized",
          detail: who.reason,
          headers: { "www-authenticate": 'Bearer realm="tenantry runtimes"', ...clear },
        },
      };
    }
    const reason = accessOf(who.principal, view);
    if (!reason) {
      return {
        ok: false,
        status: 403,
        badCookie: false,
        username: who.principal.username,
        problem: {
          status: 403,
          title: "forbidden",
          detail: `runtime ${view.service}/${view.instance} is not shared with ${who.principal.username}`,
        },
      };
    }
    // The proxy's credential; any other Authorization (a runtime's own token) passes on. A
    // JupyterHub single-user server checks its caller itself with the hub, as under JupyterHub, so
    // its own user's credential goes on to it; nobody else's credential ever reaches their server.
    const ownServer = service.spec.jupyterhub === true && reason === "owner";
    if (who.via === "header" && !ownServer) edits.removeHeader("authorization");
    return { ok: true, principal: who.principal, token: who.token };
  }

  /** The module state of a route's service; a service the proxy does not know is never served without its module. */
  private moduleState(view: RouteView): ModuleState {
    if (!this.source.service(view.service)) {
      return {
        kind: "unavailable",
        name: "",
        detail: `service ${view.service} of this runtime is not a RuntimeService the proxy knows`,
      };
    }
    return this.modules.state(view.service);
  }

  private async runHttpHook(
    req: IncomingMessage,
    res: ServerResponse,
    state: ModuleState & { kind: "ready" },
    view: RouteView,
    path: RoutePath,
    edits: HeaderEdits,
    started: number,
  ): Promise<void> {
    let outcome: HookOutcome;
    try {
      outcome = await state.module.http!(req, res, this.hookOptions(req, view, path, edits));
    } catch (err) {
      this.logger.error({ err: describeError(err), module: state.name }, "service module failed a request");
      return this.refuse(res, started, moduleFailed(state.name, err));
    }
    if (outcome === "handled" || res.headersSent || res.writableEnded) {
      this.metrics.answered("module", res.statusCode, started);
      return;
    }
    // The route may have changed while the module worked: decide on the current one.
    const fresh = this.source.byToken(path.token);
    const freshView = fresh && routeView(fresh);
    if (!fresh || !freshView) return this.refuse(res, started, notFound());
    this.afterModule(req, res, fresh, freshView, path, edits, started);
  }

  private hookOptions(req: IncomingMessage, view: RouteView, path: RoutePath, edits: HeaderEdits) {
    const options: ProxyRequestOptions = {
      route: view,
      rest: path.rest,
      basePath: `${ROUTE_PREFIX}${view.token}/`,
      secure: this.isSecure(req),
      setHeader: (name, value) => edits.setHeader(name, value),
      removeHeader: (name) => edits.removeHeader(name),
    };
    return options;
  }

  private afterModule(
    req: IncomingMessage,
    res: ServerResponse,
    runtime: Runtime,
    view: RouteView,
    path: RoutePath,
    edits: HeaderEdits | undefined,
    started: number,
  ): void {
    if (path.rest.startsWith(RESERVED_SEGMENT)) {
      this.ownEndpoint(req, res, runtime, view, path, started);
      return;
    }
    if (view.status !== "ready") {
      sendNotReady(req, res, runtime, view);
      this.metrics.answered("proxy", 503, started);
      return;
    }
    const target = view.target;
    if (!target) {
      this.refuse(res, started, {
        status: 502,
        title: "bad gateway",
        detail: `runtime ${view.service}/${view.instance} has no usable endpoint: ${view.targetError}`,
      });
      return;
    }
    const route = this.liveRoute(view);
    this.dispatch(
      req,
      res,
      this.backends.pool(target.origin),
      targetPath(target, path.rest),
      edits,
      route,
      started,
    );
  }

  private ownEndpoint(
    req: IncomingMessage,
    res: ServerResponse,
    runtime: Runtime,
    view: RouteView,
    path: RoutePath,
    started: number,
  ): void {
    const endpoint = path.rest.split("?")[0];
    if (endpoint !== PROGRESS_SEGMENT || req.method !== "GET") {
      this.refuse(res, started, notFound());
      return;
    }
    this.metrics.answered("proxy", 200);
    let streams = this.progress.get(view.token);
    if (!streams) {
      streams = new Set();
      this.progress.set(view.token, streams);
    }
    const stream = new ProgressStream(view.token, res, (ended) => {
      const set = this.progress.get(ended.token);
      set?.delete(ended);
      if (set?.size === 0) this.progress.delete(ended.token);
    });
    streams.add(stream);
    stream.update(runtime, view);
  }

  private toAdmin(req: IncomingMessage, res: ServerResponse): void {
    const started = performance.now();
    const admin = this.options.admin;
    if (!admin) {
      this.refuse(res, started, notFound());
      return;
    }
    if ("handle" in admin) {
      res.once("finish", () => this.metrics.answered("admin", res.statusCode, started));
      admin.handle(req, res);
      return;
    }
    this.dispatch(req, res, this.adminPool!, req.url ?? "/", undefined, undefined, started);
  }

  /** The caller came over TLS: to this server, or (behind a trusted ingress) to the one in front. */
  private isSecure(req: IncomingMessage): boolean {
    if ((req.socket as TLSSocket).encrypted) return true;
    if (!this.trustForwarded) return false;
    const proto = req.headers["x-forwarded-proto"];
    return (Array.isArray(proto) ? proto[0] : proto)?.split(",")[0]?.trim() === "https";
  }

  private forwardContext(req: IncomingMessage): ForwardContext {
    return {
      clientIp: req.socket.remoteAddress ?? "",
      proto: (req.socket as TLSSocket).encrypted ? "https" : "http",
      trustForwarded: this.trustForwarded,
    };
  }

  /** Streams the request to the backend and its answer back, both ways with backpressure. */
  private dispatch(
    req: IncomingMessage,
    res: ServerResponse,
    pool: Pool,
    path: string,
    edits: HeaderEdits | undefined,
    route: LiveRoute | undefined,
    started: number,
  ): void {
    const { headers, hasBody } = forwardRequestHeaders(req.rawHeaders, this.forwardContext(req), edits);
    const handler = new ForwardHandler(this, res, route, started);
    pool.dispatch(
      {
        path,
        method: (req.method ?? "GET") as Dispatcher.HttpMethod,
        headers,
        body: hasBody ? req : null,
        headersTimeout: this.headersTimeout,
        bodyTimeout: 0,
      },
      handler,
    );
  }

  /** @internal ForwardHandler's report. */
  answered(target: AnsweredBy, code: number, started: number): void {
    this.metrics.answered(target, code, started);
  }

  private refuse(res: ServerResponse, started: number, problem: Problem): void {
    sendProblem(res, problem);
    this.metrics.answered("proxy", problem.status, started);
  }

  // --- WebSocket -----------------------------------------------------------------------------------

  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on("error", () => socket.destroy());
    this.upgraded.add(socket);
    socket.once("close", () => this.upgraded.delete(socket));
    void this.upgrade(req, socket, head).catch((err) => {
      this.logger.error({ err: describeError(err) }, "upgrade failed");
      this.refuseSocket(socket, {
        status: 500,
        title: "internal error",
        detail: describeError(err),
      });
    });
  };

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const path = parseRoutePath(req.url ?? "/");
    let runtime = path && this.source.byToken(path.token);
    let view = runtime && routeView(runtime);
    if (!path || !runtime || !view) return this.refuseSocket(socket, notFound());
    const edits = new HeaderEdits();
    const admission = await this.admit(req, view, edits);
    if (!admission.ok) return this.refuseSocket(socket, admission.problem);
    runtime = this.source.byToken(path.token);
    view = runtime && routeView(runtime);
    if (!runtime || !view) return this.refuseSocket(socket, notFound());
    if (admission.principal) this.socketPrincipals.set(socket, admission.principal);
    let state = this.moduleState(view);
    if (state.kind === "pending") {
      await state.settled;
      state = this.moduleState(view);
    }
    if (state.kind === "unavailable") return this.refuseSocket(socket, moduleUnavailable(state.detail));
    if (state.kind === "ready" && state.module.wss) {
      let outcome: HookOutcome;
      try {
        outcome = await state.module.wss(req, socket, head, this.hookOptions(req, view, path, edits));
      } catch (err) {
        this.logger.error(
          { err: describeError(err), module: state.name },
          "service module failed an upgrade",
        );
        return this.refuseSocket(socket, moduleFailed(state.name, err));
      }
      if (outcome === "handled" || socket.destroyed || !socket.writable) return;
      runtime = this.source.byToken(path.token);
      view = runtime && routeView(runtime);
      if (!runtime || !view) return this.refuseSocket(socket, notFound());
    }
    if (path.rest.startsWith(RESERVED_SEGMENT)) return this.refuseSocket(socket, notFound());
    if (view.status !== "ready") {
      return this.refuseSocket(socket, {
        status: 503,
        title: "not running",
        detail: `runtime ${view.service}/${view.instance} is ${view.phase}`,
        extra: { phase: view.phase, ...(view.reason ? { reason: view.reason } : {}) },
        ...(view.status === "starting" ? { headers: { "retry-after": String(RETRY_AFTER_SECONDS) } } : {}),
      });
    }
    if (!view.target) {
      return this.refuseSocket(socket, {
        status: 502,
        title: "bad gateway",
        detail: `runtime ${view.service}/${view.instance} has no usable endpoint: ${view.targetError}`,
      });
    }
    this.pipeUpgrade(req, socket, head, view, path, edits);
  }

  private pipeUpgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    view: RouteView,
    path: RoutePath,
    edits: HeaderEdits | undefined,
  ): void {
    const target = view.target!;
    const route = this.liveRoute(view);
    const { headers } = forwardRequestHeaders(
      req.rawHeaders,
      this.forwardContext(req),
      edits,
      req.headers.upgrade ?? "websocket",
    );
    const lines = [`${req.method} ${targetPath(target, path.rest)} HTTP/1.1`];
    for (let i = 0; i < headers.length; i += 2) lines.push(`${headers[i]}: ${headers[i + 1]}`);
    const backend: Socket = connect({ host: target.hostname, port: target.port, noDelay: true });
    let answered = false;
    let open = false;
    route.sockets.add(socket);
    route.sockets.add(backend);
    route.touch();
    backend.setTimeout(this.connectTimeout, () => {
      if (answered) return;
      this.refuseSocket(socket, {
        status: 504,
        title: "gateway timeout",
        detail: `runtime ${view.service}/${view.instance} did not answer the upgrade within ${this.connectTimeout} ms`,
      });
      backend.destroy();
    });
    backend.once("connect", () => {
      backend.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) backend.write(head);
      backend.pipe(socket);
      socket.pipe(backend);
    });
    backend.once("data", (chunk: Buffer) => {
      answered = true;
      backend.setTimeout(0);
      const code = Number(/^HTTP\/1\.[01] (\d{3})/.exec(chunk.subarray(0, 16).toString("latin1"))?.[1] ?? 0);
      this.metrics.answered("runtime", code);
      if (code === 101) {
        open = true;
        this.metrics.websockets.inc();
      }
    });
    const touch = () => {
      route.lastActivity = Date.now();
    };
    backend.on("data", touch);
    socket.on("data", touch);
    backend.on("error", (err) => {
      if (answered) {
        socket.destroy();
        return;
      }
      answered = true;
      this.refuseSocket(socket, {
        status: 502,
        title: "bad gateway",
        detail: `runtime ${view.service}/${view.instance} could not be reached: ${err.message}`,
      });
    });
    socket.once("close", () => {
      backend.destroy();
      route.sockets.delete(socket);
    });
    backend.once("close", () => {
      if (!socket.destroyed && answered) socket.destroy();
      route.sockets.delete(backend);
      if (open) {
        open = false;
        this.metrics.websockets.dec();
        route.touch();
      }
    });
  }

  private refuseSocket(socket: Duplex, problem: Problem): void {
    refuseUpgrade(socket, problem);
    this.metrics.answered("proxy", problem.status);
  }
}

/**
 * One forwarded request (undici's dispatch handler): the backend's status and headers become the
 * caller's, its body is written as it comes (paused while the caller reads slower), and a caller
 * that goes away aborts the backend request.
 */
class ForwardHandler implements Dispatcher.DispatchHandler {
  private controller?: Dispatcher.DispatchController;
  private done = false;

  constructor(
    private readonly proxy: RuntimesProxy,
    private readonly res: ServerResponse,
    private readonly route: LiveRoute | undefined,
    private readonly started: number,
  ) {
    route?.requests.add(this.abort);
    res.on("close", this.onClose);
  }

  /** The route went away: the backend request and the caller's response end now. */
  private readonly abort = (reason: Error) => {
    this.controller?.abort(reason);
    if (!this.res.writableEnded) this.res.destroy();
  };

  /** The caller went away before the answer ended: the backend request is abandoned too. */
  private readonly onClose = () => {
    if (!this.done) this.controller?.abort(new Error("the caller closed the connection"));
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.res.destroyed) controller.abort(new Error("the caller closed the connection"));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    if (statusCode < 200) return;
    this.res.writeHead(statusCode, forwardResponseHeaders(headers));
    if (this.route) this.route.lastActivity = Date.now();
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.route) this.route.lastActivity = Date.now();
    if (this.res.write(chunk)) return;
    // The caller reads slower than the backend sends: wait for it.
    controller.pause();
    this.res.once("drain", () => controller.resume());
  }

  onResponseEnd(): void {
    this.finish(this.res.statusCode);
    this.res.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.done) return;
    if (this.res.headersSent || this.res.destroyed) {
      this.finish(this.res.headersSent ? this.res.statusCode : 499);
      this.res.destroy();
      return;
    }
    const problem = backendProblem(err);
    this.finish(problem.status);
    sendProblem(this.res, problem);
  }

  private finish(code: number): void {
    this.done = true;
    this.route?.requests.delete(this.abort);
    this.proxy.answered(this.route ? "runtime" : "admin", code, this.started);
  }
}

function backendProblem(err: Error): Problem {
  const code = (err as { code?: string }).code;
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT") {
    return {
      status: 504,
      title: "gateway timeout",
      detail: `the backend did not answer in time: ${err.message}`,
    };
  }
  return { status: 502, title: "bad gateway", detail: `the backend could not be reached: ${err.message}` };
}

function clearedSession(view: RouteView, secure: boolean): string {
  return setCookie(SESSION_COOKIE, "", { path: `${ROUTE_PREFIX}${view.token}/`, maxAgeSeconds: 0, secure });
}

function notFound(): Problem {
  // The same answer for a malformed, unknown or deleted token: nothing tells them apart.
  return { status: 404, title: "not found", detail: "no runtime is served at this address" };
}

function moduleUnavailable(detail: string): Problem {
  return { status: 503, title: "service module unavailable", detail };
}

function moduleFailed(name: string, err: unknown): Problem {
  return {
    status: 500,
    title: "service module failed",
    detail: `service module "${name}" failed: ${describeError(err)}`,
  };
}

/** Starts a runtimes proxy: routes synced, modules initialised, listening. */
export async function startRuntimesProxy(options: RuntimesProxyOptions): Promise<RuntimesProxy> {
  const proxy = new RuntimesProxy(options);
  await proxy.start();
  return proxy;
}
