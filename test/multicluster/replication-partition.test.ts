/**
 * Replicas kept by the providers (`podManagement: Provider`) on the shared topology: each replica a
 * ReplicaSet in its provider, which keeps its pods while cut off from home; home converges when the
 * link returns; a Consumer replica switched over leaves no Deployment or reflected pod behind; and
 * the peering's credentials write ReplicaSets in the peer tenant's namespaces only.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { KubeConfig, type V1ReplicaSet } from "@kubernetes/client-node";
import { ClusterClient, statusCode } from "../../src/kube/index.js";
import {
  KUBECONFIG_KEY,
  NAMESPACE_OFFLOADING_NAME,
  type NamespaceOffloading,
  PEERING_LABEL,
  peerSecretName,
  REPLICATED_DEPLOYMENT_LABEL,
  type ReplicatedDeployment,
  type ReplicatedDeploymentSpec,
  VIRTUAL_NODE_TAINT,
  virtualNodeName,
} from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import { PeeringPartition } from "../support/partition.js";
import { adminClient, exists, kubeconfigPath, nodeReadyBecomes } from "./support.js";

const REGION = "topology.kubernetes.io/region";
const CUT = "edge-1";
const home = adminClient("home");
const providers = { "edge-1": adminClient("edge-1"), "edge-2": adminClient("edge-2") };
const config = kubeconfigPath("home");

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(1);
}

function template(app: string, replicas: number): ReplicatedDeploymentSpec["template"] {
  return {
    spec: {
      replicas,
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: { app } },
        spec: {
          containers: [
            { name: app, image: "registry.k8s.io/pause:3.10", resources: { requests: { cpu: "10m" } } },
          ],
          tolerations: [{ ...VIRTUAL_NODE_TAINT, operator: "Equal" }],
        },
      },
    },
  };
}

/** selectedClusters: the virtual node of one provider. */
function only(provider: string): ReplicatedDeploymentSpec["selectedClusters"] {
  return {
    nodeSelectorTerms: [{ matchExpressions: [{ key: PEERING_LABEL, operator: "In", values: [provider] }] }],
  };
}

async function readReplicated(namespace: string, name: string): Promise<ReplicatedDeployment> {
  return (await home.objects.read({
    apiVersion: TENANTS_API_VERSION,
    kind: "ReplicatedDeployment",
    metadata: { name, namespace },
  })) as ReplicatedDeployment;
}

async function patchReplicated(namespace: string, name: string, patch: unknown): Promise<void> {
  const result = await kubectl(config, [
    "patch",
    "replicateddeployment",
    name,
    "-n",
    namespace,
    "--type",
    "merge",
    "-p",
    JSON.stringify(patch),
  ]);
  assert.equal(result.code, 0, result.stderr);
}

/** Ready True for the current generation; returns the status. */
async function readyReplicated(namespace: string, name: string) {
  const rd = await readReplicated(namespace, name);
  const ready = rd.status?.conditions?.find((c) => c.type === "Ready");
  assert.equal(rd.status?.observedGeneration, rd.metadata?.generation);
  assert.equal(ready?.status, "True", ready?.message);
  return rd.status!;
}

/** The ReplicaSets of ReplicatedDeployment `name` in a provider (same namespace name: EnforceSameName). */
async function replicaSetsIn(provider: keyof typeof providers, namespace: string, name: string) {
  const list = await providers[provider].apps.listNamespacedReplicaSet({
    namespace,
    labelSelector: `${REPLICATED_DEPLOYMENT_LABEL}=${name}`,
  });
  return list.items.filter((s) => !s.metadata?.deletionTimestamp);
}

/** The one ReplicaSet of `name` in `provider`, with all of `replicas` pods Running and Ready. */
async function keptBy(provider: keyof typeof providers, namespace: string, name: string, replicas: number) {
  const sets = await replicaSetsIn(provider, namespace, name);
  assert.equal(sets.length, 1, JSON.stringify(sets.map((s) => s.metadata?.name)));
  const set = sets[0]!;
  assert.equal(set.spec?.replicas, replicas);
  const pods = (
    await providers[provider].core.listNamespacedPod({
      namespace,
      labelSelector: Object.entries(set.spec!.selector.matchLabels!)
        .map(([k, v]) => `${k}=${v}`)
        .join(","),
    })
  ).items.filter((p) => !p.metadata?.deletionTimestamp);
  assert.equal(pods.length, replicas);
  for (const pod of pods) {
    assert.equal(pod.status?.phase, "Running", pod.metadata?.name);
    assert.equal(pod.status?.conditions?.find((c) => c.type === "Ready")?.status, "True", pod.metadata?.name);
  }
  return { set, pods };
}

describe("ReplicatedDeployment replicas kept by their providers", () => {
  const namespace = uniqueName("rd-part");
  let partition: PeeringPartition | undefined;

  before(async () => {
    await home.core.createNamespace({ body: { metadata: { name: namespace } } });
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace },
      spec: {
        namespaceMappingStrategy: "EnforceSameName",
        podOffloadingStrategy: "Remote",
        clusterSelector: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: PEERING_LABEL, operator: "Exists" }] }],
        },
      },
    });
    await eventually(
      async () => {
        const offloading = (await home.objects.read({
          apiVersion: TENANTS_API_VERSION,
          kind: "NamespaceOffloading",
          metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace },
        })) as NamespaceOffloading;
        assert.equal(offloading.status?.offloadingPhase, "Ready", JSON.stringify(offloading.status));
      },
      { timeoutMs: 60_000 },
    );
  });

  after(async () => {
    await partition?.close();
    await kubectl(config, ["delete", "replicateddeployments", "--all", "-n", namespace, "--wait=false"]);
    await kubectl(config, ["delete", "namespaceoffloadings", "--all", "-n", namespace, "--wait=false"]);
    await kubectl(config, ["delete", "namespace", namespace, "--wait=false"]);
  });

  test("a Consumer replica switched to Provider: the ReplicaSet first, then the Deployment and its reflected pods go", async () => {
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "ReplicatedDeployment",
      metadata: { name: "shop", namespace },
      spec: { template: template("shop", 2), selectedClusters: only("edge-2") },
    } as ReplicatedDeployment);
    await eventually(() => readyReplicated(namespace, "shop"), { timeoutMs: 120_000 });
    // Today's replica: a Deployment here, its pods reflected into edge-2 as bare pods.
    const deployments = await home.apps.listNamespacedDeployment({ namespace });
    assert.equal(deployments.items.length, 1);
    const bare = await providers["edge-2"].core.listNamespacedPod({
      namespace,
      labelSelector: `${REPLICATED_DEPLOYMENT_LABEL}=shop`,
    });
    assert.equal(bare.items.length, 2);
    assert.ok(
      bare.items.every((p) => !p.metadata?.ownerReferences?.length),
      "reflected pods have no owner there",
    );

    await patchReplicated(namespace, "shop", { spec: { podManagement: "Provider" } });
    const { pods } = await eventually(
      async () => {
        await readyReplicated(namespace, "shop");
        assert.equal((await home.apps.listNamespacedDeployment({ namespace })).items.length, 0);
        assert.equal((await home.core.listNamespacedPod({ namespace })).items.length, 0);
        return keptBy("edge-2", namespace, "shop", 2);
      },
      { timeoutMs: 120_000 },
    );
    // Every pod left in edge-2 is the ReplicaSet's: the reflected ones are gone.
    assert.ok(pods.every((p) => p.metadata?.ownerReferences?.[0]?.kind === "ReplicaSet"));
    const all = await providers["edge-2"].core.listNamespacedPod({
      namespace,
      labelSelector: `${REPLICATED_DEPLOYMENT_LABEL}=shop`,
    });
    assert.equal(all.items.filter((p) => !p.metadata?.deletionTimestamp).length, 2);
    const rd = await readReplicated(namespace, "shop");
    assert.ok(rd.metadata?.finalizers?.includes("tenantry.dev/remote-replicas"));
  });

  test("cut off from home, edge-1 replaces a lost pod itself; the link back, a scale change made meanwhile reaches it and the status catches up", {
    timeout: 400_000,
  }, async () => {
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "ReplicatedDeployment",
      metadata: { name: "web", namespace },
      spec: { template: template("web", 2), generationLabels: [REGION], podManagement: "Provider" },
    } as ReplicatedDeployment);
    const before = await eventually(
      async () => {
        const status = await readyReplicated(namespace, "web");
        assert.deepEqual(
          status.deployments
            ?.map((d) => [d.generationLabelsValues?.[REGION], d.readyReplicas, d.available])
            .sort(),
          [
            ["eu-south", 2, true],
            ["us-east", 2, true],
          ].sort(),
        );
        return keptBy(CUT, namespace, "web", 2);
      },
      { timeoutMs: 120_000 },
    );
    assert.equal((await home.core.listNamespacedPod({ namespace })).items.length, 0, "no pod here");

    partition = await PeeringPartition.route(home, CUT);
    // Home reaches edge-1 through the relay now; cut it, until home's virtual node says so.
    await eventually(() => readyReplicated(namespace, "web"), { timeoutMs: 60_000 });
    partition.sever();
    await nodeReadyBecomes(home, virtualNodeName(CUT), "False", 120_000);

    const lost = before.pods[0]!;
    const lostAt = Date.now();
    await providers[CUT].core.deleteNamespacedPod({ name: lost.metadata!.name!, namespace });
    const replaced = await eventually(
      async () => {
        const now = await keptBy(CUT, namespace, "web", 2);
        assert.ok(!now.pods.some((p) => p.metadata?.uid === lost.metadata?.uid), "the lost pod is gone");
        return now;
      },
      { timeoutMs: 120_000 },
    );
    const replacedSeconds = seconds(lostAt);
    assert.equal(
      replaced.set.metadata?.uid,
      before.set.metadata?.uid,
      "the same ReplicaSet, in edge-1 alone",
    );

    await patchReplicated(namespace, "web", { spec: { template: template("web", 3) } });
    const scaled = (await readReplicated(namespace, "web")).metadata!.generation!;
    // edge-2 is reachable: it gets the change while edge-1 cannot.
    await eventually(() => keptBy("edge-2", namespace, "web", 3), { timeoutMs: 120_000 });
    assert.equal((await replicaSetsIn(CUT, namespace, "web"))[0]?.spec?.replicas, 2, "edge-1 is cut off");

    await partition.restore();
    const restoredAt = Date.now();
    await nodeReadyBecomes(home, virtualNodeName(CUT), "True", 120_000);
    const after = await eventually(() => keptBy(CUT, namespace, "web", 3), { timeoutMs: 180_000 });
    const scaledSeconds = seconds(restoredAt);
    assert.equal(after.set.metadata?.uid, before.set.metadata?.uid, "scaled, not replaced");
    await eventually(
      async () => {
        const status = await readyReplicated(namespace, "web");
        assert.ok(status.observedGeneration! >= scaled);
        assert.deepEqual(
          status.deployments
            ?.map((d) => [d.generationLabelsValues?.[REGION], d.replicas, d.readyReplicas])
            .sort(),
          [
            ["eu-south", 3, 3],
            ["us-east", 3, 3],
          ],
        );
      },
      { timeoutMs: 120_000 },
    );
    process.stderr.write(
      `replication-partition: pod replaced by ${CUT} while cut off in ${replacedSeconds}s; after the link returned, its ReplicaSet scaled and Running in ${scaledSeconds}s, the status caught up in ${seconds(restoredAt)}s\n`,
    );
  });

  test("the peering's credentials write ReplicaSets in the peer tenant's namespaces and nowhere else", async () => {
    const other = uniqueName("rd-victim");
    const provider = providers[CUT];
    await provider.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name: other },
      spec: { owners: [{ kind: "User", name: `${other}-owner` }], namespaces: [{ name: "app" }] },
    } as never);
    try {
      await eventually(async () => assert.ok(await exists(provider, "v1", "Namespace", `${other}-app`)));
      const secret = await home.core.readNamespacedSecret({
        name: peerSecretName(CUT),
        namespace: "tenantry-system",
      });
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromString(Buffer.from(secret.data![KUBECONFIG_KEY]!, "base64").toString());
      const peer = new ClusterClient("peer-edge-1", kubeConfig);
      const replicaSet = (ns: string): V1ReplicaSet => ({
        apiVersion: "apps/v1",
        kind: "ReplicaSet",
        metadata: { name: "intruder", namespace: ns },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "intruder" } },
          template: {
            metadata: { labels: { app: "intruder" } },
            spec: { containers: [{ name: "c", image: "registry.k8s.io/pause:3.10" }] },
          },
        },
      });
      // The very rights the replicas use, in the replica namespace (a dry run: nothing is made).
      await peer.apps.createNamespacedReplicaSet({ namespace, body: replicaSet(namespace), dryRun: "All" });
      for (const target of [`${other}-app`, "default", "kube-system"]) {
        await assert.rejects(
          peer.apps.createNamespacedReplicaSet({ namespace: target, body: replicaSet(target) }),
          (err: unknown) => statusCode(err) === 403,
          `a ReplicaSet in ${target}`,
        );
        await assert.rejects(
          peer.apps.listNamespacedReplicaSet({ namespace: target }),
          (err: unknown) => statusCode(err) === 403,
          `listing ReplicaSets in ${target}`,
        );
      }
    } finally {
      await provider.objects
        .delete({ apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name: other } })
        .catch(() => {});
    }
  });

  test("deleting the ReplicatedDeployment deletes its ReplicaSets in every provider", async () => {
    await kubectl(config, ["delete", "replicateddeployment", "web", "-n", namespace, "--wait=false"]);
    await eventually(
      async () => {
        for (const provider of ["edge-1", "edge-2"] as const)
          assert.equal((await replicaSetsIn(provider, namespace, "web")).length, 0, provider);
        assert.ok(!(await exists(home, TENANTS_API_VERSION, "ReplicatedDeployment", "web", namespace)));
      },
      { timeoutMs: 120_000 },
    );
  });
});
