import { createHash } from "node:crypto";
import { Agent, type RequestOptions } from "node:https";
import { connect, type TLSSocket } from "node:tls";
import type { ClusterClient } from "../kube/index.js";

/** The gateway's own way into the API server: TLS material, and a bearer token when the kubeconfig has one. */
interface Credentials {
  tls: Pick<
    RequestOptions,
    "ca" | "cert" | "key" | "pfx" | "passphrase" | "servername" | "rejectUnauthorized"
  >;
  authorization?: string;
  agent: Agent;
  until: number;
}

/** How long credentials read from the kubeconfig are reused; exec and OIDC tokens refresh well within it. */
const CREDENTIALS_TTL_MS = 30_000;

/**
 * Connections to the API server with the gateway's credentials. Every watch holds a connection of
 * its own, so the pool has no upper bound (the API server limits requests in flight); idle ones are
 * kept alive for the next request.
 */
export class Upstream {
  readonly host: string;
  readonly port: number;
  /** Path of the API server URL, for servers behind a path prefix; "" normally. */
  readonly basePath: string;
  private credentials?: Credentials;
  private readonly agents = new Map<string, Agent>();

  constructor(private readonly client: ClusterClient) {
    const cluster = client.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error(`cluster "${client.name}" has no current cluster in its kubeconfig`);
    if (cluster.proxyUrl) throw new Error("the gateway cannot reach an API server through a proxy-url");
    const url = new URL(cluster.server);
    if (url.protocol !== "https:")
      throw new Error(`the gateway needs an https API server, not ${cluster.server}`);
    this.host = url.hostname.replace(/^\[|\]$/g, "");
    this.port = Number(url.port || 443);
    this.basePath = url.pathname.replace(/\/+$/, "");
  }

  async current(): Promise<Credentials> {
    const now = Date.now();
    if (this.credentials && this.credentials.until > now) return this.credentials;
    const opts: RequestOptions & { headers?: Record<string, string> } = {};
    await this.client.kubeConfig.applyToHTTPSOptions(opts);
    const tls: Credentials["tls"] = {
      ca: opts.ca,
      cert: opts.cert,
      key: opts.key,
      pfx: opts.pfx,
      passphrase: opts.passphrase,
      servername: opts.servername,
      ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}),
    };
    const key = createHash("sha256")
      .update(JSON.stringify([tls.ca, tls.cert, tls.key, tls.pfx, tls.servername, tls.rejectUnauthorized]))
      .digest("hex");
    let agent = this.agents.get(key);
    if (!agent) {
      // Agents of earlier credentials stay until stop: watches opened with them are still running.
      agent = new Agent({
        ...tls,
        keepAlive: true,
        maxSockets: Number.POSITIVE_INFINITY,
        maxFreeSockets: 256,
      });
      this.agents.set(key, agent);
    }
    const authorization = opts.headers?.Authorization ?? opts.headers?.authorization;
    this.credentials = {
      tls,
      ...(authorization ? { authorization } : {}),
      agent,
      until: now + CREDENTIALS_TTL_MS,
    };
    return this.credentials;
  }

  /** A raw TLS connection for an upgraded request (exec, attach, port-forward). */
  async connect(): Promise<{ socket: TLSSocket; authorization?: string }> {
    const credentials = await this.current();
    const socket = connect({
      host: this.host,
      port: this.port,
      ...credentials.tls,
      servername: credentials.tls.servername ?? (isIp(this.host) ? undefined : this.host),
      ALPNProtocols: ["http/1.1"],
    });
    return { socket, ...(credentials.authorization ? { authorization: credentials.authorization } : {}) };
  }

  get authority(): string {
    return this.host.includes(":") ? `[${this.host}]:${this.port}` : `${this.host}:${this.port}`;
  }

  destroy(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
    this.credentials = undefined;
  }
}

function isIp(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(":");
}
