/**
 * Liqo thesis, 8.2.1: time from a ReplicatedDeployment's creation until all its replica
 * Deployments exist, and until its status lists them, for N virtual nodes at node granularity.
 * The virtual nodes are plain Node objects labelled like real ones (no peer behind them: the
 * replication controller only reads their labels). Needs tenantry's controllers running on the cluster.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { type ClusterClient, isNotFound } from "../../src/kube/index.js";
import {
  NAMESPACE_OFFLOADING_NAME,
  REPLICATED_DEPLOYMENT_LABEL,
  type ReplicatedDeployment,
} from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { FAKE_NODE_RUN_LABEL, fakeVirtualNodes } from "../../testing/index.js";

export interface ReplicationBenchmarkOptions {
  /** Admin client of a cluster running tenantry's controllers. */
  client: ClusterClient;
  /** Fake virtual nodes, hence replicas. */
  virtualNodes: number;
  /** Pods per replica Deployment; default 0, which times the controller alone. */
  podsPerReplica?: number;
  timeoutMs?: number;
  /** How often the Deployments and the status are read. Default 50 ms. */
  pollMs?: number;
}

export interface ReplicationBenchmarkResult {
  virtualNodes: number;
  /** Creation of the ReplicatedDeployment → all N replica Deployments exist. */
  deploymentsMs: number;
  /** Creation of the ReplicatedDeployment → its status lists all N replicas. */
  statusMs: number;
}

export async function benchmarkReplication(
  options: ReplicationBenchmarkOptions,
): Promise<ReplicationBenchmarkResult> {
  const { client, virtualNodes } = options;
  const timeoutMs = options.timeoutMs ?? 120_000;
  const pollMs = options.pollMs ?? 50;
  const run = randomBytes(4).toString("hex");
  const namespace = `rd-bench-${run}`;
  const nodes = fakeVirtualNodes(run, virtualNodes);
  try {
    await client.core.createNamespace({ body: { metadata: { name: namespace } } });
    // Only this run's nodes: the real virtual nodes (and other runs) stay out of the measure.
    await client.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace },
      spec: {
        podOffloadingStrategy: "Remote",
        clusterSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: FAKE_NODE_RUN_LABEL, operator: "In", values: [run] }] },
          ],
        },
      },
    });
    await Promise.all(nodes.map((body) => client.core.createNode({ body })));
    // Let the controller's node watch deliver them before the clock starts.
    await sleep(1_000);

    const started = performance.now();
    await client.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "ReplicatedDeployment",
      metadata: { name: "bench", namespace },
      spec: {
        template: {
          spec: {
            replicas: options.podsPerReplica ?? 0,
            selector: { matchLabels: { app: "bench" } },
            template: {
              metadata: { labels: { app: "bench" } },
              spec: { containers: [{ name: "bench", image: "registry.k8s.io/pause:3.10" }] },
            },
          },
        },
      },
    } as ReplicatedDeployment);
    let deploymentsMs: number | undefined;
    let statusMs: number | undefined;
    while (deploymentsMs === undefined || statusMs === undefined) {
      if (performance.now() - started > timeoutMs) {
        throw new Error(`${virtualNodes} replicas not in place after ${timeoutMs} ms`);
      }
      if (deploymentsMs === undefined) {
        const list = await client.apps.listNamespacedDeployment({
          namespace,
          labelSelector: `${REPLICATED_DEPLOYMENT_LABEL}=bench`,
        });
        if (list.items.length === virtualNodes) deploymentsMs = performance.now() - started;
      }
      if (statusMs === undefined) {
        const rd = (await client.objects.read({
          apiVersion: TENANTS_API_VERSION,
          kind: "ReplicatedDeployment",
          metadata: { name: "bench", namespace },
        })) as ReplicatedDeployment;
        if (rd.status?.deployments?.length === virtualNodes) statusMs = performance.now() - started;
      }
      if (deploymentsMs === undefined || statusMs === undefined) await sleep(pollMs);
    }
    return { virtualNodes, deploymentsMs, statusMs };
  } finally {
    // The ReplicatedDeployment, then the namespace, then the nodes: in another order the controller
    // would recreate replicas the namespace's deletion removes, or delete them itself.
    await client.objects
      .delete({
        apiVersion: TENANTS_API_VERSION,
        kind: "ReplicatedDeployment",
        metadata: { name: "bench", namespace },
      })
      .catch((err) => {
        if (!isNotFound(err)) throw err;
      });
    await client.core.deleteNamespace({ name: namespace }).catch((err) => {
      if (!isNotFound(err)) throw err;
    });
    await Promise.all(
      nodes.map((node) =>
        client.core.deleteNode({ name: node.metadata!.name! }).catch((err) => {
          if (!isNotFound(err)) throw err;
        }),
      ),
    );
  }
}
