import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { type ClusterClient, isNotFound } from "../../src/kube/index.js";
import type { NamespaceOffloading } from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import { adminClient, kubeconfigPath, tenantryOn } from "./support.js";

/** Runs on the shared topology: home consumes edge-1 and edge-2. */
const home = adminClient("home");
const providers: Record<string, ClusterClient> = {
  "edge-1": adminClient("edge-1"),
  "edge-2": adminClient("edge-2"),
};
const ORIGIN_CLUSTER = "offloading.tenantry.dev/origin-cluster-id";
const ORIGIN_NAMESPACE = "offloading.tenantry.dev/origin-namespace";
const VIRTUAL_NODE_TOLERATION = {
  key: "virtual-node.tenantry.dev/not-allowed",
  operator: "Equal",
  value: "true",
  effect: "NoExecute",
};

const ns = uniqueName("reflect");
let remoteNs = "";

async function readPod(client: ClusterClient, namespace: string, name: string): Promise<V1Pod | undefined> {
  try {
    return await client.core.readNamespacedPod({ name, namespace });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function readObject(client: ClusterClient, kind: string, namespace: string, name: string) {
  try {
    return await client.objects.read({ apiVersion: "v1", kind, metadata: { name, namespace } });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function homePods(): Promise<V1Pod[]> {
  return (await home.core.listNamespacedPod({ namespace: ns, labelSelector: "app=web" })).items;
}

function isRunning(pod: V1Pod | undefined): boolean {
  return pod?.status?.phase === "Running" && !pod.metadata?.deletionTimestamp;
}

before(async () => {
  assert.ok(ns.length <= 26, `namespace ${ns} too long for DefaultName`);
  await home.core.createNamespace({ body: { metadata: { name: ns } } });
  await home.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace: ns },
    spec: { podOffloadingStrategy: "Remote" },
  } as never);
  const offloading = await eventually(
    async () => {
      const current = (await home.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceOffloading",
        metadata: { name: "offloading", namespace: ns },
      })) as unknown as NamespaceOffloading;
      assert.equal(current.status?.offloadingPhase, "Ready", JSON.stringify(current.status));
      return current;
    },
    { timeoutMs: 60_000 },
  );
  remoteNs = offloading.status!.remoteNamespaceName!;
  assert.equal(remoteNs, `${ns}-${tenantryOn("home").clusterId}`);
});

after(async () => {
  await home.core.deleteNamespace({ name: ns }).catch(() => {});
});

describe("reflection into the providers", () => {
  test("a Deployment's pods run in edge-1 and edge-2 and show Running with pod IPs in home; deletion goes both ways", async () => {
    await home.apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: "web" },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: {
              containers: [{ name: "web", image: "nginx" }],
              // One per virtual node: both providers get one.
              affinity: {
                podAntiAffinity: {
                  requiredDuringSchedulingIgnoredDuringExecution: [
                    { topologyKey: "kubernetes.io/hostname", labelSelector: { matchLabels: { app: "web" } } },
                  ],
                },
              },
            },
          },
        },
      },
    });
    const running = await eventually(
      async () => {
        const pods = await homePods();
        assert.equal(
          pods.filter(isRunning).length,
          2,
          JSON.stringify(pods.map((p) => [p.metadata?.name, p.status?.phase])),
        );
        return pods.filter(isRunning);
      },
      { timeoutMs: 60_000 },
    );
    assert.deepEqual(running.map((p) => p.spec?.nodeName).sort(), ["tenantry-edge-1", "tenantry-edge-2"]);
    for (const pod of running) {
      const peering = pod.spec!.nodeName!.replace("tenantry-", "");
      const remote = await readPod(providers[peering]!, remoteNs, pod.metadata!.name!);
      assert.ok(remote, `pod ${pod.metadata!.name} runs in ${peering}/${remoteNs}`);
      assert.equal(remote.metadata?.labels?.[ORIGIN_CLUSTER], tenantryOn("home").clusterId);
      assert.equal(remote.metadata?.labels?.[ORIGIN_NAMESPACE], ns);
      assert.equal(remote.metadata?.labels?.app, "web");
      assert.equal(
        remote.spec?.nodeName?.startsWith("tenantry-"),
        false,
        "scheduled on the provider's own nodes",
      );
      assert.ok(pod.status?.podIP, "the pod IP comes back");
      assert.equal(pod.status?.podIP, remote.status?.podIP);
      assert.equal(pod.status?.containerStatuses?.[0]?.ready, true);
      assert.ok(pod.status?.startTime);
    }
    const wide = await kubectl(kubeconfigPath("home"), ["get", "pods", "-n", ns, "-o", "wide"]);
    assert.match(wide.stdout, /Running.*tenantry-edge-1/);
    assert.match(wide.stdout, /Running.*tenantry-edge-2/);

    // Deleted in home → deleted in the provider, and a replacement runs.
    const [first, second] = running;
    const firstPeer = providers[first!.spec!.nodeName!.replace("tenantry-", "")]!;
    await home.core.deleteNamespacedPod({
      name: first!.metadata!.name!,
      namespace: ns,
      gracePeriodSeconds: 2,
    });
    await eventually(
      async () => {
        const remote = await readPod(firstPeer, remoteNs, first!.metadata!.name!);
        assert.ok(!remote || remote.metadata?.deletionTimestamp, "deleted in the provider");
        assert.equal(await readPod(home, ns, first!.metadata!.name!), undefined, "gone in home");
      },
      { timeoutMs: 30_000 },
    );
    await eventually(
      async () => assert.equal(await readPod(firstPeer, remoteNs, first!.metadata!.name!), undefined),
      {
        timeoutMs: 30_000,
      },
    );

    // Deleted in the provider → the local pod goes and the ReplicaSet replaces it.
    const secondPeer = providers[second!.spec!.nodeName!.replace("tenantry-", "")]!;
    await secondPeer.core.deleteNamespacedPod({ name: second!.metadata!.name!, namespace: remoteNs });
    await eventually(async () => assert.equal(await readPod(home, ns, second!.metadata!.name!), undefined), {
      timeoutMs: 30_000,
    });
    await eventually(
      async () => {
        const pods = (await homePods()).filter(isRunning);
        assert.equal(pods.length, 2);
        assert.ok(
          pods.every(
            (p) => p.metadata?.name !== first!.metadata?.name && p.metadata?.name !== second!.metadata?.name,
          ),
        );
      },
      { timeoutMs: 60_000 },
    );
  });

  test("ConfigMaps, Secrets and Services are kept in every replica namespace", async () => {
    await home.core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: "settings", labels: { app: "web" } }, data: { mode: "fast" } },
    });
    await home.core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: "db" }, type: "Opaque", stringData: { password: "s3cret" } },
    });
    await home.core.createNamespacedService({
      namespace: ns,
      body: {
        metadata: { name: "web" },
        spec: {
          type: "NodePort",
          selector: { app: "web" },
          ports: [{ port: 80, targetPort: 8080 as never }],
        },
      },
    });
    for (const [peering, client] of Object.entries(providers)) {
      await eventually(async () => {
        const configMap = (await readObject(client, "ConfigMap", remoteNs, "settings")) as
          | { data?: Record<string, string>; metadata?: { labels?: Record<string, string> } }
          | undefined;
        assert.deepEqual(configMap?.data, { mode: "fast" }, `ConfigMap in ${peering}`);
        assert.equal(configMap?.metadata?.labels?.[ORIGIN_NAMESPACE], ns);
        assert.equal(configMap?.metadata?.labels?.app, "web");
        const secret = (await readObject(client, "Secret", remoteNs, "db")) as
          | { data?: Record<string, string> }
          | undefined;
        assert.equal(
          Buffer.from(secret?.data?.password ?? "", "base64").toString(),
          "s3cret",
          `Secret in ${peering}`,
        );
        const service = (await readObject(client, "Service", remoteNs, "web")) as
          | { spec?: { type?: string; ports?: { nodePort?: number }[]; selector?: Record<string, string> } }
          | undefined;
        assert.equal(service?.spec?.type, "ClusterIP", `Service in ${peering}`);
        assert.equal(service?.spec?.ports?.[0]?.nodePort, undefined);
        assert.deepEqual(service?.spec?.selector, { app: "web" });
      });
    }
    assert.equal(
      await readObject(providers["edge-1"]!, "ConfigMap", remoteNs, "kube-root-ca.crt").then(
        (cm) => cm?.metadata?.labels?.[ORIGIN_CLUSTER],
      ),
      undefined,
      "the provider's own root CA stays",
    );

    await home.core.patchNamespacedConfigMap({
      name: "settings",
      namespace: ns,
      body: [{ op: "replace", path: "/data/mode", value: "safe" }],
    });
    for (const client of Object.values(providers)) {
      await eventually(async () => {
        const configMap = (await readObject(client, "ConfigMap", remoteNs, "settings")) as
          | { data?: Record<string, string> }
          | undefined;
        assert.deepEqual(configMap?.data, { mode: "safe" });
      });
    }

    await home.core.deleteNamespacedConfigMap({ name: "settings", namespace: ns });
    await home.core.deleteNamespacedSecret({ name: "db", namespace: ns });
    await home.core.deleteNamespacedService({ name: "web", namespace: ns });
    for (const client of Object.values(providers)) {
      await eventually(async () => {
        assert.equal(await readObject(client, "ConfigMap", remoteNs, "settings"), undefined);
        assert.equal(await readObject(client, "Secret", remoteNs, "db"), undefined);
        assert.equal(await readObject(client, "Service", remoteNs, "web"), undefined);
      });
    }
  });

  test("a pod the provider refuses shows the provider's message and stays Pending", async () => {
    await home.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: "root" },
        spec: {
          nodeSelector: { "kubernetes.io/hostname": "tenantry-edge-1" },
          containers: [{ name: "root", image: "busybox", securityContext: { privileged: true } }],
        },
      },
    });
    const refused = await eventually(
      async () => {
        const pod = await readPod(home, ns, "root");
        const ready = pod?.status?.conditions?.find((c) => c.type === "Ready");
        assert.equal(ready?.status, "False");
        assert.equal(ready?.reason, "ProviderRefused", JSON.stringify(pod?.status));
        return pod!;
      },
      { timeoutMs: 30_000 },
    );
    assert.equal(refused.status?.phase, "Pending");
    assert.match(refused.status?.message ?? "", /edge-1.*refused the pod.*privileged/);
    assert.equal(await readPod(providers["edge-1"]!, remoteNs, "root"), undefined);
    const described = await kubectl(kubeconfigPath("home"), ["describe", "pod", "-n", ns, "root"]);
    assert.match(described.stdout, /privileged/);
    await home.core.deleteNamespacedPod({ name: "root", namespace: ns });
    await eventually(async () => assert.equal(await readPod(home, ns, "root"), undefined));
  });

  test("start-up time: a pod bound to a virtual node versus one bound to a local KWOK node", async (t) => {
    const localNode = (await home.core.listNode({ labelSelector: "type=kwok" })).items[0]!.metadata!.name!;
    const measure = async (prefix: string, nodeName: string, count: number): Promise<number[]> => {
      const times = await Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const name = `${prefix}-${i}`;
          const started = Date.now();
          await home.core.createNamespacedPod({
            namespace: ns,
            body: {
              metadata: { name, labels: { app: "timing" } },
              spec: {
                nodeName,
                tolerations: [VIRTUAL_NODE_TOLERATION],
                containers: [{ name: "c", image: "nginx" }],
              },
            },
          });
          await eventually(
            async () => assert.equal((await readPod(home, ns, name))?.status?.phase, "Running"),
            {
              timeoutMs: 60_000,
              intervalMs: 100,
            },
          );
          return Date.now() - started;
        }),
      );
      return times.sort((a, b) => a - b);
    };
    const remote = await measure("remote", "tenantry-edge-1", 20);
    const local = await measure("local", localNode, 20);
    const p50 = (times: number[]) => times[Math.floor(times.length / 2)]!;
    t.diagnostic(
      `creation to Running, p50 over 20 pods: virtual node ${p50(remote)} ms (max ${remote.at(-1)} ms); local KWOK node ${p50(local)} ms (max ${local.at(-1)} ms)`,
    );
    await home.core.deleteCollectionNamespacedPod({ namespace: ns, labelSelector: "app=timing" });
    await eventually(
      async () =>
        assert.equal(
          (await home.core.listNamespacedPod({ namespace: ns, labelSelector: "app=timing" })).items.length,
          0,
        ),
      { timeoutMs: 60_000 },
    );
  });
});
