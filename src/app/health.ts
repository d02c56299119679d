import type { Registry } from "prom-client";
import { HttpServer, UserError } from "../common/index.js";

export interface HealthServerOptions {
  host: string;
  port: number;
  /** Ready for traffic: informers synced and every component serving. */
  ready: () => boolean;
  registry: Registry;
}

export interface HealthServer {
  /** http://host:port */
  url: string;
  stop(): Promise<void>;
}

/**
 * `/healthz` (the process answers), `/readyz` (informers synced, components serving: 503 until
 * then, so a Service sends nothing to a replica still starting) and `/metrics`, on every replica.
 */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const shell = HttpServer.fastify({
    what: "health server",
    host: options.host,
    port: options.port,
    bodyLimit: 1024,
  });
  const { app } = shell;
  app.get("/healthz", async () => "ok\n");
  app.get("/readyz", async (_request, reply) => {
    if (options.ready()) return "ok\n";
    reply.code(503);
    return "not ready: informers not synced yet\n";
  });
  app.get("/metrics", async (_request, reply) => {
    reply.header("content-type", options.registry.contentType);
    return options.registry.metrics();
  });
  await shell.listen();
  return { url: shell.url, stop: () => shell.close() };
}

/** `host:port` (IPv6 hosts in brackets) to its parts; names the option when malformed. */
export function parseAddress(option: string, value: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(value);
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new UserError(`${option}: "${value}" is not host:port (port 0–65535), e.g. 0.0.0.0:8081`, 2);
  }
  return { host: match[1] ?? (match[2] || "0.0.0.0"), port };
}
