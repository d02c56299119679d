import { createHash } from "node:crypto";
import type { RequestOptions } from "node:https";
import type { ConnectionOptions } from "node:tls";
import { KubeConfig, type RequestContext } from "@kubernetes/client-node";
import { Agent } from "undici";

/**
 * How long an idle connection is kept: below kube-apiserver's own idle timeout (90 s), so the
 * server never closes one under a request, and long enough that a burst after a quiet spell does
 * not start with fresh TLS handshakes. (undici's default is 4 s.)
 */
const IDLE_KEEP_ALIVE_MS = 60_000;

/**
 * A KubeConfig whose requests share keep-alive connections. client-node 2.x asks the KubeConfig to
 * authenticate every request (`applySecurityAuthentication`: its generated APIs, the object API,
 * watches, logs) and there builds a new undici Agent each time, so every API call would pay a TCP
 * and TLS handshake with the client certificate; admission webhooks that read and write quota per
 * request spent most of their time there. This KubeConfig is that hook with one dispatcher per TLS
 * identity (CA, certificate, key, server name, verification): the request gets the same headers
 * and TLS settings as from client-node (`applyToHTTPSOptions`, `createDispatcherOptions`), on a
 * pooled connection. Rotated credentials get a pool of their own. Proxied and plain-HTTP clusters
 * keep client-node's own dispatchers.
 */
export class PooledKubeConfig extends KubeConfig {
  private readonly pools = new Map<string, Agent>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    const cluster = this.getCurrentCluster();
    if (!cluster?.server.startsWith("https:") || cluster.proxyUrl) {
      return super.applySecurityAuthentication(context);
    }
    const options: RequestOptions = {};
    // The user's credentials as headers (token, exec plugin, OIDC, impersonation) and TLS material.
    await this.applyToHTTPSOptions(options);
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined) context.setHeaderParam(name, String(value));
    }
    if (options.auth) {
      context.setHeaderParam("Authorization", `Basic ${Buffer.from(options.auth).toString("base64")}`);
    }
    const { ca, cert, key, pfx, passphrase, servername, rejectUnauthorized } = options;
    const dispatcher = this.createDispatcherOptions(cluster, {
      ca,
      cert,
      key,
      pfx,
      passphrase,
      servername,
      ...(rejectUnauthorized !== undefined ? { rejectUnauthorized } : {}),
    });
    if (dispatcher.type === "agent") context.setDispatcher(this.pool(dispatcher.connect));
  }

  /** Closes the pooled connections: idle ones at once, busy ones (watches) when they end. */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.close()));
  }

  private pool(connect: ConnectionOptions & { keepAlive?: boolean; keepAliveInitialDelay?: number }): Agent {
    const key = tlsIdentity(connect);
    let pool = this.pools.get(key);
    if (!pool) {
      // No cap on connections per server: every watch holds one for its whole life, and informers
      // multiply with peers and offloaded namespaces; a cap would queue requests (and Lease
      // renewals) behind them.
      pool = new Agent({
        connect,
        keepAliveTimeout: IDLE_KEEP_ALIVE_MS,
        keepAliveMaxTimeout: IDLE_KEEP_ALIVE_MS,
      });
      this.pools.set(key, pool);
    }
    return pool;
  }
}

/** A digest of what makes a TLS connection someone's: hashed part by part (JSON would spell Buffers out). */
function tlsIdentity(connect: ConnectionOptions): string {
  const hash = createHash("sha256");
  const parts = [connect.ca, connect.cert, connect.key, connect.pfx, connect.passphrase, connect.servername];
  for (const part of parts) {
    for (const piece of [part].flat()) {
      if (piece !== undefined && piece !== null)
        hash.update(typeof piece === "string" || piece instanceof Uint8Array ? piece : JSON.stringify(piece));
      hash.update("\0");
    }
  }
  hash.update(String(connect.rejectUnauthorized));
  return hash.digest("hex");
}
