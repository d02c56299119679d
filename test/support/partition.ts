/**
 * Network partitions between clusters for tests, made for real on the loopback: a TCP relay in front
 * of a provider's kube-apiserver, and a Peering routed through it, so that the consumer loses the
 * provider while everyone else (the test's own admin clients) still reaches both. Nothing is
 * injected into tenantry; nothing is left on the host once closed (the relay is this process's).
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import type { V1Secret } from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import type { ClusterClient } from "../../src/kube/index.js";
import { freePort } from "../../src/localcluster/index.js";
import { KUBECONFIG_KEY, type Peering } from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";

/**
 * A TCP relay in front of a kube-apiserver: closing it makes that cluster unreachable for whoever
 * connects through it (a peering made with relayedKubeconfig), while everyone else still reaches it.
 */
export class Relay {
  private server?: Server;
  private readonly sockets = new Set<Socket>();

  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  /** While true, connections are accepted and then left unanswered, as behind a network partition. */
  private dropping = false;

  private readonly pairs = new Set<[Socket, Socket]>();

  async open(): Promise<void> {
    if (this.dropping) {
      // Healed: what was held goes, and callers connect again.
      this.dropping = false;
      for (const s of this.sockets) s.destroy();
      this.sockets.clear();
      this.pairs.clear();
    }
    if (this.server) return;
    this.server = createServer((client) => {
      if (this.dropping) {
        // Held open and never answered: the caller waits for its own deadline.
        this.sockets.add(client);
        client.on("close", () => this.sockets.delete(client));
        client.on("error", () => client.destroy());
        return;
      }
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      client.on("close", () => this.pairs.delete(pair));
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(this.port, "127.0.0.1", () => resolve());
    });
  }

  /**
   * A partition: open connections stop carrying anything and new ones hang unanswered, so callers
   * learn of it only through their own deadlines (unlike close(), which refuses them at once).
   */
  partition(): void {
    this.dropping = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

type Kubeconfig = { clusters: { cluster: { server: string } }[] };

/**
 * A consumer's Peering routed through a relay: `sever()` cuts the consumer off from the provider
 * (connections stop carrying anything, new ones hang, as behind a partition), `restore()` heals it.
 * `close()` points the Peering's credentials back at the provider and closes the relay.
 */
export class PeeringPartition {
  private constructor(
    private readonly consumer: ClusterClient,
    private readonly secret: { name: string; namespace: string },
    private readonly upstream: string,
    readonly relay: Relay,
  ) {}

  /** Routes `consumer`'s Peering `peering` (its credentials Secret in `namespace`) through a new relay. */
  static async route(
    consumer: ClusterClient,
    peering: string,
    namespace = "tenantry-system",
  ): Promise<PeeringPartition> {
    const found = (await consumer.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "Peering",
      metadata: { name: peering },
    })) as unknown as Peering;
    const secret = { name: found.spec.kubeconfigSecretRef.name, namespace };
    const upstream = serverOf(await consumer.core.readNamespacedSecret(secret));
    const url = new URL(upstream);
    const relay = new Relay(await freePort(), { host: url.hostname, port: Number(url.port) });
    await relay.open();
    const partition = new PeeringPartition(consumer, secret, upstream, relay);
    // The API server's certificate names 127.0.0.1, whatever the port.
    await partition.pointAt(`https://127.0.0.1:${relay.port}`);
    return partition;
  }

  sever(): void {
    this.relay.partition();
  }

  restore(): Promise<void> {
    return this.relay.open();
  }

  async close(): Promise<void> {
    await this.pointAt(this.upstream);
    await this.relay.close();
  }

  /** Rewrites the server of the Secret's current kubeconfig (a renewal may have changed its certificate). */
  private async pointAt(server: string): Promise<void> {
    const current = await this.consumer.core.readNamespacedSecret(this.secret);
    const kubeconfig = parse(Buffer.from(current.data![KUBECONFIG_KEY]!, "base64").toString()) as Kubeconfig;
    for (const entry of kubeconfig.clusters) entry.cluster.server = server;
    current.data![KUBECONFIG_KEY] = Buffer.from(stringify(kubeconfig)).toString("base64");
    await this.consumer.core.replaceNamespacedSecret({ ...this.secret, body: current });
  }
}

function serverOf(secret: V1Secret): string {
  const kubeconfig = parse(Buffer.from(secret.data![KUBECONFIG_KEY]!, "base64").toString()) as Kubeconfig;
  return kubeconfig.clusters[0]!.cluster.server;
}
