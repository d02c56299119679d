/**
 * The runtimes Admin REST API (Vasilenko & Kurapati §3.2, Table 2): a façade over Runtime objects. It
 * creates, patches and deletes them; the controller does the rest. Reads come from informers
 * (indexed by user and by user/service/instance); nothing lives only in memory.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import swagger from "@fastify/swagger";
import { PatchStrategy } from "@kubernetes/client-node";
import type { FastifyInstance, FastifyReply, FastifyRequest, InjectOptions } from "fastify";
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import { EventStream, HttpServer, ProblemError, replyProblem } from "../../common/index.js";
import type { Authenticator, Identity } from "../../identity/index.js";
import {
  type ClusterClient,
  cacheHasCaughtUp,
  describeError,
  Expectations,
  formatKubeTime,
  type Informer,
  ignoreNotFound,
  isAlreadyExists,
  isNotFound,
  silentLogger,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import { runtimeNamespaceAnnotations, runtimeNamespaceLabels, runtimePlacement } from "../api/placement.js";
import { RUNTIME_FINALIZER, type Runtime, type RuntimeAccess, START_STEPS } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";
import { KubeconfigClients, type RuntimesCluster, SECRETS_NAMESPACE } from "../clusters.js";
import { type CullingLimits, cullRuntime, lastUsed } from "../controller/culling.js";
import { recordRuntimeEvent } from "../events.js";
import type { HubBackend } from "../hub/backend.js";
import { callerOfOwner } from "../hub/caller.js";
import { OAuthCodes } from "../hub/oauth.js";
import { HUB_API_PREFIX, type HubRouteOptions, hubRoutes } from "../hub/routes.js";
import { roleScopes, tokenScopes } from "../hub/scopes.js";
import { HubTokens } from "../hub/tokens.js";
import { BY_KEY, BY_SERVICE, BY_USER, RuntimesInformers, runtimeKeyOf } from "../informers.js";
import type { ServicePlugin } from "../plugins/spi.js";
import { KubeActivityWriter } from "../proxy/activity.js";
import type { Principal } from "../proxy/auth/access.js";
import { activityRoutes } from "./activity-routes.js";
import {
  AdminCallers,
  type AgentCaller,
  type Caller,
  ON_BEHALF_OF_HEADER,
  type PodCaller,
  type UserCaller,
} from "./callers.js";
import { checkStartLimits, isStarting } from "./limits.js";
import type { Acting, ActivityRouteContext } from "./route-context.js";
import {
  AccessBody,
  DEFAULT_PAGE,
  InstanceParams,
  MAX_BODY_BYTES,
  PageQuery,
  Problem,
  type ProgressFormat,
  RuntimeListBody,
  RuntimeStatusBody,
  StartBody,
  StartQuery,
  StopQuery,
  UserParams,
} from "./schemas.js";

export const OPENAPI_PATH = "/services/openapi.json";
const API_VERSION = TENANTS_API_VERSION;

export interface RuntimesAdminOptions {
  client: ClusterClient;
  /** Shared caches of Runtimes and RuntimeServices (started by whoever made them); default: its own. */
  informers?: RuntimesInformers;
  /** Validates tokens of tenantry's identity providers; other tokens go to a TokenReview. */
  authenticator?: Authenticator;
  /** Audience of runtime pods' projected tokens (default `tenantry-runtimes`). */
  audience?: string;
  /** Called for each token a tenantry identity provider vouched for (first-login provisioning). */
  onAuthenticated?: (identity: Identity) => Promise<void>;
  host?: string;
  port?: number;
  /** Base URL users reach runtimes at (the proxy): a runtime's URL is `<base>/r/<token>/`. Default: this server. */
  publicUrl?: () => string | undefined;
  /** The plugin of a service, for check-service (409 on an incompatible body). */
  pluginOf?: (service: RuntimeService) => ServicePlugin | undefined;
  /** Retry-After of a 429 and of a 503 while starting, in seconds (default 2). */
  retryAfterSeconds?: number;
  /** What else culls a runtime when idle (a BackupPolicy), as the runtimes controller is told. */
  idleCulledBy?: (runtime: Runtime) => string | undefined;
  /** How late the proxy's activity may reach a Runtime (its write interval; default 30 s). */
  activityLagMs?: number;
  /** tenantry's namespace: where the JupyterHub API's tokens are kept (default tenantry-system). */
  namespace?: string;
  /** The JupyterHub REST API served at /hub/api. */
  hub?: HubRouteOptions;
  logger?: Logger;
  /** Other capabilities' routes served here too (e.g. the backup agents' broker). */
  routes?: readonly AdminRoutes[];
}

/** What a route mounted on the Admin API gets besides its Fastify scope. */
export interface AdminRouteContext {
  /**
   * The pod whose projected service-account token for `audience` the request bears, reviewed by
   * the cluster the Admin API serves from; otherwise throws the 401 (or 503) problem.
   */
  podCaller(request: FastifyRequest, audience: string): Promise<PodCaller>;
  /** An error the API answers as problem+json with `status`, `title`, `detail` and `extra`'s fields. */
  problem(status: number, title: string, detail: string, extra?: Record<string, unknown>): Error;
}

/** Routes another capability serves on the Admin API (registered under the same error handling). */
export type AdminRoutes = (api: FastifyInstance, context: AdminRouteContext) => void;

interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const keyOf = runtimeKeyOf;
/** How long a start written here may go unseen by the cache before it no longer counts. */
const UNSEEN_START_TTL_MS = 30_000;

/** The problems every route may answer, for the OpenAPI document. */
const problems = {
  400: Problem,
  401: Problem,
  403: Problem,
  404: Problem,
  409: Problem,
  429: Problem,
  503: Problem,
};

export class RuntimesAdmin {
  readonly runtimes: Informer<Runtime>;
  readonly services: Informer<RuntimeService>;
  private readonly informers: RuntimesInformers;
  private readonly ownInformers: boolean;
  private readonly shell: HttpServer & { app: FastifyInstance };
  private readonly callers: AdminCallers;
  private readonly logger: Logger;
  private readonly retryAfter: number;
  /** Starts this replica is writing, per runtime key: concurrent POSTs for one instance share one. */
  private readonly starting = new Map<string, Promise<Runtime>>();
  /**
   * Starts this replica wrote whose write the cache has not delivered yet, per runtime key: until
   * it does, the cache shows no runtime (create) or a stopped one (resume), and a start limit
   * decided from it alone would let one start too many through.
   */
  private readonly unseenStarts = new Expectations<string | undefined>({
    ttlMs: UNSEEN_START_TTL_MS,
    seen: (key, resourceVersion) => cacheHasCaughtUp(this.runtimes.byIndex(BY_KEY, key)[0], resourceVersion),
  });
  private removeUnseenHandler?: () => void;
  private readonly knownNamespaces = new Set<string>();
  /** Clients of the runtimes clusters services name. */
  private readonly clusterClients: KubeconfigClients;
  /** API tokens of the JupyterHub REST API served beside this one. */
  private readonly hubTokens: HubTokens;
  private readonly activityWriter: KubeActivityWriter;
  /** Whether a user holds the delegation permission, for a few seconds (JupyterHub API callers' admin role). */
  private readonly admins = new LRUCache<string, boolean>({ max: 10_000, ttl: 10_000 });

  constructor(private readonly options: RuntimesAdminOptions) {
    const { client } = options;
    this.logger = (options.logger ?? silentLogger).child({ component: "runtimes-admin" });
    this.retryAfter = options.retryAfterSeconds ?? 2;
    this.callers = new AdminCallers({
      client,
      ...(options.authenticator ? { authenticator: options.authenticator } : {}),
      ...(options.audience ? { audience: options.audience } : {}),
      ...(options.onAuthenticated ? { onAuthenticated: options.onAuthenticated } : {}),
      runtimesClusters: () => this.runtimesClusters(),
    });
    this.clusterClients = new KubeconfigClients(client);
    this.ownInformers = !options.informers;
    this.informers = options.informers ?? new RuntimesInformers(client);
    this.runtimes = this.informers.runtimes;
    this.services = this.informers.services;
    const keyOfRuntime = (runtime: Runtime) =>
      keyOf(runtime.spec?.user ?? "", runtime.spec?.service ?? "", runtime.spec?.instance ?? "");
    this.removeUnseenHandler = this.runtimes.addHandler({
      onAdd: (runtime) => this.unseenStarts.observe(keyOfRuntime(runtime)),
      onUpdate: (_old, runtime) => this.unseenStarts.observe(keyOfRuntime(runtime)),
      onDelete: (runtime) => this.unseenStarts.forget(keyOfRuntime(runtime)),
    });
    this.hubTokens = new HubTokens(client, options.namespace ?? SECRETS_NAMESPACE);
    this.activityWriter = new KubeActivityWriter(client);
    this.shell = this.build();
  }

  get url(): string {
    return this.shell.url;
  }

  async start(): Promise<string> {
    if (this.ownInformers) await this.informers.start();
    await this.hubTokens.start();
    return this.shell.listen();
  }

  drain(): void {
    this.shell.drain();
  }

  async stop(): Promise<void> {
    await this.shell.close();
    await this.hubTokens.stop();
    this.removeUnseenHandler?.();
    if (this.ownInformers) await this.informers.stop();
  }

  /**
   * Answers a request another server in this process received (the runtimes proxy serving the
   * Admin API in process, without a hop over loopback). The API must have started.
   */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.shell.app.routing(req, res);
  };

  /** For tests and the composition root: answer a request without a socket. */
  inject(request: InjectOptions) {
    return this.shell.app.inject(request);
  }

  private build(): HttpServer & { app: FastifyInstance } {
    const shell = HttpServer.fastify({
      what: "runtimes Admin API",
      host: this.options.host ?? "127.0.0.1",
      port: this.options.port ?? 0,
      bodyLimit: MAX_BODY_BYTES,
      logger: this.logger,
      logLevel: "warn",
      problems: { describeInternal: describeError },
      fastify: { ajv: { customOptions: { allErrors: false, coerceTypes: true } } },
    });
    const { app } = shell;
    app.register(swagger, {
      openapi: {
        info: {
          title: "tenantry runtimes Admin API",
          version: "v1alpha1",
          description:
            "Start, watch, stop and delete per-user runtimes. Bearer tokens of tenantry's identity providers; runtime agents use their pod's projected service-account token; admins holding `delegate` on `runtimes.tenantry.dev` may act for a user with the `Tenantry-On-Behalf-Of` header.",
        },
        components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
        security: [{ bearer: [] }],
      },
    });

    app.register(async (api) => activityRoutes(api, this.activityContext(), problems));
    app.register(
      async (api) => {
        // JupyterHub's API is documented by JupyterHub: not in this API's OpenAPI document.
        api.addHook("onRoute", (route) => {
          route.schema = { ...route.schema, hide: true };
        });
        hubRoutes(api, this.hubBackend(), this.options.hub ?? {});
      },
      { prefix: HUB_API_PREFIX },
    );
    app.register(async (api) => {
      api.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());

      this.instanceRoutes(api);
      this.endRoutes(api);
      this.accessRoutes(api);
      this.pluginRoutes(api);
    });
    return shell;
  }

  /** List, read and start runtimes, and follow a start. */
  private instanceRoutes(api: FastifyInstance): void {
    api.get(
      "/services",
      {
        schema: {
          summary: "Every user's runtimes (needs the delegation permission), a page at a time.",
          querystring: PageQuery,
          response: { 200: RuntimeListBody, ...problems },
        },
      },
      async (request) => {
        const caller = await this.caller(request);
        if (caller.kind !== "user" || !(await this.callers.mayDelegate(caller))) {
          throw forbidden(`listing every user's runtimes needs ${delegateText()} cluster-wide`);
        }
        return this.page(this.runtimes.list(), request.query as PageQuery, request);
      },
    );

    api.get(
      "/services/:user",
      {
        schema: {
          summary: "One user's runtimes, a page at a time.",
          params: UserParams,
          querystring: PageQuery,
          response: { 200: RuntimeListBody, ...problems },
        },
      },
      async (request) => {
        const { user } = request.params as { user: string };
        const acting = await this.actingFor(request, user);
        const own = this.runtimes
          .byIndex(BY_USER, user)
          .filter((r) => acting.delegated || r.spec.tenant === acting.caller.tenant);
        return this.page(own, request.query as PageQuery, request);
      },
    );

    api.post(
      "/services/:user/:service/:instance",
      {
        schema: {
          summary: "Start (or resume) a runtime; the same request again answers its current state.",
          params: InstanceParams,
          querystring: StartQuery,
          body: StartBody,
          response: { 201: RuntimeStatusBody, 202: RuntimeStatusBody, ...problems },
        },
      },
      async (request, reply) => this.send(reply, await this.startRuntime(request)),
    );

    api.get(
      "/services/:user/:service/:instance",
      {
        schema: {
          summary: "A runtime's state: 200 when running and answering, 503 otherwise.",
          params: InstanceParams,
          response: { 200: RuntimeStatusBody, ...problems },
        },
      },
      async (request, reply) => {
        const params = request.params as InstanceParams;
        const acting = await this.actingFor(request, params.user);
        const runtime = await this.find(params, acting);
        const status = this.statusOf(runtime, request);
        if (status.ready) return reply.code(200).send(status);
        // Answered, not thrown: a runtime not running yet is this route's everyday answer (clients
        // poll it while starting), not a server failure to log.
        return replyProblem(
          reply,
          new ProblemError(
            503,
            "not running",
            `runtime ${params.service}/${params.instance} of ${params.user} is ${status.phase}${status.reason ? ` (${status.reason})` : ""}${status.message ? `: ${status.message}` : ""}`,
            { phase: status.phase, ...(status.reason ? { reason: status.reason } : {}), runtime: status },
            isStarting(runtime)
              ? { "retry-after": String(this.retryAfter), location: status.progressUrl }
              : {},
          ),
        );
      },
    );

    api.get(
      "/services/:user/:service/:instance/progress",
      {
        schema: {
          summary:
            "Server-sent events of the start sequence (namespace, volumes, scheduled, pulling, ready), ending with the runtime's URL.",
          params: InstanceParams,
          response: problems,
        },
      },
      async (request, reply) => {
        const params = request.params as InstanceParams;
        const acting = await this.actingFor(request, params.user);
        const runtime = await this.find(params, acting);
        this.streamProgress(runtime, request, reply);
        return reply;
      },
    );
  }

  /** Who besides its user may use a runtime through the proxy (`spec.access`): read by them, changed by its user or an admin. */
  private accessRoutes(api: FastifyInstance): void {
    const path = "/services/:user/:service/:instance/access";
    api.get(
      path,
      {
        schema: {
          summary: "Who besides its user may use the runtime through the runtimes proxy.",
          params: InstanceParams,
          response: { 200: AccessBody, ...problems },
        },
      },
      async (request) => {
        const params = request.params as InstanceParams;
        const runtime = await this.find(params, await this.actingFor(request, params.user));
        return accessBody(runtime.spec.access);
      },
    );
    api.put(
      path,
      {
        schema: {
          summary:
            "Share the runtime: the users and groups (besides its user) the runtimes proxy lets in, replacing those before. Empty lists share it with nobody.",
          params: InstanceParams,
          body: AccessBody,
          response: { 200: AccessBody, ...problems },
        },
      },
      async (request) => {
        const params = request.params as InstanceParams;
        const acting = await this.actingFor(request, params.user);
        const runtime = await this.find(params, acting);
        const access = accessBody(request.body as AccessBody);
        const empty = access.users.length === 0 && access.groups.length === 0;
        // A merge patch replaces lists whole; null removes the field.
        const changed = await this.patchSpec(runtime, { access: (empty ? null : access) as RuntimeAccess });
        await this.recordDelegation(acting, changed, "share");
        return accessBody(changed.spec.access);
      },
    );
  }

  /** Stop and delete a runtime. */
  private endRoutes(api: FastifyInstance): void {
    api.delete(
      "/services/:user/:service/:instance/stop",
      {
        schema: {
          summary: "Stop: deployment and service go, volumes and secrets stay; the next POST resumes.",
          params: InstanceParams,
          querystring: StopQuery,
          response: { 202: RuntimeStatusBody, 204: { type: "null" }, ...problems },
        },
      },
      async (request, reply) => {
        const params = request.params as InstanceParams;
        const acting = await this.actingFor(request, params.user, { agentMayStop: true });
        const runtime = await this.find(params, acting);
        if (acting.agent) this.checkOwnRuntime(acting.agent, runtime, "stop");
        if (runtime.status?.phase === "Stopped" && runtime.spec.desiredState === "Stopped") {
          return reply.code(204).send();
        }
        const idle = (request.query as StopQuery).idleSeconds;
        if (acting.agent && idle !== undefined && runtime.spec.desiredState === "Running") {
          // The agent stops its runtime for idleness: a cull, recorded as one.
          await cullRuntime(
            this.options.client,
            runtime,
            `idle for ${idle} s, as its agent found (pod ${acting.agent.pod})`,
            this.logger,
            "tenantry-runtime-agent",
          );
          return reply.code(202).send(this.statusOf(runtime, request));
        }
        const stopped = await this.patchSpec(runtime, { desiredState: "Stopped" });
        await this.recordDelegation(acting, stopped, "stop");
        return reply.code(202).send(this.statusOf(stopped, request));
      },
    );

    api.delete(
      "/services/:user/:service/:instance",
      {
        schema: {
          summary:
            "Delete: deployment, service, claims and secrets go; the plugin's deregister-service runs.",
          params: InstanceParams,
          response: { 202: RuntimeStatusBody, ...problems },
        },
      },
      async (request, reply) => {
        const params = request.params as InstanceParams;
        const acting = await this.actingFor(request, params.user);
        const runtime = await this.find(params, acting);
        await this.recordDelegation(acting, runtime, "delete");
        await ignoreNotFound(this.options.client.objects.delete(runtime as never));
        return reply.code(202).send({ ...this.statusOf(runtime, request), phase: "Deleting" });
      },
    );
  }

  /** The routes service plugins add, with what they may ask of the API. */
  private pluginRoutes(api: FastifyInstance): void {
    const context: AdminRouteContext = {
      podCaller: async (request, audience) => {
        const result = await this.callers.authenticatePod(request.headers, audience);
        if (result.ok) return result.pod;
        throw new ProblemError(
          result.status,
          result.status === 401 ? "unauthorized" : "unavailable",
          result.detail,
        );
      },
      problem: (status, title, detail, extra) => new ProblemError(status, title, detail, extra),
    };
    for (const routes of this.options.routes ?? []) routes(api, context);
  }

  /** Every runtimes cluster a service names (besides this one), from its kubeconfig Secret. */
  private async runtimesClusters(): Promise<RuntimesCluster[]> {
    const refs = new Map<string, string>();
    for (const service of this.services.list()) {
      const cluster = service.spec.cluster;
      if (cluster) refs.set(cluster.kubeconfigSecretRef.name, cluster.name);
    }
    const clusters: RuntimesCluster[] = [];
    for (const [secret, name] of refs) {
      try {
        clusters.push(await this.clusterClients.get(secret, name));
      } catch (err) {
        this.logger.warn(
          { err: describeError(err), cluster: name },
          "runtimes cluster unreachable for agent reviews",
        );
      }
    }
    return clusters;
  }

  // --- who acts for whom -------------------------------------------------------------------------

  private async caller(request: FastifyRequest): Promise<Caller> {
    const result = await this.callers.authenticate(request.headers);
    if (!result.ok)
      throw new ProblemError(
        result.status,
        result.status === 401 ? "unauthorized" : "unavailable",
        result.detail,
      );
    return result.caller;
  }

  /**
   * The caller acting on `user`'s runtimes: the user themselves (in their tenant), an admin naming
   * the user in the on-behalf-of header and holding the delegation permission, or (for stop only)
   * a runtime's agent.
   */
  private async actingFor(
    request: FastifyRequest,
    user: string,
    { agentMayStop = false } = {},
  ): Promise<Acting> {
    const caller = await this.caller(request);
    if (caller.kind === "agent") {
      if (!agentMayStop) throw forbidden("a runtime's agent may only stop its own runtime (DELETE …/stop)");
      return {
        caller: { kind: "user", username: caller.username, groups: [], extra: {} },
        agent: caller,
        delegated: true,
      };
    }
    const onBehalfOf = headerValue(request.headers[ON_BEHALF_OF_HEADER]);
    if (onBehalfOf === undefined) {
      if (caller.username !== user) {
        throw forbidden(
          `${caller.username} may act only on their own runtimes; acting for ${user} needs the ${ON_BEHALF_OF_HEADER} header and ${delegateText()}`,
        );
      }
      if (!caller.tenant)
        throw forbidden(`${caller.username} belongs to no tenant: runtimes run in a tenant`);
      return { caller, delegated: false };
    }
    if (onBehalfOf !== user) {
      throw new ProblemError(
        400,
        "invalid request",
        `header ${ON_BEHALF_OF_HEADER} names ${onBehalfOf}, the path names ${user}`,
        {
          field: ON_BEHALF_OF_HEADER,
        },
      );
    }
    if (!(await this.callers.mayDelegate(caller))) {
      throw forbidden(`${caller.username} may not act for ${user}: that needs ${delegateText()}`);
    }
    return { caller, delegated: true };
  }

  /** A runtime's agent acts only on its own runtime (same pod label, namespace and cluster). */
  private checkOwnRuntime(agent: AgentCaller, runtime: Runtime, action: string): void {
    if (
      agent.runtime !== runtime.metadata?.name ||
      agent.namespace !== runtime.metadata?.namespace ||
      agent.cluster !== this.services.get(undefined, runtime.spec.service)?.spec.cluster?.name
    ) {
      throw forbidden(
        `the agent of runtime ${agent.namespace}/${agent.runtime} may ${action} only its own runtime`,
      );
    }
  }

  /** What route files registered beside the Admin API's own routes use of it. */
  private activityContext(): ActivityRouteContext {
    return {
      client: this.options.client,
      services: this.services,
      logger: this.logger,
      ...(this.options.idleCulledBy ? { idleCulledBy: this.options.idleCulledBy } : {}),
      activityLagMs: this.options.activityLagMs ?? 30_000,
      problem: (status, title, detail, extra) => new ProblemError(status, title, detail, extra),
      agentsRuntime: async (request) => {
        const params = request.params as InstanceParams;
        const acting = await this.actingFor(request, params.user, { agentMayStop: true });
        if (!acting.agent) throw forbidden("only a runtime's agent reports its activity");
        const runtime = await this.find(params, acting);
        this.checkOwnRuntime(acting.agent, runtime, "report the activity of");
        return runtime;
      },
    };
  }

  /** Whether the user holds the delegation permission (JupyterHub's admin role), cached briefly. */
  private async isAdmin(caller: UserCaller): Promise<boolean> {
    const key = `${caller.username}\n${caller.groups.join(",")}`;
    const known = this.admins.get(key);
    if (known !== undefined) return known;
    const admin = await this.callers.mayDelegate(caller);
    this.admins.set(key, admin);
    return admin;
  }

  /**
   * Who holds a JupyterHub API token of this API and what its scopes allow now (within its owner's
   * role): the runtimes proxy lets it into the servers its `access:servers` covers.
   */
  readonly hubTokenHolder = async (token: string): Promise<Principal | undefined> => {
    const record = this.hubTokens.find(token);
    if (!record) return undefined;
    const user = callerOfOwner(record.owner);
    const admin = await this.isAdmin(user);
    return {
      username: user.username,
      ...(user.tenant ? { tenant: user.tenant } : {}),
      groups: user.groups,
      scopes: tokenScopes(record.scopes, roleScopes(user.username, admin), user.username),
      expiresAt: Date.parse(record.expiresAt),
    };
  };

  /** What the JupyterHub REST API uses of this one. */
  private hubBackend(): HubBackend {
    return {
      runtimes: this.runtimes,
      services: this.services,
      tokens: this.hubTokens,
      oauthCodes: new OAuthCodes(this.options.client, this.options.namespace ?? SECRETS_NAMESPACE),
      authenticate: (token) => this.callers.authenticate({ authorization: `Bearer ${token}` }),
      isAdmin: (caller) => this.isAdmin(caller),
      start: (acting, params, body, query) => this.startFor(acting, params, body, query),
      stop: async (acting, runtime) => {
        const stopped = await this.patchSpec(runtime, { desiredState: "Stopped" });
        await this.recordDelegation(acting, stopped, "stop");
        return stopped;
      },
      remove: async (acting, runtime) => {
        await this.recordDelegation(acting, runtime, "delete");
        await ignoreNotFound(this.options.client.objects.delete(runtime as never));
      },
      writeActivity: async (runtime, time) => {
        if (Math.floor(time.getTime() / 1000) * 1000 <= (lastUsed(runtime) ?? 0)) return;
        await this.activityWriter.write(runtime, formatKubeTime(time));
      },
      statusOf: (runtime, request) => this.statusOf(runtime, request),
      publicBase: (request) => this.publicBase(request),
      streamProgress: (runtime, request, reply, format) =>
        this.streamProgress(runtime, request, reply, format),
    };
  }

  /** A delegated call is recorded as an Event on the Runtime and an audit log line naming both. */
  private async recordDelegation(acting: Acting, runtime: Runtime, action: string): Promise<void> {
    if (!acting.delegated) return;
    const actor = acting.agent
      ? `agent ${acting.agent.username} (pod ${acting.agent.pod})`
      : acting.caller.username;
    const message = `${actor} did ${action} on behalf of ${runtime.spec.user}`;
    this.logger.info(
      {
        audit: "runtime-delegation",
        actor: acting.agent?.username ?? acting.caller.username,
        onBehalfOf: runtime.spec.user,
        action,
        runtime: `${runtime.metadata?.namespace}/${runtime.metadata?.name}`,
      },
      message,
    );
    await recordRuntimeEvent(
      this.options.client,
      runtime,
      {
        reason: acting.agent ? "AgentAction" : "DelegatedAction",
        message,
        component: "tenantry-runtimes-admin",
      },
      this.logger,
    );
  }

  // --- start ---------------------------------------------------------------------------------------

  private async startRuntime(request: FastifyRequest): Promise<Answer> {
    const params = request.params as InstanceParams;
    const acting = await this.actingFor(request, params.user);
    const runtime = await this.startFor(
      acting,
      params,
      request.body as Record<string, unknown>,
      request.query as StartQuery,
    );
    const status = this.statusOf(runtime, request);
    if (status.ready) return { status: 201, body: status };
    return {
      status: 202,
      body: status,
      headers: { location: status.progressUrl, "retry-after": String(this.retryAfter) },
    };
  }

  /**
   * Starts, resumes or retries `params`' runtime for whom `acting` acts; the runtime as written (or
   * found running). Shared by the Admin API's POST and the JupyterHub API's.
   */
  private async startFor(
    acting: Acting,
    params: InstanceParams,
    body: Record<string, unknown>,
    query: StartQuery,
  ): Promise<Runtime> {
    const service = this.services.get(undefined, params.service);
    if (!service) throw notFound(`no service ${params.service}`, "service");
    if (service.metadata?.deletionTimestamp) {
      throw notFound(`no service ${params.service}: it is being deleted`, "service");
    }
    const ready = service.status?.conditions?.find((c) => c.type === "Ready");
    if (ready?.status === "False" && ready.observedGeneration === service.metadata?.generation) {
      throw new ProblemError(
        503,
        "service not ready",
        `service ${params.service} is not ready: ${ready.message}`,
        { field: "service", reason: ready.reason },
        { "retry-after": String(Math.max(this.retryAfter, 10)) },
      );
    }
    const tenant = acting.delegated
      ? (query.tenant ?? this.existing(params)?.spec.tenant)
      : acting.caller.tenant;
    if (!tenant) {
      throw new ProblemError(
        400,
        "invalid request",
        "a delegated start of a new runtime must name the user's tenant",
        {
          field: "tenant",
        },
      );
    }
    const config = {
      ...((service.spec.defaults as Record<string, unknown>) ?? {}),
      ...body,
    };
    const violation = this.options.pluginOf?.(service)?.validateConfig?.(config)[0];
    if (violation) {
      throw new ProblemError(400, "invalid request", violation.message, {
        field: violation.field,
        ...(violation.limit !== undefined ? { limit: violation.limit } : {}),
      });
    }
    const culling = cullingRequest(service, query);
    const placement = runtimePlacement(
      { ...params, tenant },
      service.spec.namespaceMode ?? "Segregated",
      service.spec.runtimesNamespace,
    );
    const key = keyOf(params.user, params.service, params.instance);

    // One start per instance on this replica at a time; across replicas the create decides.
    for (;;) {
      const pending = this.starting.get(key);
      if (!pending) break;
      await pending.catch(() => undefined);
    }
    const admit = (isNew: boolean) => {
      const refusal = checkStartLimits(
        service,
        params.user,
        this.serviceRuntimes(params.service),
        isNew,
        this.inFlight(params),
      );
      if (refusal) throw this.tooMany(refusal);
    };
    const work = (async () => {
      let runtime = this.runtimes.get(placement.namespace, placement.name);
      if (runtime && runtime.spec.tenant !== tenant)
        throw notFound(`no runtime ${params.service}/${params.instance} of ${params.user}`);
      if (!runtime) {
        admit(true);
        runtime = await this.create(placement, { ...params, tenant, config, ...culling });
        this.written(key, runtime);
        await this.recordDelegation(acting, runtime, "start");
        return runtime;
      }
      if (runtime.metadata?.deletionTimestamp) {
        throw new ProblemError(
          409,
          "being deleted",
          `runtime ${params.service}/${params.instance} of ${params.user} is being deleted; start it again once it is gone`,
          { phase: "Deleting" },
          { "retry-after": String(this.retryAfter) },
        );
      }
      await this.checkCompatible(service, runtime, config);
      checkCullingUnchanged(runtime, culling);
      // A stopped runtime resumes; a failed start is tried again (with the parameters now asked for).
      const stopped = runtime.spec.desiredState === "Stopped";
      if (stopped || runtime.status?.phase === "Failed") {
        admit(false);
        runtime = await this.patchSpec(
          runtime,
          stopped
            ? { desiredState: "Running", config, ...culling }
            : { config, ...culling, startRequestedAt: new Date().toISOString() },
        );
        this.written(key, runtime);
        await this.recordDelegation(acting, runtime, stopped ? "resume" : "retry");
      }
      return runtime;
    })();
    this.starting.set(key, work);
    try {
      return await work;
    } finally {
      if (this.starting.get(key) === work) this.starting.delete(key);
    }
  }

  /** Remembers a start written here until the cache delivers that write (or a while has passed). */
  private written(key: string, runtime: Runtime): void {
    const resourceVersion = runtime.metadata?.resourceVersion;
    if (cacheHasCaughtUp(this.runtimes.byIndex(BY_KEY, key)[0], resourceVersion)) return;
    this.unseenStarts.expect(key, resourceVersion);
  }

  private inFlight(params: InstanceParams): { user: number; all: number } {
    // Starts written (or being written) here that the cache does not show yet; the current key excluded.
    let user = 0;
    let all = 0;
    const count = (key: string) => {
      const [u, s, i] = key.split("\n");
      if (s !== params.service || (u === params.user && i === params.instance)) return;
      all++;
      if (u === params.user) user++;
    };
    for (const [key] of this.unseenStarts.pending()) count(key);
    for (const key of this.starting.keys()) {
      if (this.unseenStarts.has(key) || this.runtimes.byIndex(BY_KEY, key).length) continue;
      count(key);
    }
    return { user, all };
  }

  private serviceRuntimes(service: string): Runtime[] {
    return this.runtimes.byIndex(BY_SERVICE, service);
  }

  private existing(params: InstanceParams): Runtime | undefined {
    return this.runtimes.byIndex(BY_KEY, keyOf(params.user, params.service, params.instance))[0];
  }

  private async create(
    placement: { namespace: string; name: string },
    spec: InstanceParams & { tenant: string; config: Record<string, unknown> } & CullingLimits,
  ): Promise<Runtime> {
    await this.ensureNamespace(placement.namespace, spec.tenant, spec.user);
    const body: Runtime = {
      apiVersion: API_VERSION,
      kind: "Runtime",
      // The controller's clean-up finalizer from the start: one write less on the way to running.
      metadata: { name: placement.name, namespace: placement.namespace, finalizers: [RUNTIME_FINALIZER] },
      spec: { ...spec, desiredState: "Running" },
    } as Runtime;
    try {
      return (await this.options.client.objects.create(body)) as Runtime;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // Another replica (or request) created it first: answer its state.
      return (await this.options.client.objects.read(body as never)) as Runtime;
    }
  }

  /**
   * The Runtime object's namespace, created when missing: in segregated mode in the user's tenant
   * and marked as the user's (the runtimes controller checks an existing one is).
   */
  private async ensureNamespace(namespace: string, tenant: string, user: string): Promise<void> {
    // An existing one (made earlier, or by another replica) is left as it is, as a create would.
    if (this.knownNamespaces.has(namespace) || this.informers.tenantNamespaces.get(undefined, namespace))
      return;
    const combined = !namespace.startsWith(`${tenant}-rt-`);
    try {
      await this.options.client.core.createNamespace({
        body: {
          metadata: {
            name: namespace,
            labels: runtimeNamespaceLabels(combined ? undefined : tenant),
            ...(combined ? {} : { annotations: runtimeNamespaceAnnotations(user) }),
          },
        },
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    this.knownNamespaces.add(namespace);
  }

  /** The plugin's check-service decides; without one, any changed parameter is incompatible. */
  private async checkCompatible(
    service: RuntimeService,
    runtime: Runtime,
    proposed: Record<string, unknown>,
  ) {
    const current = (runtime.spec.config as Record<string, unknown>) ?? {};
    const plugin = this.options.pluginOf?.(service);
    if (plugin?.checkService) {
      const result = await plugin.checkService({
        user: runtime.spec.user,
        service: runtime.spec.service,
        instance: runtime.spec.instance,
        current,
        proposed,
        state:
          runtime.spec.desiredState === "Stopped" || runtime.status?.phase === "Failed"
            ? "Stopped"
            : "Running",
      });
      if (!result.compatible) throw conflict(result.field, result.message);
      return;
    }
    for (const field of new Set([...Object.keys(current), ...Object.keys(proposed)])) {
      if (JSON.stringify(current[field]) !== JSON.stringify(proposed[field])) {
        throw conflict(
          field,
          `${field} is ${JSON.stringify(proposed[field] ?? null)} in the request but ${JSON.stringify(current[field] ?? null)} in the existing runtime; delete it first to change it`,
        );
      }
    }
  }

  private async patchSpec(runtime: Runtime, spec: Partial<Runtime["spec"]>): Promise<Runtime> {
    return this.options.client.objects.patchRaw<Runtime>(
      {
        apiVersion: API_VERSION,
        kind: "Runtime",
        metadata: { name: runtime.metadata!.name!, namespace: runtime.metadata!.namespace! },
        spec,
      } as Runtime,
      PatchStrategy.MergePatch,
    );
  }

  private tooMany(refusal: { field: string; limit: number; detail: string }): ProblemError {
    const retry = refusal.field === "instancesPerUser" ? 60 : this.retryAfter;
    return new ProblemError(
      429,
      "too many starts",
      refusal.detail,
      { field: `limits.${refusal.field}`, limit: refusal.limit },
      { "retry-after": String(retry) },
    );
  }

  // --- reading -------------------------------------------------------------------------------------

  /** The runtime `params` names, as the caller may see it (another tenant's is not found). */
  private async find(params: InstanceParams, acting: Acting): Promise<Runtime> {
    let runtime = this.existing(params);
    if (!runtime && acting.agent) {
      runtime = this.runtimes.get(acting.agent.namespace, acting.agent.runtime);
      if (
        runtime &&
        keyOf(runtime.spec.user, runtime.spec.service, runtime.spec.instance) !==
          keyOf(params.user, params.service, params.instance)
      ) {
        throw forbidden(
          `the agent of runtime ${acting.agent.namespace}/${acting.agent.runtime} may stop only its own runtime`,
        );
      }
    }
    // Just created (here or by another replica) and not yet in the cache: one read where it must be.
    if (!runtime && !acting.delegated && acting.caller.tenant) {
      runtime = await this.readPlaced(params, acting.caller.tenant);
    }
    if (!runtime || (!acting.delegated && runtime.spec.tenant !== acting.caller.tenant)) {
      throw notFound(`no runtime ${params.service}/${params.instance} of ${params.user}`);
    }
    return runtime;
  }

  private async readPlaced(params: InstanceParams, tenant: string): Promise<Runtime | undefined> {
    const service = this.services.get(undefined, params.service);
    if (!service) return undefined;
    const placement = runtimePlacement(
      { ...params, tenant },
      service.spec.namespaceMode ?? "Segregated",
      service.spec.runtimesNamespace,
    );
    try {
      const runtime = (await this.options.client.objects.read({
        apiVersion: API_VERSION,
        kind: "Runtime",
        metadata: placement,
      })) as Runtime;
      const same =
        keyOf(runtime.spec.user, runtime.spec.service, runtime.spec.instance) ===
        keyOf(params.user, params.service, params.instance);
      return same ? runtime : undefined;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  private statusOf(runtime: Runtime, request: FastifyRequest): RuntimeStatusBody {
    const { spec, status } = runtime;
    const phase = status?.phase ?? "Pending";
    const ready =
      phase === "Running" &&
      !!status?.endpoint?.url &&
      !(status.conditions ?? []).some((c) => c.type === "Ready" && c.status !== "True");
    const base = this.publicBase(request);
    const path = `/services/${encodeURIComponent(spec.user)}/${spec.service}/${spec.instance}`;
    return {
      user: spec.user,
      tenant: spec.tenant,
      service: spec.service,
      instance: spec.instance,
      namespace: runtime.metadata?.namespace ?? "",
      name: runtime.metadata?.name ?? "",
      desiredState: spec.desiredState ?? "Running",
      phase,
      ...(status?.reason ? { reason: status.reason } : {}),
      ...(status?.message ? { message: status.message } : {}),
      ready,
      ...(status?.route?.token ? { url: `${base}/r/${status.route.token}/` } : {}),
      progressUrl: `${base}${path}/progress`,
      ...(status?.cluster ? { cluster: status.cluster } : {}),
      ...(status?.endpoint?.pod ? { pod: status.endpoint.pod } : {}),
      steps: START_STEPS.map(
        (name) => status?.steps?.find((s) => s.name === name) ?? { name, state: "Pending" },
      ),
      ...(status?.startedAt ? { startedAt: status.startedAt } : {}),
      ...(status?.lastActivity ? { lastActivity: status.lastActivity } : {}),
    };
  }

  private publicBase(request: FastifyRequest): string {
    const configured = this.options.publicUrl?.();
    if (configured) return configured.replace(/\/+$/, "");
    return `${request.protocol}://${request.headers.host ?? request.host}`;
  }

  private page(items: Runtime[], query: PageQuery, request: FastifyRequest) {
    const limit = query.limit ?? DEFAULT_PAGE;
    const sortKey = (r: Runtime) => `${r.metadata?.namespace}/${r.metadata?.name}`;
    const after = query.continue ? decodeContinue(query.continue) : "";
    const sorted = items
      .filter((r) => sortKey(r) > after)
      .sort((a, b) => sortKey(a).localeCompare(sortKey(b)));
    const pageItems = sorted.slice(0, limit);
    const last = pageItems.at(-1);
    return {
      items: pageItems.map((r) => this.statusOf(r, request)),
      ...(sorted.length > limit && last
        ? { continue: Buffer.from(sortKey(last)).toString("base64url") }
        : {}),
    };
  }

  /** Server-sent events from the informer: one event per change of the runtime's steps or phase. */
  private streamProgress(
    runtime: Runtime,
    request: FastifyRequest,
    reply: FastifyReply,
    format: ProgressFormat = adminProgressEvent,
  ): void {
    const ns = runtime.metadata!.namespace!;
    const name = runtime.metadata!.name!;
    reply.hijack();
    const events = new EventStream(reply.raw);
    const emit = (current: Runtime | undefined) => {
      if (events.ended) return;
      if (!current) {
        events.send({ ready: false, failed: true, message: "the runtime was deleted" }, "deleted");
        return events.end();
      }
      const status = this.statusOf(current, request);
      const doneSteps = status.steps.filter((s) => s.state === "Done").length;
      events.sendIfChanged(
        format(status, {
          progress: Math.round((doneSteps / START_STEPS.length) * 100),
          message:
            status.steps.findLast((s) => s.state !== "Pending")?.message ??
            status.message ??
            `${status.phase}`,
        }),
      );
      // A resumed runtime is still Stopped until the controller acts: only a stop wanted ends the stream.
      const stopped = status.phase === "Stopped" && status.desiredState === "Stopped";
      if (status.ready || stopped || status.phase === "Failed" || status.phase === "Deleting") events.end();
    };
    const mine = (r: Runtime) => r.metadata?.namespace === ns && r.metadata?.name === name;
    // The handler's replay of a runtime already ready may end the stream before this returns.
    const removeHandler = this.runtimes.addHandler({
      onAdd: (r) => mine(r) && emit(r),
      onUpdate: (_o, r) => mine(r) && emit(r),
      onDelete: (r) => mine(r) && emit(undefined),
    });
    events.onEnd(removeHandler);
    emit(this.runtimes.get(ns, name) ?? runtime);
  }

  private send(reply: FastifyReply, answer: Answer) {
    for (const [k, v] of Object.entries(answer.headers ?? {})) reply.header(k, v);
    return reply.code(answer.status).send(answer.body);
  }
}

function decodeContinue(token: string): string {
  const text = Buffer.from(token, "base64url").toString("utf8");
  if (!text.includes("/")) {
    throw new ProblemError(400, "invalid request", "continue is not a token a previous page gave", {
      field: "continue",
    });
  }
  return text;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

const delegateText = () =>
  "the permission delegate on runtimes.tenantry.dev (ClusterRole tenantry:runtimes-delegate)";
const forbidden = (detail: string) => new ProblemError(403, "forbidden", detail);
const notFound = (detail: string, field?: string) =>
  new ProblemError(404, "not found", detail, field ? { field } : {});
const conflict = (field: string, detail: string) =>
  new ProblemError(409, "incompatible with the running runtime", detail, { field });

const adminProgressEvent: ProgressFormat = (status, { progress, message }) => ({
  progress,
  phase: status.phase,
  message,
  steps: status.steps,
  ready: status.ready,
  failed: status.phase === "Failed",
  ...(status.ready && status.url ? { url: status.url } : {}),
});

/** A start's own culling limits (query `idleTimeoutSeconds`, `maxAgeSeconds`): within the service's bounds. */
function cullingRequest(service: RuntimeService, query: StartQuery): CullingLimits {
  const limits: CullingLimits = {};
  for (const field of ["idleTimeoutSeconds", "maxAgeSeconds"] as const) {
    const asked = query[field];
    if (asked === undefined) continue;
    const bound = service.spec[field];
    if (bound !== undefined && asked > bound) {
      throw new ProblemError(
        400,
        "invalid request",
        `${field} ${asked} is more than service ${service.metadata?.name} allows (${bound})`,
        { field, limit: bound },
      );
    }
    limits[field] = asked;
  }
  return limits;
}

/** A running runtime keeps the culling limits it started with (changing them is a new start). */
function checkCullingUnchanged(runtime: Runtime, asked: CullingLimits): void {
  const running = runtime.spec.desiredState !== "Stopped" && runtime.status?.phase !== "Failed";
  if (!running) return;
  for (const field of ["idleTimeoutSeconds", "maxAgeSeconds"] as const) {
    if (asked[field] !== undefined && asked[field] !== runtime.spec[field]) {
      throw conflict(
        field,
        `${field} is ${asked[field]} in the request but ${runtime.spec[field] ?? "unset"} for the running runtime; stop it first to change it`,
      );
    }
  }
}

/** Starts a runtimes Admin API; its informers are synced when it resolves. */
export async function startRuntimesAdmin(options: RuntimesAdminOptions): Promise<RuntimesAdmin> {
  const admin = new RuntimesAdmin(options);
  await admin.start();
  return admin;
}

/** A runtime's `spec.access` with both lists, each without repeats. */
function accessBody(access: RuntimeAccess | undefined): { users: string[]; groups: string[] } {
  return { users: [...new Set(access?.users ?? [])], groups: [...new Set(access?.groups ?? [])] };
}
