/**
 * Where the proxy's routes come from. In tenantry they come from informers on the Runtime objects
 * (indexed by route token), the RuntimeServices (their service module) and the Secrets in
 * tenantry-system (the modules' settings): every replica sees the same routes, a restart loses
 * none, and a deleted runtime's token is gone with the watch event that reports it.
 */
import type { KubernetesObject, V1Secret } from "@kubernetes/client-node";
import {
  type ClusterClient,
  componentCache,
  type Informer,
  type InformerCache,
  startInformers,
} from "../../kube/index.js";
import { TENANTS_API_VERSION } from "../../tenants/index.js";
import type { Runtime } from "../api/runtime.js";
import type { RuntimeService } from "../api/runtime-service.js";

/** Namespace of the modules' Secrets (`RuntimeService.spec.proxyModule.secretRef`). */
export const MODULE_SECRETS_NAMESPACE = "tenantry-system";

export interface RouteSourceHandler {
  runtime?(previous: Runtime | undefined, current: Runtime | undefined): void;
  service?(previous: RuntimeService | undefined, current: RuntimeService | undefined): void;
  secret?(previous: V1Secret | undefined, current: V1Secret | undefined): void;
}

export interface RouteSource {
  /** The runtime whose `status.route.token` is `token`; undefined when none (or, never, several). */
  byToken(token: string): Runtime | undefined;
  service(name: string): RuntimeService | undefined;
  /** A Secret of tenantry-system. */
  secret(name: string): V1Secret | undefined;
  /** Runtimes that have a route token. */
  routeCount(): number;
  /** Reports changes; the objects already known are reported first as additions. */
  subscribe(handler: RouteSourceHandler): () => void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

// Named after its reader: the cache's informers, and their indexes, are shared.
const BY_TOKEN = "proxy/route-token";

/** Routes read from the cluster holding the Runtime objects (tenantry's own). */
export class InformerRouteSource implements RouteSource {
  readonly runtimes: Informer<Runtime>;
  readonly services: Informer<RuntimeService>;
  readonly secrets: Informer<V1Secret>;

  private readonly release: () => Promise<void>;

  constructor(
    client: ClusterClient,
    options: {
      secretsNamespace?: string;
      /**
       * The process's shared cache (tenantry's Admin API reads the same Runtime and RuntimeService
       * informers): a runtime the Admin API reports ready is then one the proxy routes, not one a
       * second watch has yet to deliver. Without it the source watches on its own.
       */
      cache?: InformerCache;
    } = {},
  ) {
    const { cache, release } = componentCache({ client, cache: options.cache });
    this.release = release;
    this.runtimes = cache.informer<Runtime>({ apiVersion: TENANTS_API_VERSION, kind: "Runtime" });
    this.runtimes.addIndex(BY_TOKEN, (r) => (r.status?.route?.token ? [r.status.route.token] : []));
    this.services = cache.informer<RuntimeService>({
      apiVersion: TENANTS_API_VERSION,
      kind: "RuntimeService",
    });
    this.secrets = cache.informer<V1Secret>({
      apiVersion: "v1",
      kind: "Secret",
      namespace: options.secretsNamespace ?? MODULE_SECRETS_NAMESPACE,
    });
  }

  byToken(token: string): Runtime | undefined {
    const found = this.runtimes.byIndex(BY_TOKEN, token);
    // Two runtimes with one token would be a bug elsewhere: serve neither rather than the wrong one.
    return found.length === 1 ? found[0] : undefined;
  }

  service(name: string): RuntimeService | undefined {
    return this.services.get(undefined, name);
  }

  secret(name: string): V1Secret | undefined {
    return this.secrets.get(MODULE_SECRETS_NAMESPACE, name);
  }

  routeCount(): number {
    let count = 0;
    for (const runtime of this.runtimes.list()) if (runtime.status?.route?.token) count++;
    return count;
  }

  subscribe(handler: RouteSourceHandler): () => void {
    const removers = [
      this.services.addHandler({
        onAdd: (s) => handler.service?.(undefined, s),
        onUpdate: (o, s) => handler.service?.(o, s),
        onDelete: (s) => handler.service?.(s, undefined),
      }),
      this.secrets.addHandler({
        onAdd: (s) => handler.secret?.(undefined, s),
        onUpdate: (o, s) => handler.secret?.(o, s),
        onDelete: (s) => handler.secret?.(s, undefined),
      }),
      this.runtimes.addHandler({
        onAdd: (r) => handler.runtime?.(undefined, r),
        onUpdate: (o, r) => handler.runtime?.(o, r),
        onDelete: (r) => handler.runtime?.(r, undefined),
      }),
    ];
    return () => {
      for (const remove of removers) remove();
    };
  }

  async start(): Promise<void> {
    await startInformers([
      this.services,
      this.secrets,
      this.runtimes,
    ] as unknown as Informer<KubernetesObject>[]);
  }

  async stop(): Promise<void> {
    await this.release();
  }
}

/**
 * Routes given in code instead of read from a cluster: for embedding the proxy where routes are
 * known in advance, and for measuring its data path alone.
 */
export class StaticRouteSource implements RouteSource {
  private readonly tokens = new Map<string, Runtime>();
  private readonly runtimes = new Map<string, Runtime>();
  private readonly services = new Map<string, RuntimeService>();
  private readonly secrets = new Map<string, V1Secret>();
  private readonly handlers = new Set<RouteSourceHandler>();

  byToken(token: string): Runtime | undefined {
    return this.tokens.get(token);
  }

  service(name: string): RuntimeService | undefined {
    return this.services.get(name);
  }

  secret(name: string): V1Secret | undefined {
    return this.secrets.get(name);
  }

  routeCount(): number {
    return this.tokens.size;
  }

  /** Adds or replaces a runtime (by namespace and name). */
  putRuntime(runtime: Runtime): void {
    const key = `${runtime.metadata?.namespace}/${runtime.metadata?.name}`;
    const previous = this.runtimes.get(key);
    const oldToken = previous?.status?.route?.token;
    if (oldToken) this.tokens.delete(oldToken);
    this.runtimes.set(key, runtime);
    const token = runtime.status?.route?.token;
    if (token) this.tokens.set(token, runtime);
    for (const h of this.handlers) h.runtime?.(previous, runtime);
  }

  deleteRuntime(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const previous = this.runtimes.get(key);
    if (!previous) return;
    this.runtimes.delete(key);
    const token = previous.status?.route?.token;
    if (token) this.tokens.delete(token);
    for (const h of this.handlers) h.runtime?.(previous, undefined);
  }

  putService(service: RuntimeService): void {
    this.change(this.services, service.metadata!.name!, service, "service");
  }

  deleteService(name: string): void {
    this.change(this.services, name, undefined, "service");
  }

  putSecret(secret: V1Secret): void {
    this.change(this.secrets, secret.metadata!.name!, secret, "secret");
  }

  deleteSecret(name: string): void {
    this.change(this.secrets, name, undefined, "secret");
  }

  /** Sets (or, with undefined, removes) one named object and tells the handlers. */
  private change<T>(
    map: Map<string, T>,
    name: string,
    current: T | undefined,
    kind: "service" | "secret",
  ): void {
    const previous = map.get(name);
    if (current) map.set(name, current);
    else if (previous) map.delete(name);
    else return;
    for (const h of this.handlers) (h[kind] as ((p?: T, c?: T) => void) | undefined)?.(previous, current);
  }

  subscribe(handler: RouteSourceHandler): () => void {
    this.handlers.add(handler);
    for (const s of this.services.values()) handler.service?.(undefined, s);
    for (const s of this.secrets.values()) handler.secret?.(undefined, s);
    for (const r of this.runtimes.values()) handler.runtime?.(undefined, r);
    return () => {
      this.handlers.delete(handler);
    };
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {}
}
