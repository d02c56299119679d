import { existsSync } from "node:fs";
import type { AddressInfo } from "node:net";
import cookie from "@fastify/cookie";
import fastifyStatic from "@fastify/static";
import type { V1Namespace } from "@kubernetes/client-node";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { Agent, fetch as undiciFetch } from "undici";
import type { CloudInformers } from "../clouds/index.js";
import type { ClusterRegistry } from "../clusters/index.js";
import { type Authenticator, kubernetesUserOf, LOGIN_PATH } from "../identity/index.js";
import type { ClusterClient, Informer } from "../kube/index.js";
import type { Nodes } from "../nodes/index.js";
import type { RuntimesInformers } from "../runtimes/index.js";
import type { Tenant, TenantInformers } from "../tenants/index.js";
import { TENANT_LABEL } from "../tenants/index.js";
import { AccessReviewer, memberTenants } from "./access.js";
import { ActionError, Actions, type ApiDoor, actionErrorOf, RuntimesClient } from "./actions.js";
import { UsageHistory } from "./history.js";
import { CSRF_HEADER, csrfMatches, SESSION_COOKIE, type Session, SessionStore } from "./sessions.js";
import {
  alertsOf,
  clusterView,
  logicalCloudView,
  ownerCreatedNamespaces,
  quotaRows,
  tenantDetail,
  tenantPage,
  workerNodeView,
} from "./views.js";

export interface DashboardOptions {
  client: ClusterClient;
  informers: TenantInformers;
  clusterRegistry: ClusterRegistry;
  cloudInformers: CloudInformers;
  runtimesInformers: RuntimesInformers;
  nodes: Nodes;
  authenticator: Authenticator;
  /** tenantry's identity REST API (password login) and the CA of its certificate. */
  access: { url: string; caPem: string };
  /** Where a person's own requests go: the tenant gateway (as `tenantry login`'s kubeconfigs), else the API server. */
  door: ApiDoor;
  /** The runtimes Admin API, when running. */
  runtimesAdminUrl: () => string | undefined;
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
  const runtimes = new RuntimesClient(options.runtimesAdminUrl);
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
    ...(
      [
        [options.clusterRegistry.clusters, "clusters"],
        [options.nodes.informers.workerNodes, "nodes"],
        [options.cloudInformers.clouds, "clouds"],
        [options.runtimesInformers.runtimes, "runtimes"],
      ] as unknown as [Informer<never>, string][]
    ).map(([informer, kind]) => informer.addHandler(notify(kind))),
  ];

  const app = Fastify({ loggerInstance: logger.child({ component: "dashboard" }), bodyLimit: 64 * 1024 });
  await app.register(cookie);

  const sessionOf = (request: FastifyRequest): Session | undefined =>
    sessions.get(request.cookies[SESSION_COOKIE]);
  const fail = (reply: FastifyReply, status: number, message: string, field?: string) =>
    reply.code(status).send({ error: { status, message, ...(field ? { field } : {}) } });

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
  app.setErrorHandler((err, _request, reply) => {
    const error = actionErrorOf(err);
    if (error.status >= 500) logger.warn({ err }, "dashboard request failed");
    return fail(reply, error.status, error.message, error.field);
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
    const query = request.query as { offset?: string; limit?: string; filter?: string };
    const offset = Math.max(0, Number.parseInt(query.offset ?? "0", 10) || 0);
    const limit = Math.min(MAX_PAGE, Math.max(1, Number.parseInt(query.limit ?? "50", 10) || 50));
    const tenants = await visibleTenants(s);
    const seesClusters = await reviewer.allowed(s.user, {
      verb: "list",
      group: "tenantry.dev",
      resource: "clusters",
    });
    const clusters = seesClusters ? options.clusterRegistry.list() : [];
    const nodes = await visibleNodes(s, tenants);
    return {
      tenants: tenantPage(
        tenants,
        { ...(query.filter ? { filter: query.filter } : {}), offset, limit },
        ownerNamespacesOf,
      ),
      clusters: seesClusters ? clusters.map(clusterView) : null,
      alerts: alertsOf({ tenants, clusters, nodes }),
    };
  });

  app.get("/api/tenants/:name", async (request, reply) => {
    const s = session(request);
    const { name } = request.params as { name: string };
    const tenant = await seesTenant(s, name);
    if (!tenant) return fail(reply, 404, `tenant "${name}" not found`);
    return tenantDetail(tenant, informers.namespacesOf(name), history.of(name));
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

  app.get("/api/clusters", async (request, reply) => {
    const s = session(request);
    if (!(await reviewer.allowed(s.user, { verb: "list", group: "tenantry.dev", resource: "clusters" })))
      return fail(reply, 403, "you may not list the cluster registry (clusters.tenantry.dev)");
    return { items: options.clusterRegistry.list().map(clusterView) };
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
        .map(logicalCloudView)
        .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`)),
    };
  });

  app.get("/api/runtimes", async (request) => {
    const s = session(request);
    const list = (await runtimes.call(
      s.token,
      "GET",
      `/services/${encodeURIComponent(s.user.username)}?limit=500`,
    )) as object;
    return {
      ...list,
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

  app.post("/api/runtimes/:service/:instance/:action", async (request, reply) => {
    const s = session(request);
    const { service, instance, action } = request.params as {
      service: string;
      instance: string;
      action: string;
    };
    const path = `/services/${encodeURIComponent(s.user.username)}/${encodeURIComponent(service)}/${encodeURIComponent(instance)}`;
    if (action === "start") return runtimes.call(s.token, "POST", path, request.body ?? {});
    if (action === "stop") return runtimes.call(s.token, "DELETE", `${path}/stop`);
    return fail(reply, 404, `no action "${action}": start or stop`);
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
      reply
        .code(503)
        .type("text/plain")
        .send(
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
      await loginAgent.close();
    },
  };
}

export { ActionError };
