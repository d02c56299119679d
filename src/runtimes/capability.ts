import { IDENTITY } from "../identity/index.js";
import {
  applyObject,
  type Capability,
  type SharedContext,
  Slot,
  type Started,
  StartedState,
} from "../kube/index.js";
import { TENANT_INFORMERS } from "../tenants/index.js";
import { runtimesDelegateClusterRole } from "./admin/callers.js";
import { type RuntimesAdmin, type RuntimesAdminOptions, startRuntimesAdmin } from "./admin/server.js";
import { RuntimeController } from "./controller/runtime-controller.js";
import { RuntimeServiceController } from "./controller/service-controller.js";
import { RuntimesInformers } from "./informers.js";
import { PluginRegistry } from "./plugins/registry.js";
import { KubeActivityWriter } from "./proxy/activity.js";
import { ensureSessionKeySecret } from "./proxy/auth/keys.js";
import type { ServiceModuleFactory } from "./proxy/modules/spi.js";
import { type RuntimesProxy, startRuntimesProxy } from "./proxy/server.js";
import { InformerRouteSource } from "./proxy/source.js";

/** The runtimes' informers and servers, for those showing or backing up runtimes. */
export interface RunningRuntimes {
  informers: RuntimesInformers;
  admin?: RuntimesAdmin;
  proxy?: RuntimesProxy;
  /** Where runtime pods and backup agents reach the Admin API. */
  adminUrl: () => string | undefined;
}
export const RUNTIMES = new Slot<RunningRuntimes>("the runtimes");

/** What backups add to the runtimes: the Admin API's routes to the store, and who culls idle runtimes. */
export type RuntimeBackups = Pick<RuntimesAdminOptions, "idleCulledBy" | "routes">;
export const RUNTIME_BACKUPS = new Slot<RuntimeBackups>("the runtimes' backups");

export interface RuntimesOptions {
  /** The Admin API (`/services/…`, plain HTTP for the proxy); on by default, on a free loopback port. */
  runtimesAdmin?: { host?: string; port?: number; publicUrl?: () => string | undefined } | false;
  /** The proxy in front of the runtimes (see TenantryOptions); on by default. */
  runtimesProxy?:
    | {
        host?: string;
        port?: number;
        publicUrl?: string;
        /** How often last activity is written to Runtime status (default 30 s). */
        activityIntervalMs?: number;
        /** Service modules besides inject-headers. */
        modules?: Record<string, ServiceModuleFactory>;
        /** Behind a trusted ingress: keep its X-Forwarded-* headers. */
        trustForwardedHeaders?: boolean;
      }
    | false;
  /** The image the pre-pull DaemonSets' main container runs. */
  runtimes?: { pauseImage?: string };
}

type ProxyOptions = Exclude<RuntimesOptions["runtimesProxy"], false | undefined>;

/**
 * Runtimes: their caches, the Admin API and the proxy in front of them (on every replica), and for
 * the leader the runtime services' and runtimes' controllers.
 */
export class RuntimesCapability implements Capability {
  readonly name = "runtimes";
  readonly dependsOn = ["tenants", "identity", "backup"];
  private readonly started = new StartedState<{ context: SharedContext; plugins: PluginRegistry }>(
    "runtimes",
  );

  constructor(private readonly options: RuntimesOptions = {}) {}

  async start(context: SharedContext): Promise<Started> {
    const { client, cache, lifecycle, values } = context;
    await applyObject(client, runtimesDelegateClusterRole);
    const informers = new RuntimesInformers(client, cache);
    await informers.start();
    lifecycle.started("runtimes informers", informers);
    const plugins = new PluginRegistry();
    const proxyOptions = this.proxyOptions();
    // Runtime URLs point at the proxy, which starts once the Admin API it serves is up.
    let proxyUrl: string | undefined;
    const admin = await this.startAdmin(
      context,
      informers,
      plugins,
      () => proxyOptions?.publicUrl ?? proxyUrl,
    );
    const adminOptions = this.options.runtimesAdmin;
    const adminUrl = () => (adminOptions !== false ? adminOptions?.publicUrl?.() : undefined) ?? admin?.url;
    const proxy = proxyOptions ? await this.startProxy(context, proxyOptions, admin) : undefined;
    proxyUrl = proxy?.url;
    values.set(RUNTIMES, { informers, ...(admin ? { admin } : {}), ...(proxy ? { proxy } : {}), adminUrl });
    this.started.set({ context, plugins });
    return {
      servers: [admin, proxy].filter((s) => s !== undefined),
      leaderControllers: () => this.controllers(),
    };
  }

  private proxyOptions(): ProxyOptions | undefined {
    return this.options.runtimesProxy === false ? undefined : (this.options.runtimesProxy ?? {});
  }

  private activityLagMs(): number {
    return this.proxyOptions()?.activityIntervalMs ?? 30_000;
  }

  private async startAdmin(
    { client, namespace, logger, lifecycle, values }: SharedContext,
    informers: RuntimesInformers,
    plugins: PluginRegistry,
    proxyUrl: () => string | undefined,
  ): Promise<RuntimesAdmin | undefined> {
    const options = this.options.runtimesAdmin;
    if (options === false) return undefined;
    const identity = values.get(IDENTITY);
    const backups = values.get(RUNTIME_BACKUPS);
    const admin = await startRuntimesAdmin({
      client,
      informers,
      pluginOf: (service) => plugins.pluginOf(service),
      authenticator: identity.authenticator,
      onAuthenticated: (person) => identity.provisioner.ensure(person),
      host: options?.host ?? "127.0.0.1",
      port: options?.port ?? 0,
      publicUrl: options?.publicUrl ?? proxyUrl,
      activityLagMs: this.activityLagMs(),
      namespace,
      ...backups,
      logger,
    });
    return lifecycle.started("runtimes Admin API", admin);
  }

  private async startProxy(
    { client, cache, metrics, logger, lifecycle, values }: SharedContext,
    options: ProxyOptions,
    admin: RuntimesAdmin | undefined,
  ): Promise<RuntimesProxy> {
    // Sessions are sealed under one key all replicas read: made once, by the first to come.
    await ensureSessionKeySecret(client);
    const identity = values.get(IDENTITY);
    const proxy = await startRuntimesProxy({
      source: new InformerRouteSource(client, { cache }),
      ...(admin ? { admin: { handle: admin.handle }, hubTokens: admin.hubTokenHolder } : {}),
      host: options.host ?? "127.0.0.1",
      port: options.port ?? 0,
      authenticator: identity.authenticator,
      ...(identity.accessUrl
        ? { identityLogin: { url: identity.accessUrl, caPem: identity.accessCaPem } }
        : {}),
      ...(options.modules ? { modules: options.modules } : {}),
      activity: {
        writer: new KubeActivityWriter(client),
        ...(options.activityIntervalMs ? { intervalMs: options.activityIntervalMs } : {}),
      },
      ...(options.trustForwardedHeaders ? { trustForwardedHeaders: true } : {}),
      registry: metrics,
      logger,
    });
    return lifecycle.started("runtimes proxy", proxy);
  }

  private controllers() {
    const { context, plugins } = this.started.get();
    const { client, namespace, logger, values } = context;
    const runtimes = values.get(RUNTIMES);
    const tenants = values.get(TENANT_INFORMERS);
    const { idleCulledBy } = values.get(RUNTIME_BACKUPS);
    const pauseImage = this.options.runtimes?.pauseImage;
    return [
      new RuntimeServiceController({
        client,
        informers: runtimes.informers,
        plugins,
        tenantryNamespace: namespace,
        ...(pauseImage ? { pauseImage } : {}),
        logger,
      }),
      new RuntimeController({
        client,
        informers: runtimes.informers,
        plugins,
        tenantOf: (name) => tenants.tenants.get(undefined, name),
        tenantryNamespace: namespace,
        adminUrl: runtimes.adminUrl,
        activityLagMs: this.activityLagMs(),
        ...(idleCulledBy ? { idleCulledBy } : {}),
        logger,
      }),
    ];
  }
}
