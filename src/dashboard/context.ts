import type { KubernetesObject, V1Pod } from "@kubernetes/client-node";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { Agent } from "undici";
import type { AccessGrant } from "../access/index.js";
import type { RuntimeBackup, RuntimeRestore } from "../backup/index.js";
import { type CloudInformers, projectNamespace } from "../clouds/index.js";
import type { ClusterRegistry } from "../clusters/index.js";
import { ProblemError, replyProblem, statusTitle } from "../common/index.js";
import type { Authenticator } from "../identity/index.js";
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
import type { RuntimesInformers } from "../runtimes/index.js";
import { TENANT_LABEL, TENANTS_API_VERSION, type Tenant, type TenantInformers } from "../tenants/index.js";
import { AccessReviewer, memberTenants } from "./access.js";
import { Actions, type ApiDoor, RestClient } from "./actions.js";
import { UsageHistory } from "./history.js";
import type { BackupView, RuntimeView } from "./model.js";
import { type Session, SessionStore } from "./sessions.js";
import { backupView, ownerCreatedNamespaces, type PageQuery, quotaRows } from "./views.js";

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

/** An open page's event stream. */
export interface Listener {
  session: Session;
  send(event: { kind: string; name?: string }): void;
  end(): void;
}

const MAX_PAGE = 200;

/** offset, limit and filter of a paged list's query string, bounded. */
export function pageQuery(query: unknown, defaultLimit = 50): PageQuery {
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
export const BY_TENANT = "dashboard/tenant";
const BY_RUNTIME = "dashboard/runtime";
const BY_BACKUP = "dashboard/backup";

/**
 * What the dashboard's routes share: the sessions, the caches they read (the app's and the
 * dashboard's own: tenants' pods, runtime backups and restores, monitor rules), the clients of the
 * APIs they call as the person, and the questions every page asks (which tenants does this person
 * see, which tenant holds this namespace).
 */
export class DashboardContext {
  readonly sessions = new SessionStore();
  readonly reviewer: AccessReviewer;
  readonly history = new UsageHistory();
  readonly actions: Actions;
  readonly runtimes: RestClient;
  readonly dcm: RestClient;
  readonly loginAgent: Agent;
  readonly listeners = new Set<Listener>();

  private constructor(
    readonly options: DashboardOptions,
    readonly pods: Informer<V1Pod>,
    readonly backups: Informer<RuntimeBackup>,
    readonly restores: Informer<RuntimeRestore>,
    readonly monitorRules: Informer<MonitorRule>,
    private readonly releaseCache: () => Promise<void>,
  ) {
    this.reviewer = new AccessReviewer(options.client);
    this.actions = new Actions(options.door);
    this.runtimes = new RestClient("the runtimes Admin API", () => {
      const url = options.runtimesAdminUrl();
      return url ? { url } : undefined;
    });
    this.dcm = new RestClient("the logical clouds API", options.logicalCloudsApi);
    this.loginAgent = new Agent({ connect: { ca: options.access.caPem } });
  }

  /** The context with the dashboard's own informers started. */
  static async create(options: DashboardOptions): Promise<DashboardContext> {
    const { cache, release } = componentCache(options);
    const pods = cache.informer<V1Pod>({ apiVersion: "v1", kind: "Pod", labelSelector: TENANT_LABEL });
    pods.addIndex(BY_TENANT, (pod) => [pod.metadata?.labels?.[TENANT_LABEL] ?? ""]);
    const backups = cache.informer<RuntimeBackup>({ apiVersion: TENANTS_API_VERSION, kind: "RuntimeBackup" });
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
    await startInformers([pods, backups, restores, monitorRules] as unknown as Informer<KubernetesObject>[]);
    return new DashboardContext(options, pods, backups, restores, monitorRules, release);
  }

  get tenants(): TenantInformers {
    return this.options.informers;
  }

  get multicluster(): MulticlusterInformers {
    return this.options.multicluster;
  }

  /** The session the request hook found (every /api route but login has one). */
  session(request: FastifyRequest): Session {
    return (request as FastifyRequest & { session: Session }).session;
  }

  fail(reply: FastifyReply, status: number, message: string, field?: string) {
    return replyProblem(reply, new ProblemError(status, statusTitle(status), message, { field }));
  }

  async describeSession(s: Session) {
    return {
      username: s.user.username,
      tenant: s.identity.tenant ?? null,
      operator: await this.reviewer.seesAllTenants(s.user),
      csrf: s.csrf,
    };
  }

  /** How many namespaces the tenant's owners made (those count against its namespace quota). */
  ownerNamespacesOf(tenant: string): number {
    return ownerCreatedNamespaces(this.tenants.namespacesOf(tenant));
  }

  recordUsage(tenant: Tenant): void {
    const rows = quotaRows(tenant, this.ownerNamespacesOf(tenant.metadata!.name!));
    this.history.record(
      tenant.metadata!.name!,
      Object.fromEntries(rows.map((r) => [r.resource, { used: r.usedValue, hard: r.hardValue }])),
      Date.now(),
    );
  }

  async visibleTenants(session: Session): Promise<Tenant[]> {
    return (await this.reviewer.seesAllTenants(session.user))
      ? this.tenants.tenants.list()
      : memberTenants(this.tenants, session.user, session.identity.tenant);
  }

  async seesTenant(session: Session, name: string): Promise<Tenant | undefined> {
    const tenant = this.tenants.tenants.get(undefined, name);
    if (!tenant) return undefined;
    if (await this.reviewer.seesAllTenants(session.user)) return tenant;
    return memberTenants(this.tenants, session.user, session.identity.tenant).find(
      (t) => t.metadata!.name === name,
    );
  }

  /** The tenant a namespace belongs to, from its label (the namespace cache). */
  tenantOfNamespace(namespace: string | undefined): string | undefined {
    return namespace
      ? this.tenants.tenantNamespaces.get(undefined, namespace)?.metadata?.labels?.[TENANT_LABEL]
      : undefined;
  }

  /** Whether the person sees every tenant, else the names of those they see. */
  async tenantScope(s: Session): Promise<{ all: boolean; names: Set<string> }> {
    return (await this.reviewer.seesAllTenants(s.user))
      ? { all: true, names: new Set() }
      : { all: false, names: new Set((await this.visibleTenants(s)).map((t) => t.metadata!.name!)) };
  }

  async visibleNodes(s: Session, tenants?: Tenant[]) {
    const { workerNodes } = this.options.nodes.informers;
    if (await this.reviewer.seesAllTenants(s.user)) return workerNodes.list();
    const mine = new Map<string, ReturnType<typeof workerNodes.list>[number]>();
    for (const tenant of tenants ?? (await this.visibleTenants(s)))
      for (const node of this.options.nodes.informers.nodesOfTenant(tenant.metadata!.name!))
        mine.set(node.metadata!.name!, node);
    return [...mine.values()];
  }

  /** The project whose namespace holds a logical cloud (the DCM API names clouds by project). */
  projectOf(namespace: string): string {
    return (
      this.options.cloudInformers.projects
        .list()
        .find((p) => projectNamespace(p.metadata!.name!) === namespace)?.metadata?.name ?? ""
    );
  }

  /** The runtimes the person sees through the Admin API: an operator's every user's, else their own. */
  async runtimesOf(s: Session): Promise<RuntimeView[]> {
    const path = (await this.reviewer.seesAllTenants(s.user))
      ? "/services?limit=500"
      : `/services/${encodeURIComponent(s.user.username)}?limit=500`;
    return ((await this.runtimes.call(s.token, "GET", path)) as { items: RuntimeView[] }).items;
  }

  backupsOf(r: { namespace: string; name: string }): BackupView[] {
    return this.backups
      .byIndex(BY_RUNTIME, `${r.namespace}/${r.name}`)
      .map((b) => backupView(b, this.restores.byIndex(BY_BACKUP, `${r.namespace}/${b.metadata!.name}`)))
      .sort((a, b) => b.created.localeCompare(a.created) || b.name.localeCompare(a.name));
  }

  /** Tells every open page that may see it that `kind` (of `tenant`, when given) changed. */
  broadcast(kind: string, tenant?: string): void {
    for (const listener of this.listeners) {
      if (!tenant) {
        listener.send({ kind });
        continue;
      }
      void this.seesTenant(listener.session, tenant).then(
        (seen) => seen && listener.send({ kind, name: tenant }),
        () => undefined,
      );
    }
  }

  async close(): Promise<void> {
    for (const listener of this.listeners) listener.end();
    this.listeners.clear();
    await Promise.all([
      this.loginAgent.close(),
      this.runtimes.close(),
      this.dcm.close(),
      this.releaseCache(),
    ]);
  }
}
