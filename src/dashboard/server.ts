import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import cookie from "@fastify/cookie";
import fastifyStatic from "@fastify/static";
import type { KubernetesObject, V1Namespace, V1Pod } from "@kubernetes/client-node";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { Agent, fetch as undiciFetch } from "undici";
import type { AccessGrant } from "../access/index.js";
import type { RuntimeBackup, RuntimeRestore } from "../backup/index.js";
import { type CloudInformers, projectNamespace } from "../clouds/index.js";
import type { ClusterRegistry } from "../clusters/index.js";
import {
  ProblemError,
  problemServerOptions,
  replyProblem,
  serveProblems,
  statusTitle,
} from "../common/index.js";
import { type Authenticator, kubernetesUserOf, LOGIN_PATH } from "../identity/index.js";
import {
  type ClusterClient,
  componentCache,
  type Informer,
  type InformerCache,
  startInformers,
} from "../kube/index.js";
import type { MonitorRule } from "../monitor/index.js";
import type { MulticlusterInformers } from "../multicluster/index.js";
import type { Nodes } from "../nodes/index.js";
import { ON_BEHALF_OF_HEADER, type RuntimesInformers } from "../runtimes/index.js";
import { TENANT_LABEL, TENANTS_API_VERSION, type Tenant, type TenantInformers } from "../tenants/index.js";
import { AccessReviewer, memberTenants } from "./access.js";
import { ActionError, Actions, type ApiDoor, actionErrorOf, RestClient } from "./actions.js";
import { UsageHistory } from "./history.js";
import type { BackupView, ClustersAnswer, RuntimesAnswer, RuntimeView } from "./model.js";
import { CSRF_HEADER, csrfMatches, SESSION_COOKIE, type Session, SessionStore } from "./sessions.js";
import {
  accessGrantView,
  alertsOf,
  backupView,
  clusterView,
  logicalCloudView,
  monitorAlerts,
  offloadingView,
  ownerCreatedNamespaces,
  type PageQuery,
  pageOf,
  peeringView,
  quotaRows,
  tenantDetail,
  tenantPage,
  userUsage,
  workerNodeView,
} from "./views.js";

export interface DashboardOptions {
  client: ClusterClient;
  /** The process's shared cache; without it the dashboard watches what it reads on its own. */
  cache?: InformerCache;
  informers: TenantInformers;
  clusterRegistry: ClusterRegistry;
  cloudInformers: CloudInformers;
  runtimesInformers: RuntimesInformers;
  /** Peerings, virtual nodes and NamespaceOffloadings. */
  multicluster: MulticlusterInformers;
  /** The authorization webhook's AccessGrants. */
  grants: Informer<AccessGrant>;
  nodes: Nodes;
  authenticator: Authenticator;
  /** tenantry's identity REST API (password login) and the CA of its certificate. */
  access: { url: string; caPem: string };
  /** Where a person's own requests go: the tenant gateway (as `tenantry login`'s kubeconfigs), else the API server. */
  door: ApiDoor;
  /** The runtimes Admin API, when running. */
  runtimesAdminUrl: () => string | undefined;
  /** The logical clouds' DCM API and the CA of its certificate, when running. */
  logicalCloudsApi: () => { url: string; caPem: string } | undefined;
  /** The built client (index.html and its assets). */
  assetsDir: string;
  host?: string;
  port?: number;
  /** Longest session (default 8 h; never past the token's own expiry). */
  sessionTtlMs?: number;
  logger: Logger;
}

export interface RunningDashboard {
  url: string;
  stop(): Promise<void>;
}

const MAX_PAGE = 200;
/** Forms and their JSON: small. */
const BODY_LIMIT = 64 * 1024;

/** offset, limit and filter of a paged list's query string, bounded. */
function pageQuery(query: unknown, defaultLimit = 50): PageQuery {
  const q = (query ?? {}) as { offset?: string; limit?: string; filter?: string };
  return {
    offset: Math.max(0, Number.parseInt(q.offset ?? "0", 10) || 0),
    limit: Math.min(
      MAX_PAGE,
      Math.max(1, Number.parseInt(q.limit ?? String(defaultLimit), 10) || defaultLimit),
    ),
    ...(q.filter ? { filter: q.filter } : {}),
  };
}

// Named after their reader: the cache's informers, and their indexes, are shared.
const BY_TENANT = "dashboard/tenant";
const BY_RUNTIME = "dashboard/runtime";
const BY_BACKUP = "dashboard/backup";

interface Listener {
  session: Session;
  send(event: { kind: string; name?: string }): void;
  end(): void;
}

/**
 * The web dashboard: the built client and a JSON API over tenantry's caches. People log in with
 * tenantry's identity service; reads show what they may see (SubjectAccessReviews as them, the
 * gateway's tenant rule), writes are made with their own token; server-sent events tell open pages
 * what changed, from the informers' events.
 */
export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const { informers, logger } = options;
  const sessions = new SessionStore();
  const reviewer = new AccessReviewer(options.client);
  const history = new UsageHistory();
  const actions = new Actions(options.door);
  const runtimes = new RestClient("the runtimes Admin API", () => {
    const url = options.runtimesAdminUrl();
    return url ? { url } : undefined;
  });
  const dcm = new RestClient("the logical clouds API", options.logicalCloudsApi);
  const { multicluster } = options;
  // The dashboard's own caches: tenants' pods (per-user usage), runtime backups and restores, monitor rules.
  const { cache, release } = componentCache(options);
  const pods = cache.informer<V1Pod>({
    apiVersion: "v1",
    kind: "Pod",
    labelSelector: TENANT_LABEL,
  });
  pods.addIndex(BY_TENANT, (pod) => [pod.metadata?.labels?.[TENANT_LABEL] ?? ""]);
  const backups = cache.informer<RuntimeBackup>({
    apiVersion: TENANTS_API_VERSION,
    kind: "RuntimeBackup",
  });
  backups.addIndex(BY_RUNTIME, (b) => [`${b.metadata?.namespace}/${b.spec.runtime}`]);
  const restores = cache.informer<RuntimeRestore>({
    apiVersion: TENANTS_API_VERSION,
    kind: "RuntimeRestore",
  });
  restores.addIndex(BY_BACKUP, (r) => [`${r.metadata?.namespace}/${r.spec.backup}`]);
  const monitorRules = cache.informer<MonitorRule>({
    apiVersion: TENANTS_API_VERSION,
    kind: "MonitorRule",
  });
  const ownInformers = [pods, backups, restores, monitorRules] as unknown as Informer<KubernetesObject>[];
  await startInformers(ownInformers);
  const loginAgent = new Agent({ connect: { ca: options.access.caPem } });
  const listeners = new Set<Listener>();
  const secure = false;

  const ownerNamespacesOf = (tenant: string) => ownerCreatedNamespaces(informers.namespacesOf(tenant));
  const recordUsage = (tenant: Tenant) => {
    history.record(
      tenant.metadata!.name!,
      Object.fromEntries(
        quotaRows(tenant, ownerNamespacesOf(tenant.metadata!.name!)).map((r) => [
          r.resource,
          { used: r.usedValue, hard: r.hardValue },
        ]),
      ),
      Date.now(),
    );
  };

  const visibleTenants = async (session: Session): Promise<Tenant[]> =>
    (await reviewer.seesAllTenants(session.user))
      ? informers.tenants.list()
      : memberTenants(informers, session.user, session.identity.tenant);
  const seesTenant = async (session: Session, name: string): Promise<Tenant | undefined> => {
    const tenant = informers.tenants.get(undefined, name);
    if (!tenant) return undefined;
    if (await reviewer.seesAllTenants(session.user)) return tenant;
    return memberTenants(informers, session.user, session.identity.tenant).find(
      (t) => t.metadata!.name === name,
    );
  };

  /** The tenant a namespace belongs to, from its label (the namespace cache). */
  const tenantOfNamespace = (namespace: string | undefined) =>
    namespace
      ? informers.tenantNamespaces.get(undefined, namespace)?.metadata?.labels?.[TENANT_LABEL]
      : undefined;
  /** Whether the person sees every tenant, else the names of those they see. */
  const tenantScope = async (s: Session): Promise<{ all: boolean; names: Set<string> }> =>
    (await reviewer.seesAllTenants(s.user))
      ? { all: true, names: new Set() }
      : { all: false, names: new Set((await visibleTenants(s)).map((t) => t.metadata!.name!)) };

  // Live updates: an informer event becomes a "change" event for every open page that may see it.
  const notify = (kind: string) => ({
    onAdd: () => broadcast(kind),
    onUpdate: () => broadcast(kind),
    onDelete: () => broadcast(kind),
  });
  const broadcast = (kind: string, tenant?: string) => {
    for (const listener of listeners) {
      if (!tenant) {
        listener.send({ kind });
        continue;
      }
      void seesTenant(listener.session, tenant).then(
        (seen) => seen && listener.send({ kind, name: tenant }),
        () => undefined,
      );
    }
  };
  const removers = [
    informers.tenants.addHandler({
      onAdd: (t) => {
        recordUsage(t);
        broadcast("tenants", t.metadata!.name!);
      },
      onUpdate: (_o, t) => {
        recordUsage(t);
        broadcast("tenants", t.metadata!.name!);
      },
      onDelete: (t) => {
        history.forget(t.metadata!.name!);
        broadcast("tenants", t.metadata!.name!);
      },
    }),
    // A tenant's namespaces count against its namespace quota: their events move its usage too.
    informers.tenantNamespaces.addHandler(
      (() => {
        const changed = (ns: V1Namespace) => {
          const name = ns.metadata?.labels?.[TENANT_LABEL];
          const tenant = name ? informers.tenants.get(undefined, name) : undefined;
          if (!tenant) return;
          recordUsage(tenant);
          broadcast("tenants", name);
        };
        return {
          onAdd: changed,
          onUpdate: (_old: V1Namespace, ns: V1Namespace) => changed(ns),
          onDelete: changed,
        };
      })(),
    ),
    // A tenant's pods move its users' usage, its namespaces' AccessGrants its grants.
    ...([pods, options.grants] as unknown as Informer<KubernetesObject>[]).map((informer) =>
      informer.addHandler(
        (() => {
          const changed = (obj: KubernetesObject) => {
            const tenant = obj.metadata?.labels?.[TENANT_LABEL] ?? tenantOfNamespace(obj.metadata?.namespace);
            // Its own kind: the overview (listening for "tenants") need not follow every pod.
            if (tenant) broadcast("tenant-details", tenant);
          };
          return {
            onAdd: changed,
            onUpdate: (_old: KubernetesObject, obj: KubernetesObject) => changed(obj),
            onDelete: changed,
          };
        })(),
      ),
    ),
    ...(
      [
        [options.clusterRegistry.clusters, "clusters"],
        [multicluster.peerings, "clusters"],
        [multicluster.virtualNodes, "clusters"],
        [multicluster.offloadings, "offloading"],
        [options.nodes.informers.workerNodes, "nodes"],
        [options.cloudInformers.clouds, "clouds"],
        [options.runtimesInformers.runtimes, "runtimes"],
        [backups, "runtimes"],
        [restores, "runtimes"],
        [monitorRules, "alerts"],
      ] as unknown as [Informer<never>, string][]
    ).map(([informer, kind]) => informer.addHandler(notify(kind))),
  ];

  const app = Fastify({
    loggerInstance: logger.child({ component: "dashboard" }),
    ...problemServerOptions({ bodyLimit: BODY_LIMIT }),
    // @fastify/static walks the built assets when registered: on a busy machine that outlasted
    // Fastify's default 10 s and tenantry exited at start.
    pluginTimeout: 120_000,
  });
  await app.register(cookie);

  const sessionOf = (request: FastifyRequest): Session | undefined =>
    sessions.get(request.cookies[SESSION_COOKIE]);
  const fail = (reply: FastifyReply, status: number, message: string, field?: string) =>
    replyProblem(reply, new ProblemError(status, statusTitle(status), message, { field }));

  // Every /api request but login needs a session; mutating ones also the session's CSRF token, and
  // a JSON body (a cross-site form cannot send one without the browser asking first).
  app.addHook("onRequest", async (request, reply) => {
    if (!request.url.startsWith("/api/")) return;
    const mutating = request.method !== "GET" && request.method !== "HEAD";
    const origin = request.headers.origin;
    if (
      mutating &&
      origin &&
      origin !== `http://${request.headers.host}` &&
      origin !== `https://${request.headers.host}`
    )
      return fail(reply, 403, `requests from origin ${origin} are not accepted`);
    if (request.url === "/api/login") return;
    const session = sessionOf(request);
    if (!session) return fail(reply, 401, "not logged in (or the session expired): log in again");
    if (mutating && !csrfMatches(session, request.headers[CSRF_HEADER]))
      return fail(reply, 403, `missing or wrong ${CSRF_HEADER} header (reload the page)`);
    (request as FastifyRequest & { session?: Session }).session = session;
  });
  const session = (request: FastifyRequest) => (request as FastifyRequest & { session: Session }).session;
  app.addHook("onSend", async (_request, reply) => {
    reply.header(
      "content-security-policy",
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
    reply.header("x-content-type-options", "nosniff");
    reply.header("referrer-policy", "no-referrer");
  });
  serveProblems(app as unknown as FastifyInstance, {
    bodyLimit: BODY_LIMIT,
    // Pages are the client's routes (below); /api/* has its own 404.
    ownNotFound: true,
    // Refusals of what a person asked for, passed on with the field they name (Fastify's own have a statusCode).
    translate: (err) => {
      if ((err as { statusCode?: number }).statusCode !== undefined) return undefined;
      const error = actionErrorOf(err);
      return new ProblemError(error.status, statusTitle(error.status), error.message, { field: error.field });
    },
    logger,
    what: "dashboard request",
  });

  const describeSession = async (s: Session) => ({
    username: s.user.username,
    tenant: s.identity.tenant ?? null,
    operator: await reviewer.seesAllTenants(s.user),
    csrf: s.csrf,
  });

  app.post("/api/login", async (request, reply) => {
    if (!request.headers["content-type"]?.startsWith("application/json"))
      return fail(reply, 415, "send the credentials as application/json");
    const body = (request.body ?? {}) as { username?: unknown; password?: unknown };
    if (typeof body.username !== "string" || !body.username)
      return fail(reply, 400, "username: required", "username");
    if (typeof body.password !== "string" || !body.password)
      return fail(reply, 400, "password: required", "password");
    // The identity service's own login (its throttling and first-login provisioning included).
    const res = await undiciFetch(`${options.access.url}${LOGIN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": request.ip },
      body: JSON.stringify({ username: body.username, password: body.password }),
      dispatcher: loginAgent,
    });
    const answer = (await res.json().catch(() => ({}))) as {
      token?: string;
      detail?: string;
      title?: string;
    };
    if (!res.ok || !answer.token)
      return fail(
        reply,
        res.status >= 400 ? res.status : 502,
        answer.detail ?? answer.title ?? `login failed (HTTP ${res.status})`,
      );
    const authentication = await options.authenticator.authenticate(answer.token);
    if (!authentication.authenticated) return fail(reply, 401, authentication.reason);
    const created = sessions.create(
      answer.token,
      authentication.identity,
      kubernetesUserOf(authentication.identity),
      options.sessionTtlMs ?? 8 * 3600_000,
    );
    reply.setCookie(SESSION_COOKIE, created.id, {
      httpOnly: true,
      sameSite: "strict",
      secure,
      path: "/",
      maxAge: Math.max(1, Math.floor((created.expiresAt - Date.now()) / 1000)),
    });
    return describeSession(created);
  });

  app.post("/api/logout", async (request, reply) => {
    sessions.delete(session(request).id);
    reply.clearCookie(SESSION_COOKIE, { path: "/" });
    return { ok: true };
  });

  app.get("/api/session", async (request) => describeSession(session(request)));

  app.get("/api/overview", async (request) => {
    const s = session(request);
    const tenants = await visibleTenants(s);
    const seesAll = await reviewer.seesAllTenants(s.user);
    const seesClusters = await reviewer.allowed(s.user, {
      verb: "list",
      group: "tenantry.dev",
      resource: "clusters",
    });
    const clusters = seesClusters ? options.clusterRegistry.list() : [];
    const nodes = await visibleNodes(s, tenants);
    const names = new Set(tenants.map((t) => t.metadata!.name!));
    return {
      tenants: tenantPage(tenants, pageQuery(request.query), ownerNamespacesOf),
      clusters: seesClusters ? clusters.map(clusterView) : null,
      alerts: [
        ...alertsOf({ tenants, clusters, nodes }),
        ...monitorAlerts(monitorRules.list(), seesAll, (tenant) => names.has(tenant)),
      ],
    };
  });

  app.post("/api/tenants", async (request, reply) =>
    reply.code(201).send(await actions.createTenant(session(request).token, (request.body ?? {}) as object)),
  );

  app.get("/api/tenants/:name", async (request, reply) => {
    const s = session(request);
    const { name } = request.params as { name: string };
    const tenant = await seesTenant(s, name);
    if (!tenant) return fail(reply, 404, `tenant "${name}" not found`);
    const namespaces = informers.namespacesOf(name);
    const inTenant = new Set(namespaces.map((n) => n.metadata!.name!));
    return tenantDetail({
      tenant,
      namespaces,
      query: pageQuery(request.query),
      history: history.of(name),
      usage: userUsage(pods.byIndex(BY_TENANT, name)),
      grants: options.grants
        .list()
        .filter((g) => inTenant.has(g.metadata!.namespace!))
        .map(accessGrantView)
        .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)),
    });
  });

  app.post("/api/tenants/:name/namespaces", async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!(await seesTenant(session(request), name))) return fail(reply, 404, `tenant "${name}" not found`);
    return reply
      .code(201)
      .send(await actions.createNamespace(session(request).token, name, (request.body ?? {}) as object));
  });

  app.post("/api/tenants/:name/owners", async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!(await seesTenant(session(request), name))) return fail(reply, 404, `tenant "${name}" not found`);
    await actions.addOwner(session(request).token, name, (request.body ?? {}) as object);
    return { ok: true };
  });

  app.post("/api/tenants/:name/grants", async (request, reply) => {
    const { name } = request.params as { name: string };
    if (!(await seesTenant(session(request), name))) return fail(reply, 404, `tenant "${name}" not found`);
    const body = (request.body ?? {}) as { namespace?: unknown };
    if (typeof body.namespace === "string" && body.namespace && tenantOfNamespace(body.namespace) !== name)
      throw new ActionError(
        400,
        `metadata.namespace: "${body.namespace}" is not a namespace of tenant "${name}"`,
        "metadata.namespace",
      );
    return reply.code(201).send(await actions.grantAccess(session(request).token, body));
  });

  app.delete("/api/tenants/:name/grants/:namespace/:grant", async (request, reply) => {
    const { name, namespace, grant } = request.params as { name: string; namespace: string; grant: string };
    if (!(await seesTenant(session(request), name)) || tenantOfNamespace(namespace) !== name)
      return fail(reply, 404, `no AccessGrant "${grant}" in a namespace of tenant "${name}"`);
    await actions.revokeGrant(session(request).token, namespace, grant);
    return { ok: true };
  });

  app.get("/api/clusters", async (request, reply): Promise<ClustersAnswer> => {
    const s = session(request);
    const [seesRegistry, seesPeerings] = await Promise.all(
      ["clusters", "peerings"].map((resource) =>
        reviewer.allowed(s.user, { verb: "list", group: "tenantry.dev", resource }),
      ),
    );
    if (!seesRegistry && !seesPeerings)
      return fail(
        reply,
        403,
        "you may list neither the cluster registry (clusters.tenantry.dev) nor peerings",
      );
    return {
      items: seesRegistry ? options.clusterRegistry.list().map(clusterView) : null,
      peerings: seesPeerings
        ? multicluster.peerings
            .list()
            .map((p) =>
              peeringView(
                p,
                p.status?.virtualNode
                  ? multicluster.virtualNodes.get(undefined, p.status.virtualNode)
                  : undefined,
              ),
            )
            .sort((a, b) => a.name.localeCompare(b.name))
        : null,
    };
  });

  app.get("/api/offloading", async (request) => {
    const scope = await tenantScope(session(request));
    const visible = multicluster.offloadings.list().flatMap((o) => {
      const tenant = tenantOfNamespace(o.metadata!.namespace!) ?? "";
      return scope.all || scope.names.has(tenant) ? [{ offloading: o, tenant }] : [];
    });
    return pageOf(
      visible,
      (v) => v.offloading.metadata!.namespace!,
      pageQuery(request.query),
      (v) => offloadingView(v.offloading, v.tenant),
    );
  });

  const visibleNodes = async (s: Session, tenants?: Tenant[]) => {
    const workerNodes = options.nodes.informers.workerNodes;
    if (await reviewer.seesAllTenants(s.user)) return workerNodes.list();
    const mine = new Map<string, ReturnType<typeof workerNodes.list>[number]>();
    for (const tenant of tenants ?? (await visibleTenants(s)))
      for (const node of options.nodes.informers.nodesOfTenant(tenant.metadata!.name!))
        mine.set(node.metadata!.name!, node);
    return [...mine.values()];
  };

  app.get("/api/nodes", async (request) => {
    const s = session(request);
    const nodes = await visibleNodes(s);
    return {
      items: nodes.map(workerNodeView).sort((a, b) => a.name.localeCompare(b.name)),
      providers: options.nodes.informers.providers.list().map((p) => ({
        name: p.metadata!.name!,
        flavors: (p.status?.flavors ?? []).map((f) => f.name),
      })),
    };
  });

  app.post("/api/nodes", async (request, reply) =>
    reply.code(201).send(await actions.requestNode(session(request).token, (request.body ?? {}) as object)),
  );

  /** The project whose namespace holds a logical cloud (the DCM API names clouds by project). */
  const projectOf = (namespace: string) =>
    options.cloudInformers.projects.list().find((p) => projectNamespace(p.metadata!.name!) === namespace)
      ?.metadata?.name ?? "";

  app.get("/api/clouds", async (request) => {
    const s = session(request);
    const clouds = options.cloudInformers.clouds.list();
    const namespaces = [...new Set(clouds.map((c) => c.metadata!.namespace!))];
    const allowed = new Set<string>();
    for (const namespace of namespaces) {
      if (
        await reviewer.allowed(s.user, {
          verb: "list",
          group: "tenantry.dev",
          resource: "logicalclouds",
          namespace,
        })
      )
        allowed.add(namespace);
    }
    return {
      items: clouds
        .filter((c) => allowed.has(c.metadata!.namespace!))
        .map((c) => logicalCloudView(c, projectOf(c.metadata!.namespace!)))
        .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)),
    };
  });

  // `tenantry cloud kubeconfig`: the DCM API's own download, asked with the person's token.
  app.get("/api/clouds/:project/:name/kubeconfig", async (request, reply) => {
    const { project, name } = request.params as { project: string; name: string };
    const { user } = request.query as { user?: string };
    const text = await dcm.call(
      session(request).token,
      "GET",
      `/v2/projects/${encodeURIComponent(project)}/logical-clouds/${encodeURIComponent(name)}/kubeconfig${user ? `?user=${encodeURIComponent(user)}` : ""}`,
    );
    return reply
      .type("application/yaml")
      .header("content-disposition", `attachment; filename="${project}-${name}.kubeconfig"`)
      .header("cache-control", "no-store")
      .send(String(text));
  });

  /** The runtimes the person sees through the Admin API: an operator's every user's, else their own. */
  const runtimesOf = async (s: Session): Promise<RuntimeView[]> => {
    const path = (await reviewer.seesAllTenants(s.user))
      ? "/services?limit=500"
      : `/services/${encodeURIComponent(s.user.username)}?limit=500`;
    return ((await runtimes.call(s.token, "GET", path)) as { items: RuntimeView[] }).items;
  };
  const backupsOf = (r: { namespace: string; name: string }): BackupView[] =>
    backups
      .byIndex(BY_RUNTIME, `${r.namespace}/${r.name}`)
      .map((b) => backupView(b, restores.byIndex(BY_BACKUP, `${r.namespace}/${b.metadata!.name}`)))
      .sort((a, b) => b.created.localeCompare(a.created) || b.name.localeCompare(a.name));

  app.get("/api/runtimes", async (request): Promise<RuntimesAnswer> => {
    const items = await runtimesOf(session(request));
    return {
      items,
      backups: Object.fromEntries(items.map((r) => [`${r.namespace}/${r.name}`, backupsOf(r)])),
      services: options.runtimesInformers.services
        .list()
        .map((r) => r.metadata!.name!)
        .sort(),
    };
  });

  app.post("/api/runtimes", async (request) => {
    const s = session(request);
    const body = (request.body ?? {}) as { service?: unknown; instance?: unknown };
    for (const field of ["service", "instance"] as const) {
      if (typeof body[field] !== "string" || !body[field])
        throw new ActionError(400, `${field}: required`, field);
    }
    return runtimes.call(
      s.token,
      "POST",
      `/services/${encodeURIComponent(s.user.username)}/${encodeURIComponent(String(body.service))}/${encodeURIComponent(String(body.instance))}`,
      {},
    );
  });

  app.post("/api/runtimes/:user/:service/:instance/:action", async (request, reply) => {
    const s = session(request);
    const { user, service, instance, action } = request.params as {
      user: string;
      service: string;
      instance: string;
      action: string;
    };
    const path = `/services/${encodeURIComponent(user)}/${encodeURIComponent(service)}/${encodeURIComponent(instance)}`;
    // Another user's runtime (an operator's page): the Admin API's delegation, which it checks.
    const onBehalf: Record<string, string> = user === s.user.username ? {} : { [ON_BEHALF_OF_HEADER]: user };
    if (action === "start") return runtimes.call(s.token, "POST", path, {}, onBehalf);
    if (action === "stop") return runtimes.call(s.token, "DELETE", `${path}/stop`, undefined, onBehalf);
    if (action === "delete") return runtimes.call(s.token, "DELETE", path, undefined, onBehalf);
    if (action !== "backup" && action !== "restore")
      return fail(reply, 404, `no action "${action}": start, stop, delete, backup or restore`);
    // Backups are Kubernetes objects beside the Runtime, made as the person (as `tenantry runtime
    // backup` does with the person's kubeconfig): only of a runtime the Admin API shows them.
    const runtime = (await runtimesOf(s)).find(
      (r) => r.user === user && r.service === service && r.instance === instance,
    );
    if (!runtime) return fail(reply, 404, `runtime ${service}/${instance} of ${user} not found`);
    if (action === "backup") return reply.code(201).send(await actions.backUp(s.token, runtime));
    const body = (request.body ?? {}) as { backup?: unknown };
    if (typeof body.backup !== "string" || !backupsOf(runtime).some((b) => b.name === body.backup))
      throw new ActionError(400, `backup: not a backup of ${service}/${instance}`, "backup");
    return reply.code(201).send(await actions.restore(s.token, runtime.namespace, body.backup));
  });

  app.get("/api/events", async (request, reply) => {
    const s = session(request);
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-content-type-options": "nosniff",
    });
    res.write("retry: 2000\n\n");
    // Changes arriving together are sent together, at most once per 200 ms.
    let pending = new Map<string, { kind: string; name?: string }>();
    let timer: NodeJS.Timeout | undefined;
    const listener: Listener = {
      session: s,
      send(event) {
        pending.set(`${event.kind}/${event.name ?? ""}`, event);
        timer ??= setTimeout(() => {
          timer = undefined;
          const batch = [...pending.values()];
          pending = new Map();
          if (sessions.get(s.id)) res.write(`event: change\ndata: ${JSON.stringify(batch)}\n\n`);
          else res.end();
        }, 200);
      },
      end: () => res.end(),
    };
    listeners.add(listener);
    const keepAlive = setInterval(() => res.write(": keep-alive\n\n"), 25_000);
    request.raw.on("close", () => {
      listeners.delete(listener);
      clearInterval(keepAlive);
      if (timer) clearTimeout(timer);
    });
  });

  app.all("/api/*", async (_request, reply) => fail(reply, 404, "no such API"));

  if (existsSync(`${options.assetsDir}/index.html`)) {
    await app.register(fastifyStatic, { root: options.assetsDir, wildcard: false, index: "index.html" });
    // Pages are the client's routes: every other GET gets the application.
    app.setNotFoundHandler((request, reply) => {
      if (request.method !== "GET") return fail(reply, 404, "not found");
      return reply.sendFile("index.html");
    });
  } else {
    app.setNotFoundHandler((_request, reply) =>
      fail(
        reply,
        503,
        `the dashboard's client is not built (${options.assetsDir}): run npx tsx scripts/dashboard-build.ts`,
      ),
    );
  }

  await app.listen({ host: options.host ?? "127.0.0.1", port: options.port ?? 0 });
  const address = app.server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  logger.info({ url }, "dashboard serving");
  return {
    url,
    async stop() {
      for (const remove of removers) remove();
      for (const listener of listeners) listener.end();
      listeners.clear();
      await app.close();
      await Promise.all([loginAgent.close(), runtimes.close(), dcm.close(), release()]);
    },
  };
}

export { ActionError };
