import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Node, V1NodeCondition, V1Pod } from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { type ClusterClient, isNotFound, loadClusterClient } from "../../src/kube/index.js";
import { freePort, LOCAL_IMAGES } from "../../src/localcluster/index.js";
import type { Peering } from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { testEnvironment } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { type CommandResult, tenantryCli } from "../support/kubectl.js";
import { processNodePod } from "../support/process-node.js";

/** What scripts/test.ts adds to the test environment: tenantry on every cluster. */
interface TenantryOnCluster {
  cluster: string;
  clusterId: string;
  logFile: string;
}

export function tenantryOn(cluster: string): TenantryOnCluster {
  const env = testEnvironment() as ReturnType<typeof testEnvironment> & { tenantries?: TenantryOnCluster[] };
  const found = env.tenantries?.find((t) => t.cluster === cluster);
  if (!found) throw new Error(`tenantry does not run on test cluster "${cluster}"`);
  return found;
}

export function kubeconfigPath(cluster: string): string {
  const entry = testEnvironment().clusters.find((c) => c.name === cluster);
  if (!entry) throw new Error(`no test cluster named "${cluster}"`);
  return entry.kubeconfig;
}

export function adminClient(cluster: string): ClusterClient {
  return loadClusterClient(cluster, kubeconfigPath(cluster));
}

/** The tenantry CLI with the shared clusters found by name. */
export function tenantry(args: string[]): Promise<CommandResult> {
  return tenantryCli([...args, "--clusters-dir", testEnvironment().dir]);
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `tenantry-${prefix}-`));
}

export function writeTemp(dir: string, name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content, { mode: 0o600 });
  return path;
}

export async function readPeering(client: ClusterClient, name: string): Promise<Peering | undefined> {
  try {
    return (await client.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "Peering",
      metadata: { name },
    })) as unknown as Peering;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export async function readNode(client: ClusterClient, name: string): Promise<V1Node | undefined> {
  try {
    return await client.core.readNode({ name });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export function nodeReady(node: V1Node | undefined): V1NodeCondition | undefined {
  return node?.status?.conditions?.find((c) => c.type === "Ready");
}

/** Waits, polling closely (for timings), until node `name`'s Ready condition has `status`; returns it. */
export function nodeReadyBecomes(
  client: ClusterClient,
  name: string,
  status: "True" | "False",
  timeoutMs: number,
): Promise<V1NodeCondition> {
  return eventually(
    async () => {
      const ready = nodeReady(await readNode(client, name));
      assert.equal(ready?.status, status, `node ${name}: ${JSON.stringify(ready)}`);
      return ready!;
    },
    { timeoutMs, intervalMs: 100 },
  );
}

export async function exists(
  client: ClusterClient,
  apiVersion: string,
  kind: string,
  name: string,
  namespace?: string,
) {
  try {
    await client.objects.read({ apiVersion, kind, metadata: { name, ...(namespace ? { namespace } : {}) } });
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

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

/**
 * Opens a relay in front of the kube-apiserver of admin kubeconfig `kubeconfig` and writes that
 * kubeconfig, through the relay, as `name` in `dir` (the API server's certificate names 127.0.0.1,
 * whatever the port).
 */
export async function relayedKubeconfig(
  kubeconfig: string,
  dir: string,
  name: string,
): Promise<{ relay: Relay; kubeconfig: string }> {
  const admin = parse(readFileSync(kubeconfig, "utf8")) as { clusters: { cluster: { server: string } }[] };
  const upstream = new URL(admin.clusters[0]!.cluster.server);
  const relay = new Relay(await freePort(), { host: upstream.hostname, port: Number(upstream.port) });
  await relay.open();
  for (const entry of admin.clusters) entry.cluster.server = `https://127.0.0.1:${relay.port}`;
  return { relay, kubeconfig: writeTemp(dir, name, stringify(admin)) };
}

/** An HTTP echo server on the process node (port 8080, Ready once it listens), labelled `app: <name>`. */
export function echoPod(name: string): V1Pod {
  return processNodePod(
    name,
    [
      {
        name: "echo",
        image: LOCAL_IMAGES.echo,
        ports: [{ containerPort: 8080 }],
        readinessProbe: { tcpSocket: { port: 8080 as never }, periodSeconds: 1 },
      },
    ],
    {},
    { app: name },
  );
}
