import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { TLSSocket } from "node:tls";
import type { Logger } from "pino";
import { withoutTokenProtocol } from "./authentication.js";
import type { GatewayMetrics } from "./metrics.js";
import { type GatewayProxy, impersonationHeaders, type RequestContext } from "./proxy.js";
import { badRequest, serviceUnavailable, writeStatusToSocket } from "./status.js";
import type { Upstream } from "./upstream.js";

/** Caller headers not passed on an upgraded request: per-connection ones and credentials. */
const DROPPED = new Set([
  "host",
  "authorization",
  "proxy-authorization",
  "keep-alive",
  "proxy-connection",
  "te",
]);

const UNSAFE_VALUE = /[\r\n\0]/;

/**
 * Upgraded connections (SPDY and WebSocket: exec, attach, port-forward, WebSocket watches): the
 * caller is authenticated and checked like any request, then the request goes to the API server on
 * a connection of its own, as the caller, and both sockets are joined until either side closes.
 * Whatever the request asks for, it is forwarded as the caller, never with the gateway's identity.
 */
export class UpgradeHandler {
  private readonly sockets = new Set<Duplex>();

  constructor(
    private readonly proxy: GatewayProxy,
    private readonly upstream: Upstream,
    private readonly metrics: GatewayMetrics,
    private readonly logger: Logger,
  ) {}

  async handle(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const context: RequestContext = {
      tenant: "",
      verb: (req.method ?? "").toLowerCase(),
      resource: "",
      longRunning: true,
    };
    let code = 0;
    const count = () =>
      this.metrics.requests.inc({
        tenant: context.tenant,
        verb: context.verb,
        resource: context.resource,
        code: String(code),
      });
    try {
      const plan = await this.proxy.plan(
        req.method ?? "GET",
        req.url ?? "/",
        req.headers,
        req.socket as TLSSocket,
        context,
      );
      if (plan.kind === "refuse") {
        code = plan.status.code;
        count();
        writeStatusToSocket(socket, plan.status, plan.headers);
        return;
      }
      const lines = this.requestHead(req, plan.callerPath, context);
      if (!lines) {
        code = 400;
        count();
        writeStatusToSocket(socket, badRequest("a header value contains a line break"));
        return;
      }
      const { socket: apiserver, authorization } = await this.upstream.connect();
      if (socket.destroyed) {
        apiserver.destroy();
        return;
      }
      if (authorization) lines.push(`authorization: ${authorization}`);
      this.sockets.add(apiserver);
      apiserver.once("close", () => this.sockets.delete(apiserver));
      apiserver.once("data", (chunk: Buffer) => {
        // The first line of the API server's answer: `HTTP/1.1 101 Switching Protocols`, or a refusal.
        code = Number(/^HTTP\/1\.[01] (\d{3})/.exec(chunk.subarray(0, 16).toString("latin1"))?.[1] ?? 0);
        count();
      });
      apiserver.on("error", (err) => {
        if (code === 0) {
          code = 503;
          count();
          this.logger.warn({ err }, "the API server could not be reached for an upgraded request");
          writeStatusToSocket(
            socket,
            serviceUnavailable(`the API server could not be reached: ${err.message}`),
          );
        } else socket.destroy();
      });
      socket.once("close", () => apiserver.destroy());
      apiserver.once("close", () => socket.destroy());
      apiserver.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length) apiserver.write(head);
      apiserver.pipe(socket);
      socket.pipe(apiserver);
    } catch (err) {
      code = 503;
      count();
      this.logger.error({ err, url: req.url }, "gateway could not handle an upgraded request");
      writeStatusToSocket(
        socket,
        serviceUnavailable(`the gateway could not check the request: ${(err as Error).message}`),
      );
    }
  }

  /** Request line and headers for the API server, or undefined when a value could smuggle a header in. */
  private requestHead(req: IncomingMessage, path: string, context: RequestContext): string[] | undefined {
    const lines = [`${req.method} ${path} HTTP/1.${req.httpVersionMinor === 0 ? 0 : 1}`];
    const raw = req.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i]!;
      const lower = name.toLowerCase();
      let value = raw[i + 1]!;
      if (DROPPED.has(lower) || lower.startsWith("impersonate-") || lower.startsWith("x-remote-")) continue;
      if (lower === "sec-websocket-protocol") {
        value = withoutTokenProtocol(value);
        if (!value) continue;
      }
      lines.push(`${name}: ${value}`);
    }
    lines.push(`host: ${this.upstream.authority}`);
    for (const [name, value] of Object.entries(impersonationHeaders(context.caller!))) {
      for (const one of Array.isArray(value) ? value : [String(value)]) lines.push(`${name}: ${one}`);
    }
    return lines.some((line) => UNSAFE_VALUE.test(line)) ? undefined : lines;
  }

  destroyAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }
}
