import { randomUUID } from "node:crypto";
import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from "node:http";
import type { Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { Logger } from "pino";
import {
  DEFAULT_DRAIN_TIMEOUT_MS,
  drainingServerOptions,
  type GracefulClose,
  gracefulClose,
} from "./graceful-close.js";
import { type ProblemHandling, problemServerOptions, serveProblems } from "./problem-server.js";
import { echoRequestId, REQUEST_ID_HEADER, requestIdOptions } from "./request-id.js";
import { replaceServingCertificate } from "./serving-certificate.js";

/** A serving certificate, and the CA of client certificates the server asks for (never requires). */
export interface ServingTls {
  certPem: string;
  keyPem: string;
  /**
   * Client certificates are asked for and checked against this CA, but the handshake never
   * requires one: a caller without one gets an answer saying why (and probes still get through).
   */
  clientCaPem?: string;
}

/**
 * What stopping does with requests already received: `answer` them (webhooks kube-apiserver
 * calls: a cut review denies the request it is about), or `cut` every connection at once (watches,
 * event streams and uploads, which may stay open for hours).
 */
export type InFlightOnStop = "answer" | "cut";

export interface HttpServerOptions {
  /** Names the server in log lines and errors ("runtimes Admin API"). */
  what: string;
  host?: string;
  /** 0 or absent: a free port. */
  port?: number;
  tls?: ServingTls;
  logger?: Logger;
  /**
   * The level of the server's own request logs; busy servers (admission, the gateway) keep
   * warnings and errors only, or one line per request would drown everything else.
   */
  logLevel?: "info" | "warn";
  inFlight?: InFlightOnStop;
  /** How long an idle connection stays open (node's default 5 s). */
  keepAliveTimeoutMs?: number;
}

export interface FastifyShellOptions extends HttpServerOptions {
  bodyLimit: number;
  /** Errors and not-found answers as problem+json (default); `false` for a server with its own (the gateway's Kubernetes Status). */
  problems?: Omit<ProblemHandling, "bodyLimit" | "what" | "logger"> | false;
  /** Other Fastify options (Ajv's, plugin timeouts, a server's own framework-error answers). */
  fastify?: FastifyServerOptions;
}

/**
 * The shell every tenantry HTTP server runs in: listening on a host and port and telling its URL,
 * TLS whose certificate is replaced without a restart, a request id on every request (the
 * caller's `X-Request-Id`, else a new one) carried by its log lines and echoed in the answer,
 * draining (clients are asked to reconnect elsewhere) and stopping as {@link InFlightOnStop} says.
 * Fastify servers also answer errors as problem+json; the runtimes proxy, a plain node handler for
 * speed, uses {@link HttpServer.plain}.
 */
export class HttpServer {
  private address?: AddressInfo;
  private clientCaPem: string | undefined;

  private constructor(
    private readonly options: HttpServerOptions,
    /** The server's node server (Fastify's own for Fastify servers). */
    readonly server: Server | HttpsServer,
    private readonly opening: (host: string, port: number) => Promise<void>,
    private readonly stopping: GracefulClose,
  ) {
    this.clientCaPem = options.tls?.clientCaPem;
  }

  /** A Fastify server in the shell; add routes to `app` before {@link listen}. */
  static fastify(options: FastifyShellOptions): HttpServer & { app: FastifyInstance } {
    const app = buildFastify(options);
    // Counts requests and asks clients to reconnect while draining; with forceCloseConnections
    // (`cut`) Fastify's close ends every connection at once, so there is nothing to wait for.
    const graceful = gracefulClose(
      app,
      `${options.what} requests`,
      options.inFlight === "answer" ? options.logger : undefined,
    );
    const open = async (host: string, port: number) => {
      await app.listen({ host, port });
    };
    return Object.assign(new HttpServer(options, app.server, open, graceful), { app });
  }

  /**
   * A plain node handler in the shell (no TLS). Stopping closes every connection; `onStop` runs
   * first, to end what the server no longer owns (upgraded sockets) and would hold it open.
   */
  static plain(
    options: Omit<HttpServerOptions, "tls" | "inFlight">,
    serverOptions: ServerOptions,
    handler: RequestListener,
    onStop?: () => void,
  ): HttpServer {
    let draining = false;
    const server = createServer(serverOptions, (req: IncomingMessage, res: ServerResponse) => {
      const id = (req.headers[REQUEST_ID_HEADER] as string | undefined) || randomUUID();
      req.headers[REQUEST_ID_HEADER] = id;
      res.setHeader(REQUEST_ID_HEADER, id);
      if (draining) res.setHeader("connection", "close");
      handler(req, res);
    });
    if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
    const open = (host: string, port: number) =>
      new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolve();
        });
      });
    const stopping: GracefulClose = {
      pending: 0,
      drain() {
        draining = true;
      },
      async close() {
        draining = true;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        onStop?.();
        await closed;
      },
    };
    return new HttpServer(options, server, open, stopping);
  }

  /** http(s)://host:port; throws before {@link listen}. */
  get url(): string {
    if (!this.address) throw new Error(`the ${this.options.what} is not listening`);
    const host = this.address.family === "IPv6" ? `[${this.address.address}]` : this.address.address;
    return `${this.options.tls ? "https" : "http"}://${host}:${this.address.port}`;
  }

  /** Requests being answered now (Fastify servers). */
  get pending(): number {
    return this.stopping.pending;
  }

  async listen(): Promise<string> {
    await this.opening(this.options.host ?? "127.0.0.1", this.options.port ?? 0);
    this.address = this.server.address() as AddressInfo;
    this.options.logger?.info({ url: this.url }, `${this.options.what} serving`);
    return this.url;
  }

  /**
   * Going away soon: keep answering, but ask every client to close its connection after the
   * answer, so that its next request goes to a replica that stays (a Service's other endpoints).
   */
  drain(): void {
    this.stopping.drain();
  }

  /** Stops as {@link InFlightOnStop} says; answering waits at most `timeoutMs`, then cuts. */
  async close(timeoutMs = DEFAULT_DRAIN_TIMEOUT_MS): Promise<void> {
    await this.stopping.close(timeoutMs);
  }

  /** A renewed certificate: new connections get it, open ones finish with the old one. */
  replaceCertificate(pair: { certPem: string; keyPem: string }, clientCaPem = this.clientCaPem): void {
    this.clientCaPem = clientCaPem;
    replaceServingCertificate(this.server, pair, clientCaPem);
  }
}

function buildFastify(options: FastifyShellOptions): FastifyInstance {
  const { tls, problems } = options;
  const app = Fastify({
    ...problemServerOptions({ bodyLimit: options.bodyLimit }),
    ...(tls
      ? {
          https: {
            cert: tls.certPem,
            key: tls.keyPem,
            ...(tls.clientCaPem ? { requestCert: true, rejectUnauthorized: false, ca: tls.clientCaPem } : {}),
          },
        }
      : {}),
    ...(options.logger
      ? { loggerInstance: options.logger.child({}, { level: options.logLevel ?? "info" }) }
      : {}),
    ...(options.inFlight === "answer" ? drainingServerOptions : { forceCloseConnections: true }),
    ...(options.keepAliveTimeoutMs !== undefined ? { keepAliveTimeout: options.keepAliveTimeoutMs } : {}),
    ...requestIdOptions(),
    ...options.fastify,
  }) as unknown as FastifyInstance;
  echoRequestId(app);
  if (problems !== false) {
    serveProblems(app, {
      ...problems,
      bodyLimit: options.bodyLimit,
      what: `${options.what} request`,
      ...(options.logger ? { logger: options.logger } : {}),
    });
  }
  return app;
}
