import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1Node, V1NodeCondition } from "@kubernetes/client-node";
import { type ClusterClient, isNotFound, loadClusterClient } from "../../src/kube/index.js";
import type { Peering } from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { testEnvironment } from "../support/clusters.js";
import { type CommandResult, tenantryCli } from "../support/kubectl.js";

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
