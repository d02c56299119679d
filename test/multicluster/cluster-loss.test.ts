/**
 * Liqo thesis, 7.2, end to end: a namespace offloaded to three providers, two ReplicatedDeployments
 * (by region and by provider) and a Service in it; then one provider is lost and comes back.
 *
 * The topology is this file's own, so the shared peerings stay as they are: a new consumer
 * (loss-home) peers with edge-1 (eu-south, aws) through a relay, with edge-2 (us-east, gcp), and
 * with a new provider loss-edge-3 (ap-east, gcp) that shares edge-2's provider. In edge-1 and edge-2
 * the new consumer gets a tenant of its own, beside home's.
 */
import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { DiscoveryV1Api, type V1Deployment, type V1Pod } from "@kubernetes/client-node";
import { pino } from "pino";
import { startEmbeddedTenantry } from "../../src/app/embedded.js";
import type { RunningTenantry } from "../../src/app/tenantry.js";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import { ClusterHarness, PROVIDER_LABEL, REGION_LABEL } from "../../src/localcluster/index.js";
import {
  NAMESPACE_OFFLOADING_NAME,
  type NamespaceOffloading,
  type OffloadingPhase,
  peerClusters,
  REPLICATED_DEPLOYMENT_LABEL,
  type ReplicaStatus,
  type ReplicatedDeployment,
  unpeerClusters,
  virtualNodeName,
} from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import {
  adminClient,
  exists,
  kubeconfigPath,
  nodeReady,
  nodeReadyBecomes,
  type Relay,
  readNode,
  relayedKubeconfig,
  tempDir,
} from "./support.js";

const CONSUMER = "loss-home";
const THIRD = "loss-edge-3";
/** The provider that is lost: the only aws one, so every replica it does not hold is elsewhere entirely. */
const LOST = "edge-1";
const PROVIDERS = [LOST, "edge-2", THIRD] as const;
const GRANT = { namespaceQuota: 5, resources: { cpu: "4", memory: "8Gi", pods: "40" } };
/** The chapter's two applications: replicas per generation-label value, pods per replica. */
const APPS = {
  frontend: { label: REGION_LABEL, values: ["ap-east", "eu-south", "us-east"], pods: 3 },
  backend: { label: PROVIDER_LABEL, values: ["aws", "gcp"], pods: 4 },
} as const;
type App = keyof typeof APPS;
const APP_NAMES = Object.keys(APPS) as App[];
const ALL_PODS = APP_NAMES.reduce((n, app) => n + APPS[app].values.length * APPS[app].pods, 0);
const SERVICE = "shop";

const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(1);

describe("Liqo thesis, 7.2: an application over three providers survives losing one", () => {
  const dir = tempDir("cluster-loss");
  const harness = new ClusterHarness({ dir: join(dir, "clusters"), log: () => {} });
  const running: RunningTenantry[] = [];
  const peered: ClusterClient[] = [];
  /** Admin clients of the providers (edge-1 directly, not through the relay), by peering name. */
  const providers = new Map<string, ClusterClient>();
  let consumer: ClusterClient;
  let relay: Relay | undefined;
  let passed = 0;
  const ns = uniqueName("loss-shop");
  /** The replicas as first deployed, by ReplicatedDeployment: what must survive and come back. */
  const deployed = new Map<App, ReplicaStatus[]>();
  const uids = new Map<string, string>();

  before(
    async () => {
      const [home, third] = await harness.up([
        { name: CONSUMER, nodes: 1, labels: { [REGION_LABEL]: "eu-north" } },
        { name: THIRD, nodes: 1, labels: { [REGION_LABEL]: "ap-east", [PROVIDER_LABEL]: "gcp" } },
      ]);
      for (const state of [home!, third!]) {
        const logger = pino(
          { level: "info" },
          pino.destination({ dest: join(dir, `tenantry-${state.name}.log`), sync: false }),
        );
        running.push(await startEmbeddedTenantry(state, logger));
      }
      consumer = loadClusterClient(CONSUMER, home!.kubeconfig);
      const through = await relayedKubeconfig(kubeconfigPath(LOST), dir, `${LOST}-via-relay.kubeconfig`);
      relay = through.relay;
      const peers: [string, ClusterClient][] = [
        [LOST, loadClusterClient(LOST, through.kubeconfig)],
        ["edge-2", adminClient("edge-2")],
        [THIRD, loadClusterClient(THIRD, third!.kubeconfig)],
      ];
      for (const [name, provider] of peers) {
        await peerClusters({ consumer, provider, ...GRANT });
        peered.push(provider);
        providers.set(name, name === LOST ? adminClient(LOST) : provider);
      }
    },
    { timeout: 300_000 },
  );

  after(
    async () => {
      const failures: string[] = [];
      const attempt = (what: string, p: Promise<unknown>) =>
        p.catch((err) => failures.push(`${what}: ${(err as Error).message}`));
      // Unpeering removes the consumer's tenant, and with it the replica namespaces, in each provider.
      await relay?.open();
      for (const provider of peered)
        await attempt(`unpeering ${provider.name}`, unpeerClusters({ consumer, provider }));
      for (const tenantry of running) await attempt("stopping tenantry", tenantry.stop());
      await relay?.close();
      const ok = passed === 3 && failures.length === 0;
      // After a failure the stopped clusters' logs stay behind, with tenantry's.
      await attempt("stopping the clusters", ok ? harness.reset() : harness.down());
      if (ok) await rm(dir, { recursive: true, force: true });
      else process.stderr.write(`cluster-loss: logs in ${dir} (clusters/<cluster>/logs, tenantry-*.log)\n`);
      assert.deepEqual(failures, []);
    },
    { timeout: 300_000 },
  );

  async function readOffloading(): Promise<NamespaceOffloading> {
    return (await consumer.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace: ns },
    })) as NamespaceOffloading;
  }

  /** Polls closely: the time it takes is measured. */
  function phaseBecomes(phase: OffloadingPhase, timeoutMs: number): Promise<NamespaceOffloading> {
    return eventually(
      async () => {
        const current = await readOffloading();
        assert.equal(current.status?.offloadingPhase, phase, JSON.stringify(current.status));
        assert.equal(current.status?.observedGeneration, current.metadata?.generation);
        return current;
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  async function readReplicated(app: App): Promise<ReplicatedDeployment> {
    return (await consumer.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "ReplicatedDeployment",
      metadata: { name: app, namespace: ns },
    })) as ReplicatedDeployment;
  }

  async function readDeployment(name: string): Promise<V1Deployment> {
    return consumer.apps.readNamespacedDeployment({ name, namespace: ns });
  }

  async function podsOf(app: App): Promise<V1Pod[]> {
    const list = await consumer.core.listNamespacedPod({
      namespace: ns,
      labelSelector: `${REPLICATED_DEPLOYMENT_LABEL}=${app}`,
    });
    return list.items.filter((p) => !p.metadata?.deletionTimestamp);
  }

  /** Both applications Ready: every replica Available with all its pods, and the replicas as expected. */
  async function allAvailable(): Promise<Map<App, ReplicaStatus[]>> {
    const found = new Map<App, ReplicaStatus[]>();
    for (const app of APP_NAMES) {
      const rd = await readReplicated(app);
      const ready = rd.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "True", `${app}: ${ready?.message}`);
      assert.equal(rd.status?.observedGeneration, rd.metadata?.generation);
      const replicas = rd.status?.deployments ?? [];
      const { label, values, pods } = APPS[app];
      assert.deepEqual(replicas.map((r) => r.generationLabelsValues?.[label]).sort(), [...values]);
      for (const replica of replicas) {
        assert.equal(replica.available, true, `${app}: ${JSON.stringify(replica)}`);
        assert.equal(replica.readyReplicas, pods, `${app}: ${JSON.stringify(replica)}`);
      }
      found.set(app, replicas);
    }
    return found;
  }

  /** The pods bound to `nodes`: Running and Ready here, and running in their provider's replica namespace. */
  async function podsRunningOn(nodes: readonly string[]): Promise<number> {
    let count = 0;
    for (const app of APP_NAMES) {
      for (const pod of await podsOf(app)) {
        const node = pod.spec?.nodeName ?? "";
        if (!nodes.includes(node)) continue;
        const name = pod.metadata!.name!;
        assert.equal(pod.status?.phase, "Running", `${name} on ${node}`);
        assert.equal(pod.status?.conditions?.find((c) => c.type === "Ready")?.status, "True", name);
        const provider = PROVIDERS.find((p) => virtualNodeName(p) === node)!;
        const remote = await providers.get(provider)!.core.readNamespacedPod({ name, namespace: ns });
        assert.equal(remote.status?.phase, "Running", `${name} in ${provider}`);
        assert.equal(pod.status?.podIP, remote.status?.podIP, name);
        count++;
      }
    }
    return count;
  }

  /** The Service's endpoints, ready and not, from its EndpointSlices. */
  async function serviceEndpoints(): Promise<{ ready: number; notReady: number }> {
    const slices = await consumer.kubeConfig.makeApiClient(DiscoveryV1Api).listNamespacedEndpointSlice({
      namespace: ns,
      labelSelector: `kubernetes.io/service-name=${SERVICE}`,
    });
    const endpoints = slices.items.flatMap((slice) => slice.endpoints ?? []);
    const ready = endpoints.filter((e) => e.conditions?.ready === true).length;
    return { ready, notReady: endpoints.length - ready };
  }

  /** Replicas with a pod that may run on `node`, and the others. */
  function replicasBy(node: string): { on: ReplicaStatus[]; off: ReplicaStatus[] } {
    const all = [...deployed.values()].flat();
    return {
      on: all.filter((r) => r.virtualNodes?.includes(node)),
      off: all.filter((r) => !r.virtualNodes?.includes(node)),
    };
  }

  test("namespace, ReplicatedDeployments by region and by provider, and a Service: every replica runs in its providers", {
    timeout: 360_000,
  }, async () => {
    await consumer.core.createNamespace({ body: { metadata: { name: ns } } });
    await consumer.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace: ns },
      spec: { namespaceMappingStrategy: "EnforceSameName", podOffloadingStrategy: "LocalAndRemote" },
    } as never);
    const offloading = await phaseBecomes("Ready", 90_000);
    assert.equal(offloading.status?.remoteNamespaceName, ns);
    assert.deepEqual(Object.keys(offloading.status?.remoteNamespacesConditions ?? {}).sort(), [...PROVIDERS]);

    const startedAt = Date.now();
    for (const app of APP_NAMES) {
      await consumer.objects.create({
        apiVersion: TENANTS_API_VERSION,
        kind: "ReplicatedDeployment",
        metadata: { name: app, namespace: ns },
        spec: {
          generationLabels: [APPS[app].label],
          template: {
            spec: {
              replicas: APPS[app].pods,
              selector: { matchLabels: { app } },
              template: {
                metadata: { labels: { app, "app.kubernetes.io/part-of": SERVICE } },
                spec: {
                  containers: [
                    {
                      name: app,
                      image: "registry.k8s.io/pause:3.10",
                      resources: { requests: { cpu: "10m", memory: "16Mi" } },
                    },
                  ],
                },
              },
            },
          },
        },
      } as never);
    }
    await consumer.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: SERVICE },
        spec: {
          selector: { "app.kubernetes.io/part-of": SERVICE },
          ports: [{ port: 80, targetPort: 8080 as never }],
        },
      },
    });

    for (const [app, replicas] of await eventually(allAvailable, { timeoutMs: 180_000, intervalMs: 500 }))
      deployed.set(app, replicas);
    // Region granularity: one replica per cluster; provider granularity: edge-2 and loss-edge-3 share gcp's.
    const nodesOf = (app: App) =>
      Object.fromEntries(
        deployed.get(app)!.map((r) => [r.generationLabelsValues![APPS[app].label], r.virtualNodes]),
      );
    assert.deepEqual(nodesOf("frontend"), {
      "ap-east": [virtualNodeName(THIRD)],
      "eu-south": [virtualNodeName(LOST)],
      "us-east": [virtualNodeName("edge-2")],
    });
    assert.deepEqual(nodesOf("backend"), {
      aws: [virtualNodeName(LOST)],
      gcp: [virtualNodeName("edge-2"), virtualNodeName(THIRD)].sort(),
    });
    for (const replica of [...deployed.values()].flat())
      uids.set(replica.name, (await readDeployment(replica.name)).metadata!.uid!);

    const pods = await eventually(() => podsRunningOn(PROVIDERS.map(virtualNodeName)), {
      timeoutMs: 60_000,
      intervalMs: 500,
    });
    assert.equal(pods, ALL_PODS);
    for (const app of APP_NAMES) {
      // Each pod runs where its replica is pinned.
      for (const pod of await podsOf(app)) {
        const replica = deployed.get(app)!.find((r) => pod.metadata!.name!.startsWith(`${r.name}-`))!;
        assert.ok(replica.virtualNodes?.includes(pod.spec!.nodeName!), pod.metadata!.name);
      }
    }
    process.stderr.write(
      `cluster-loss: ${pods} pods Running in 3 providers ${seconds(startedAt)}s after the ReplicatedDeployments were created\n`,
    );

    await eventually(
      async () => {
        for (const [name, client] of providers) {
          const copy = await client.core.readNamespacedService({ name: SERVICE, namespace: ns });
          assert.deepEqual(copy.spec?.selector, { "app.kubernetes.io/part-of": SERVICE }, name);
        }
      },
      { timeoutMs: 60_000 },
    );
    passed++;
  });

  test("edge-1 is lost: its virtual node goes Ready=False, the offloading SomeFailed naming it, the rest keeps running", {
    timeout: 180_000,
  }, async () => {
    assert.equal(passed, 1, "needs the application deployed");
    const lostNode = virtualNodeName(LOST);
    const { on: stranded, off: surviving } = replicasBy(lostNode);
    assert.deepEqual(
      stranded.map((r) => JSON.stringify(r.generationLabelsValues)).sort(),
      [JSON.stringify({ [REGION_LABEL]: "eu-south" }), JSON.stringify({ [PROVIDER_LABEL]: "aws" })].sort(),
    );

    // A partition, not a refusal: requests to edge-1 hang, and only deadlines tell.
    relay!.partition();
    const lostAt = Date.now();
    const down = await nodeReadyBecomes(consumer, lostNode, "False", 30_000);
    const nodeSeconds = seconds(lostAt);
    assert.equal(down.reason, "PeerUnreachable");
    const failed = await phaseBecomes("SomeFailed", 60_000);
    const failedSeconds = seconds(lostAt);
    process.stderr.write(
      `cluster-loss: ${LOST} unreachable → virtual node Ready=False after ${nodeSeconds}s, NamespaceOffloading SomeFailed after ${failedSeconds}s\n`,
    );
    const ready = failed.status?.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, "SomeReplicasFailed");
    // Named first, then why: no answer within a deadline.
    assert.match(
      ready?.message ?? "",
      new RegExp(`^${LOST}: cluster ${LOST} does not answer: .*no answer within`),
    );
    const perCluster = failed.status!.remoteNamespacesConditions!;
    assert.deepEqual(
      Object.entries(perCluster)
        .map(([cluster, conditions]) => [cluster, conditions.find((c) => c.type === "Ready")?.status])
        .sort(),
      [
        ["edge-1", "False"],
        ["edge-2", "True"],
        [THIRD, "True"],
      ],
    );
    assert.equal(perCluster[LOST]!.find((c) => c.type === "Ready")?.reason, "CreationLoopBackOff");

    // As for any node that stops reporting, its pods stay Running but not Ready, so the Service
    // stops sending them traffic; the other pods stay Ready endpoints.
    const strandedPods = stranded.reduce((n, r) => n + (r.replicas ?? 0), 0);
    await eventually(
      async () => {
        const onLost = (await Promise.all(APP_NAMES.map(podsOf)))
          .flat()
          .filter((p) => p.spec?.nodeName === lostNode);
        assert.equal(onLost.length, strandedPods);
        for (const pod of onLost) {
          const podReady = pod.status?.conditions?.find((c) => c.type === "Ready");
          assert.equal(pod.status?.phase, "Running", pod.metadata!.name);
          assert.equal(podReady?.status, "False", pod.metadata!.name);
          assert.equal(podReady?.reason, "NodeNotReady", pod.metadata!.name);
        }
        const endpoints = await serviceEndpoints();
        assert.equal(endpoints.ready, ALL_PODS - strandedPods);
        assert.equal(endpoints.notReady, strandedPods);
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    process.stderr.write(
      `cluster-loss: ${strandedPods} pods in ${LOST} not Ready (no longer Service endpoints) after ${seconds(lostAt)}s\n`,
    );

    // The application keeps running on the others, now and a while later; nothing of edge-1's is deleted.
    const survivors = PROVIDERS.filter((p) => p !== LOST).map(virtualNodeName);
    for (const pause of [0, 10_000]) {
      await sleep(pause);
      for (const replica of surviving) {
        const deployment = await readDeployment(replica.name);
        assert.equal(deployment.metadata?.uid, uids.get(replica.name), replica.name);
        assert.equal(
          deployment.status?.conditions?.find((c) => c.type === "Available")?.status,
          "True",
          replica.name,
        );
        assert.equal(deployment.status?.readyReplicas, deployment.spec?.replicas, replica.name);
      }
      for (const replica of stranded)
        assert.equal((await readDeployment(replica.name)).metadata?.uid, uids.get(replica.name));
      const pods = await podsRunningOn(survivors);
      assert.equal(
        pods,
        surviving.reduce((n, r) => n + (r.replicas ?? 0), 0),
      );
      for (const name of PROVIDERS.filter((p) => p !== LOST)) {
        const copy = await providers.get(name)!.core.readNamespacedService({ name: SERVICE, namespace: ns });
        assert.ok(copy.metadata?.uid, `Service in ${name}`);
      }
      assert.equal((await readOffloading()).status?.offloadingPhase, "SomeFailed");
      assert.equal(nodeReady(await readNode(consumer, lostNode))?.status, "False");
    }
    passed++;
  });

  test("edge-1 is back: the offloading Ready again, its virtual node Ready, its pods running again", {
    timeout: 240_000,
  }, async () => {
    assert.equal(passed, 2, "needs edge-1 lost");
    const lostNode = virtualNodeName(LOST);
    await relay!.open();
    const backAt = Date.now();
    await nodeReadyBecomes(consumer, lostNode, "True", 30_000);
    const nodeSeconds = seconds(backAt);
    const ready = await phaseBecomes("Ready", 60_000);
    const readySeconds = seconds(backAt);
    assert.deepEqual(
      Object.values(ready.status!.remoteNamespacesConditions!).map(
        (conditions) => conditions.find((c) => c.type === "Ready")?.status,
      ),
      ["True", "True", "True"],
    );
    // While edge-1 was away its pods were Running but not Ready: they are Ready again, endpoints too.
    const expected = replicasBy(lostNode).on.reduce((n, r) => n + (r.replicas ?? 0), 0);
    assert.equal(
      await eventually(() => podsRunningOn([lostNode]), { timeoutMs: 60_000, intervalMs: 500 }),
      expected,
    );
    process.stderr.write(
      `cluster-loss: ${LOST} back → virtual node Ready after ${nodeSeconds}s, NamespaceOffloading Ready after ${readySeconds}s\n`,
    );

    // Reflection into edge-1 works again: a pod deleted here goes there too, and its replacement runs there.
    const [victim] = (await podsOf("backend")).filter((p) => p.spec?.nodeName === lostNode);
    const victimName = victim!.metadata!.name!;
    const deletedAt = Date.now();
    await consumer.core.deleteNamespacedPod({ name: victimName, namespace: ns, gracePeriodSeconds: 1 });
    await eventually(
      async () => {
        assert.equal(await exists(consumer, "v1", "Pod", victimName, ns), false, `${victimName} here`);
        assert.equal(await exists(providers.get(LOST)!, "v1", "Pod", victimName, ns), false, `in ${LOST}`);
        assert.equal(await podsRunningOn([lostNode]), expected);
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    process.stderr.write(
      `cluster-loss: ${expected} pods Running in ${LOST} again, a replacement pod included ${seconds(deletedAt)}s after its predecessor was deleted\n`,
    );

    const again = await eventually(allAvailable, { timeoutMs: 90_000, intervalMs: 500 });
    for (const replica of [...again.values()].flat())
      assert.equal((await readDeployment(replica.name)).metadata?.uid, uids.get(replica.name), replica.name);
    assert.equal(await podsRunningOn(PROVIDERS.map(virtualNodeName)), ALL_PODS);
    passed++;
  });
});
