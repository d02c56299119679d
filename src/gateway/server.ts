import type { IncomingMessage, ServerResponse } from "node:http";
import type { Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { isIP } from "node:net";
import type { Duplex } from "node:stream";
import Fastify, { type FastifyInstance } from "fastify";
import pRetry from "p-retry";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import { answerClientError } from "../common/index.js";
import type { Authenticator, Identity } from "../identity/index.js";
import { type ClusterClient, isConflict, isNotFound, silentLogger, statusCode } from "../kube/index.js";
import { TENANT_LABEL, type TenantInformers } from "../tenants/index.js";
import { ensureWebhookTls, type WebhookTls, type WebhookTlsOptions } from "../webhooks/index.js";
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
  /** How often the serving certificate and client CA are looked at again; default one hour. */
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

function urlHost(address: string): string {
  return isIP(address) === 6 ? `[${address}]` : address;
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
  const tlsOptions: WebhookTlsOptions = {
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
  let tls = await ensureTls(client, tlsOptions);
  let clientCa = options.clientCaPem ?? (await readClientCa(client));

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
      try {
        return (await client.core.readNamespace({ name })).metadata?.labels?.[TENANT_LABEL];
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
  });
  const upgrades = new UpgradeHandler(proxy, upstream, metrics, logger);

  const app = Fastify({
    https: {
      cert: tls.serving.certPem,
      key: tls.serving.keyPem,
      // Client certificates are checked against the cluster's client CA, but a caller without one
      // (a token user) must still get through the handshake.
      ca: clientCa,
      requestCert: true,
      rejectUnauthorized: false,
    },
    // Request logs are at info: one line per request through a proxy would drown everything else.
    loggerInstance: logger.child({}, { level: "warn" }),
    // Watches and exec sessions stay open for long; closing must not wait for them.
    forceCloseConnections: true,
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
  }) as unknown as FastifyInstance;
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
  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address() as AddressInfo;
  const url = `https://${urlHost(unspecified ? "127.0.0.1" : address.address)}:${address.port}`;

  // The serving certificate is renewed before it expires and the client CA may be rotated: both are
  // looked at again from time to time and swapped in for new connections.
  const refresh = setInterval(() => {
    void (async () => {
      const nextTls = await ensureTls(client, tlsOptions);
      const nextCa = options.clientCaPem ?? (await readClientCa(client));
      if (nextTls.serving.certPem !== tls.serving.certPem || nextCa !== clientCa) {
        (app.server as unknown as HttpsServer).setSecureContext({
          cert: nextTls.serving.certPem,
          key: nextTls.serving.keyPem,
          ca: nextCa,
        });
        tls = nextTls;
        clientCa = nextCa;
        logger.info("gateway serving certificate or client CA changed: new connections use the new ones");
      }
    })().catch((err: unknown) => logger.warn({ err }, "could not refresh the gateway's certificates"));
  }, options.refreshIntervalMs ?? 3_600_000);
  refresh.unref();

  let metricsApp: FastifyInstance | undefined;
  let metricsUrl: string | undefined;
  if (options.metricsPort !== undefined) {
    metricsApp = Fastify({ forceCloseConnections: true });
    metricsApp.get("/metrics", async (_request, reply) => {
      reply.header("content-type", registry.contentType);
      return registry.metrics();
    });
    await metricsApp.listen({ host: "127.0.0.1", port: options.metricsPort });
    const metricsAddress = metricsApp.server.address() as AddressInfo;
    metricsUrl = `http://127.0.0.1:${metricsAddress.port}/metrics`;
  }
  logger.info({ url, metricsUrl }, "tenant gateway listening");

  return {
    url,
    caPem: tls.caPem,
    ...(metricsUrl ? { metricsUrl } : {}),
    registry,
    async stop() {
      clearInterval(refresh);
      watches.stop();
      memberships.stop();
      upgrades.destroyAll();
      await app.close();
      await metricsApp?.close();
      upstream.destroy();
    },
  };
}
