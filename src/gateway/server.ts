import type { IncomingMessage, ServerResponse } from "node:http";
import { isIP } from "node:net";
import type { Duplex } from "node:stream";
import pRetry from "p-retry";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { answerClientError, HttpServer } from "../common/index.js";
import type { Authenticator, Identity } from "../identity/index.js";
import { type ClusterClient, ignoreNotFound, isConflict, silentLogger, statusCode } from "../kube/index.js";
import { TENANT_LABEL, type TenantInformers } from "../tenants/index.js";
import {
  ensureWebhookTls,
  WebhookCertificateKeeper,
  type WebhookTls,
  type WebhookTlsOptions,
} from "../webhooks/index.js";
import { CallerAuthenticator, readClientCa } from "./authentication.js";
import { GatewayMetrics } from "./metrics.js";
import { GatewayProxy } from "./proxy.js";
import { KeyedTokenBuckets, type RateLimit } from "./rate-limit.js";
import { Memberships } from "./scope.js";
import { badRequest, sendStatus, statusOfProblem, writeStatusToSocket } from "./status.js";
import { UpgradeHandler } from "./upgrade.js";
import { Upstream } from "./upstream.js";
import { FilteredWatches } from "./watches.js";

export interface GatewayOptions {
  /** The gateway's own access to the API server: it must be allowed what `gatewayClusterRole` grants. */
  client: ClusterClient;
  /** Started tenant caches (tenants and their namespaces). */
  informers: TenantInformers;
  /** Validates bearer tokens of tenantry's identity providers; other tokens go to a TokenReview. */
  authenticator: Authenticator;
  /**
   * Puts a token's user in their tenant at first login (a TenantProvisioner), as the token webhook
   * does: a user whose first request comes through the gateway is not left outside their tenant.
   */
  provisioner?: { ensure(identity: Identity): Promise<void> };
  /** Address to listen on; default 127.0.0.1. */
  host?: string;
  /** Port; 0 (the default) picks a free one. */
  port?: number;
  /** Namespace of the Secret holding the gateway's CA and serving certificate; default tenantry-system. */
  namespace?: string;
  secretName?: string;
  /** Extra names the serving certificate must carry (the address clients use, a Service name, …). */
  dnsNames?: string[];
  ipAddresses?: string[];
  /** Per-tenant token bucket; default 50 requests per second, bursts of 100. */
  rateLimit?: RateLimit;
  /** Where the gateway's metrics are registered; a registry of its own when left out. */
  metricsRegistry?: Registry;
  /** Serves `GET /metrics` over plain HTTP on loopback at this port (0 = any) when set. */
  metricsPort?: number;
  /** The CA client certificates must be signed by; default the API server's own (`client-ca-file`). */
  clientCaPem?: string;
  /** How often the serving certificate and client CA are looked at again; default ten minutes. */
  refreshIntervalMs?: number;
  logger?: Logger;
}

export interface RunningGateway {
  /** https://host:port */
  url: string;
  /** CA of the serving certificate, for the `certificate-authority-data` of kubeconfigs. */
  caPem: string;
  /** http://127.0.0.1:port/metrics when metricsPort was given. */
  metricsUrl?: string;
  registry: Registry;
  /** Asks clients to reconnect elsewhere (a replica going away). */
  drain(): void;
  stop(): Promise<void>;
}

export const GATEWAY_TLS_SECRET = "tenantry-gateway-tls";
const DEFAULT_RATE_LIMIT: RateLimit = { qps: 50, burst: 100 };

/** ensureWebhookTls, retried when another replica (or test) creates or rotates the Secret at the same moment. */
function ensureTls(client: ClusterClient, options: WebhookTlsOptions): Promise<WebhookTls> {
  // At once: the next attempt reads the Secret the other writer left.
  return pRetry(() => ensureWebhookTls(client.kubeConfig, options), {
    retries: 4,
    minTimeout: 0,
    shouldRetry: ({ error }) => isConflict(error) || statusCode(error) === 409,
  });
}

/**
 * Starts the tenant gateway: a kubectl-compatible HTTPS reverse proxy in front of kube-apiserver
 * that authenticates callers, forwards as them by impersonation, shows tenant users only their
 * tenants' share of cluster-scoped kinds, serves the `/tenants/{tenant}/` API layer, and
 * rate-limits and measures per tenant.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const { client, informers } = options;
  const logger = (options.logger ?? silentLogger).child({ component: "gateway" });
  const namespace = options.namespace ?? "tenantry-system";
  const host = options.host ?? "127.0.0.1";
  const unspecified = host === "0.0.0.0" || host === "::";
  const tlsOptions = gatewayTlsOptions(options, namespace, host);
  const tls = await ensureTls(client, tlsOptions);
  const clientCa = options.clientCaPem ?? (await readClientCa(client));

  const registry = options.metricsRegistry ?? new Registry();
  const metrics = new GatewayMetrics(registry, informers);
  const upstream = new Upstream(client);
  const watches = new FilteredWatches(informers.tenants);
  const memberships = new Memberships(informers);
  const proxy = new GatewayProxy({
    upstream,
    informers,
    authenticate: new CallerAuthenticator(
      client,
      options.authenticator,
      options.provisioner ? (identity) => options.provisioner!.ensure(identity) : undefined,
    ),
    buckets: new KeyedTokenBuckets(options.rateLimit ?? DEFAULT_RATE_LIMIT),
    metrics,
    watches,
    memberships,
    logger,
    async readNamespaceTenant(name) {
      return (await ignoreNotFound(client.core.readNamespace({ name })))?.metadata?.labels?.[TENANT_LABEL];
    },
  });
  const upgrades = new UpgradeHandler(proxy, upstream, metrics, logger);

  const shell = HttpServer.fastify({
    what: "tenant gateway",
    host,
    port: options.port ?? 0,
    // Client certificates are checked against the cluster's client CA, but a caller without one
    // (a token user) must still get through the handshake.
    tls: { ...tls.serving, clientCaPem: clientCa },
    // Nothing is parsed here (below): bodies stream through to the API server.
    bodyLimit: 1024 * 1024,
    logger,
    // Request logs are at info: one line per request through a proxy would drown everything else.
    logLevel: "warn",
    // Watches and exec sessions stay open for long; closing must not wait for them.
    inFlight: "cut",
    // Refusals are Kubernetes Status objects, as kubectl expects from an API server, not problems.
    problems: false,
    fastify: {
      frameworkErrors: (error, _request, reply) => {
        reply.hijack();
        sendStatus(reply.raw as ServerResponse, badRequest(error.message));
      },
      // What node's parser refused (malformed, headers too large): a Status too, never Fastify's own JSON.
      clientErrorHandler: (err: Error & { code?: string }, socket: Duplex) =>
        answerClientError(err, socket, undefined, (refused, problem) => {
          writeStatusToSocket(refused, statusOfProblem(problem));
          setTimeout(() => refused.destroy(), 1000).unref();
        }),
    },
  });
  const { app } = shell;
  // Bodies go to the API server as they arrive: nothing is parsed or buffered here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, _payload, done) => done(null));
  const handler = (request: { raw: IncomingMessage }, reply: { raw: ServerResponse; hijack(): void }) => {
    reply.hijack();
    proxy.handle(request.raw, reply.raw).catch((err: unknown) => {
      logger.error({ err }, "gateway request failed");
      reply.raw.destroy();
    });
  };
  app.all("/*", handler);
  app.setNotFoundHandler(handler);
  app.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    void upgrades.handle(req, socket, head);
  });
  await shell.listen();
  // Listening on every address: tell the loopback one, which the serving certificate names.
  const url = unspecified ? `https://127.0.0.1:${new URL(shell.url).port}` : shell.url;

  const keeper = keepCertificates(shell, options, tlsOptions, { tls, clientCa }, registry, logger);
  const metricsServer =
    options.metricsPort === undefined
      ? undefined
      : await startMetricsServer(registry, options.metricsPort, logger);
  const metricsUrl = metricsServer && `${metricsServer.url}/metrics`;

  return {
    url,
    caPem: tls.caPem,
    ...(metricsUrl ? { metricsUrl } : {}),
    registry,
    drain: () => shell.drain(),
    async stop() {
      await keeper.stop();
      watches.stop();
      memberships.stop();
      upgrades.destroyAll();
      await shell.close();
      await metricsServer?.close();
      upstream.destroy();
    },
  };
}

function gatewayTlsOptions(options: GatewayOptions, namespace: string, host: string): WebhookTlsOptions {
  const unspecified = host === "0.0.0.0" || host === "::";
  return {
    namespace,
    secretName: options.secretName ?? GATEWAY_TLS_SECRET,
    ipAddresses: [
      ...new Set([
        "127.0.0.1",
        ...(isIP(host) && !unspecified ? [host] : []),
        ...(options.ipAddresses ?? []),
      ]),
    ],
    dnsNames: [
      ...new Set([
        "localhost",
        `tenantry-gateway.${namespace}.svc`,
        ...(isIP(host) ? [] : [host]),
        ...(options.dnsNames ?? []),
      ]),
    ],
  };
}

/**
 * The serving certificate is renewed before it expires (the keeper every serving certificate of
 * tenantry has) and the client CA may be rotated: both are looked at again at each check and
 * swapped in for new connections.
 */
function keepCertificates(
  shell: HttpServer,
  options: GatewayOptions,
  tlsOptions: WebhookTlsOptions,
  initial: { tls: WebhookTls; clientCa: string },
  registry: Registry,
  logger: Logger,
): WebhookCertificateKeeper {
  let { clientCa } = initial;
  const keeper: WebhookCertificateKeeper = new WebhookCertificateKeeper({
    kubeConfig: options.client.kubeConfig,
    tls: tlsOptions,
    issuer: "self",
    certificate: "gateway",
    initial: initial.tls,
    registry,
    logger,
    ...(options.refreshIntervalMs ? { checkIntervalMs: options.refreshIntervalMs } : {}),
    onChange: (next) => shell.replaceCertificate(next.serving, clientCa),
    onCheck: async () => {
      if (options.clientCaPem) return;
      const next = await readClientCa(options.client);
      if (next === clientCa) return;
      clientCa = next;
      shell.replaceCertificate(keeper.tls.serving, clientCa);
      logger.info("the cluster's client CA changed: new connections are checked against the new one");
    },
  });
  keeper.start();
  return keeper;
}

/** `/metrics` of the gateway's registry on loopback. */
async function startMetricsServer(registry: Registry, port: number, logger: Logger): Promise<HttpServer> {
  const shell = HttpServer.fastify({
    what: "gateway metrics",
    port,
    bodyLimit: 1024,
    logger,
    logLevel: "warn",
  });
  shell.app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", registry.contentType);
    return registry.metrics();
  });
  await shell.listen();
  return shell;
}
