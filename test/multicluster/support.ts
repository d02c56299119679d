import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
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
import { Relay } from "../support/partition.js";
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

export { Relay } from "../support/partition.js";

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
