import { createHash } from "node:crypto";
import { Agent, type AgentOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

type AgentFactory = (cluster: unknown, options: AgentOptions) => unknown;

/**
 * Makes a KubeConfig reuse keep-alive connections. client-node builds a new https.Agent for every
 * request, so each API call pays a TCP and TLS handshake with the client certificate; admission
 * webhooks that read and write quota per request spent most of their time there. Agents are kept
 * per TLS identity (CA, certificate, key, server name), so rotated credentials get a new pool.
 * Proxied and plain-HTTP clusters keep client-node's own agents.
 */
export function withConnectionPool(kubeConfig: KubeConfig): KubeConfig {
  const target = kubeConfig as unknown as { createAgent: AgentFactory };
  const original = target.createAgent.bind(kubeConfig);
  const agents = new Map<string, Agent>();
  target.createAgent = (cluster, options) => {
    const server = (cluster as { server?: string; proxyUrl?: string } | null) ?? {};
    if (server.proxyUrl || !server.server?.startsWith("https:")) return original(cluster, options);
    // Hashed part by part: JSON of Buffers (CA, certificate, key) would spell every byte as a number.
    const hash = createHash("sha256");
    for (const part of [options.ca, options.cert, options.key, options.pfx, options.servername]) {
      for (const piece of [part].flat()) {
        if (piece !== undefined && piece !== null)
          hash.update(
            typeof piece === "string" || piece instanceof Uint8Array ? piece : JSON.stringify(piece),
          );
        hash.update("\0");
      }
    }
    hash.update(String(options.rejectUnauthorized));
    const key = hash.digest("hex");
    let agent = agents.get(key);
    if (!agent) {
      // Every watch holds a connection for its whole life, and informers multiply with peers and
      // offloaded namespaces: a low cap would queue requests (and Lease renewals) behind them.
      // Idle connections kept: enough for a burst not to end in fresh TLS handshakes.
      agent = new Agent({ ...options, keepAlive: true, maxSockets: 1024, maxFreeSockets: 64 });
      agents.set(key, agent);
    }
    return agent;
  };
  return kubeConfig;
}
