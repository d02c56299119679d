import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1Node,
  type V1Pod,
} from "@kubernetes/client-node";
import { isNotFound } from "../../src/kube/index.js";
import {
  NAMESPACE_OFFLOADING_NAME,
  type NamespaceOffloading,
  PEERING_LABEL,
  REPLICA_LABEL,
  REPLICATED_DEPLOYMENT_LABEL,
  type ReplicatedDeployment,
  type ReplicatedDeploymentSpec,
  VIRTUAL_NODE_TAINT,
} from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { FAKE_NODE_RUN_LABEL, fakeVirtualNodes } from "../../testing/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import { adminClient, kubeconfigPath } from "./support.js";

const REGION = "topology.kubernetes.io/region";
const PROVIDER = "tenantry.dev/provider";
const SECURITY = "tenantry.dev/security-policy";
/** The shared topology: home consumes edge-1 (eu-south, aws, strict) and edge-2 (us-east, gcp, standard). */
const NODE_OF_REGION: Record<string, string> = {
  "eu-south": "tenantry-edge-1",
  "us-east": "tenantry-edge-2",
};
const VIRTUAL = { key: "tenantry.dev/type", operator: "In", values: ["virtual-node"] };

const home = adminClient("home");
const config = kubeconfigPath("home");

/**
 * A Deployment template. Its pods tolerate the virtual-node taint themselves (the offloading webhook
 * adds the same toleration), and request `cpu`: more than a virtual node offers keeps them Pending.
 */
function template(app: string, replicas: number, cpu = "10m"): ReplicatedDeploymentSpec["template"] {
  return {
    metadata: { labels: { "app.kubernetes.io/part-of": "shop" } },
    spec: {
      replicas,
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: { app } },
        spec: {
          containers: [{ name: app, image: "registry.k8s.io/pause:3.10", resources: { requests: { cpu } } }],
          tolerations: [{ ...VIRTUAL_NODE_TAINT, operator: "Equal" }],
        },
      },
    },
  };
}

async function createReplicated(namespace: string, name: string, spec: ReplicatedDeploymentSpec) {
  return (await home.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "ReplicatedDeployment",
    metadata: { name, namespace },
    spec,
  } as ReplicatedDeployment)) as ReplicatedDeployment;
}

async function readReplicated(namespace: string, name: string): Promise<ReplicatedDeployment | undefined> {
  try {
    return (await home.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "ReplicatedDeployment",
      metadata: { name, namespace },
    })) as ReplicatedDeployment;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
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

/** The replica Deployments of a ReplicatedDeployment that are not being deleted. */
async function replicasOf(namespace: string, name: string): Promise<V1Deployment[]> {
  const list = await home.apps.listNamespacedDeployment({
    namespace,
    labelSelector: `${REPLICATED_DEPLOYMENT_LABEL}=${name}`,
  });
  return list.items.filter((d) => !d.metadata?.deletionTimestamp);
}

function requiredTerms(d: V1Deployment) {
  return d.spec!.template.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!
    .nodeSelectorTerms;
}

/** The value a replica's pods are pinned to for `key` (from its only affinity term). */
function pinnedValue(d: V1Deployment, key: string): string | undefined {
  const terms = requiredTerms(d);
  assert.equal(terms.length, 1, JSON.stringify(terms));
  return terms[0]!.matchExpressions!.find((r) => r.key === key && r.operator === "In")?.values?.[0];
}

function readyOf(rd: ReplicatedDeployment | undefined) {
  return rd?.status?.conditions?.find((c) => c.type === "Ready");
}

describe("ReplicatedDeployment on the shared topology", () => {
  const namespace = uniqueName("rdeploy");
  const bare = uniqueName("rd-bare");
  const follow = uniqueName("rd-nodes");
  const run = follow.replace(/[^a-z0-9]/g, "");
  const fakeNodes = fakeVirtualNodes(run, 2);

  before(async () => {
    for (const name of [namespace, bare, follow])
      await home.core.createNamespace({ body: { metadata: { name } } });
    // The offloading controllers fill the maps; replication only reads this spec.
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace },
      // Real virtual nodes only: benchmarks add fake ones, with no peering.
      spec: {
        podOffloadingStrategy: "Remote",
        clusterSelector: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: PEERING_LABEL, operator: "Exists" }] }],
        },
      },
    });
    // Pods run remotely once the namespace's replicas exist in edge-1 and edge-2.
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
    for (const node of fakeNodes)
      await kubectl(config, ["delete", "node", node.metadata!.name!, "--ignore-not-found"]);
    for (const ns of [namespace, bare, follow]) {
      await kubectl(config, [
        "delete",
        "replicateddeployments,namespaceoffloadings",
        "--all",
        "-n",
        ns,
        "--wait=false",
      ]);
      await kubectl(config, ["delete", "namespace", ns, "--wait=false"]);
    }
  });

  test("region granularity: one Deployment per region, pinned to its virtual node, its pods running there", async () => {
    const rd = await createReplicated(namespace, "web", {
      template: template("web", 1),
      generationLabels: [REGION],
    });
    const deployments = await eventually(
      async () => {
        const found = await replicasOf(namespace, "web");
        assert.equal(found.length, 2);
        return found;
      },
      { timeoutMs: 60_000 },
    );
    assert.deepEqual(deployments.map((d) => pinnedValue(d, REGION)).sort(), ["eu-south", "us-east"]);
    for (const d of deployments) {
      const hash = d.metadata!.labels![REPLICA_LABEL]!;
      assert.equal(d.metadata!.name, `web-${hash}`);
      assert.equal(d.metadata!.labels!["app.kubernetes.io/part-of"], "shop");
      assert.deepEqual(
        d.metadata!.ownerReferences?.map((o) => [o.kind, o.name, o.uid, o.controller]),
        [["ReplicatedDeployment", "web", rd.metadata!.uid, true]],
      );
      assert.deepEqual(d.spec!.selector.matchLabels, { app: "web", [REPLICA_LABEL]: hash });
      assert.deepEqual({ ...requiredTerms(d)[0]!.matchExpressions![0] }, VIRTUAL);
    }

    const status = await eventually(async () => {
      const current = await readReplicated(namespace, "web");
      assert.equal(current?.status?.observedGeneration, current?.metadata?.generation);
      assert.equal(current?.status?.deployments?.length, 2);
      return current!.status!;
    });
    assert.equal(status.deploymentCount, 2);
    for (const entry of status.deployments!) {
      const region = entry.generationLabelsValues![REGION]!;
      assert.deepEqual(entry.virtualNodes, [NODE_OF_REGION[region]]);
      assert.equal(entry.name, deployments.find((d) => pinnedValue(d, REGION) === region)!.metadata!.name);
    }
    assert.equal(readyOf({ status } as ReplicatedDeployment)?.observedGeneration, status.observedGeneration);

    // The scheduler binds each replica's pod to the virtual node of its region; it runs in that provider.
    await eventually(
      async () => {
        const pods = (
          await home.core.listNamespacedPod({
            namespace,
            labelSelector: `${REPLICATED_DEPLOYMENT_LABEL}=web`,
          })
        ).items;
        assert.equal(pods.length, 2);
        for (const pod of pods as V1Pod[]) {
          const replica = deployments.find(
            (d) => d.metadata!.labels![REPLICA_LABEL] === pod.metadata!.labels![REPLICA_LABEL],
          )!;
          assert.equal(pod.spec?.nodeName, NODE_OF_REGION[pinnedValue(replica, REGION)!]);
          assert.equal(pod.status?.phase, "Running");
        }
      },
      { timeoutMs: 90_000 },
    );
    await eventually(
      async () => {
        const current = await readReplicated(namespace, "web");
        assert.equal(readyOf(current)?.status, "True", readyOf(current)?.message);
        assert.equal(current?.status?.availableDeploymentCount, 2);
        assert.deepEqual(
          current?.status?.deployments?.map((d) => [d.readyReplicas, d.lastCondition?.type]),
          [
            [1, "Available"],
            [1, "Available"],
          ],
        );
      },
      { timeoutMs: 60_000 },
    );

    const explained = await kubectl(config, ["explain", "rdeploy.spec.generationLabels"]);
    assert.equal(explained.code, 0, explained.stderr);
    assert.match(
      explained.stdout.replace(/\s+/g, " "),
      /one replica per combination of their values over the selected virtual nodes/,
    );
    const listed = await kubectl(config, ["get", "rdeploy", "web", "-n", namespace]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /NAME\s+DEPLOYMENTS\s+AVAILABLE\s+READY\s+AGE/);
    assert.match(listed.stdout, /web\s+2\s+\d+\s+(True|False)/);
  });

  test("selectedClusters excluding strict leaves one replica, the very same Deployment object", async () => {
    const before = (await replicasOf(namespace, "web")).find((d) => pinnedValue(d, REGION) === "us-east")!;
    await patchReplicated(namespace, "web", {
      spec: {
        selectedClusters: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: SECURITY, operator: "NotIn", values: ["strict"] }] },
          ],
        },
      },
    });
    const [remaining] = await eventually(
      async () => {
        const found = await replicasOf(namespace, "web");
        assert.equal(found.length, 1);
        assert.ok(requiredTerms(found[0]!)[0]!.matchExpressions!.some((r) => r.key === SECURITY));
        return found;
      },
      { timeoutMs: 60_000 },
    );
    assert.equal(remaining!.metadata!.uid, before.metadata!.uid);
    assert.equal(remaining!.metadata!.name, before.metadata!.name);
    await eventually(async () => {
      const rd = await readReplicated(namespace, "web");
      assert.equal(rd?.status?.observedGeneration, rd?.metadata?.generation);
      assert.deepEqual(
        rd?.status?.deployments?.map((d) => d.generationLabelsValues),
        [{ [REGION]: "us-east" }],
      );
    });
  });

  test("switching generation labels creates the new replicas first and removes the old ones once those are Available", async () => {
    await createReplicated(namespace, "api", { template: template("api", 1), generationLabels: [REGION] });
    const old = await eventually(
      async () => {
        const rd = await readReplicated(namespace, "api");
        assert.equal(readyOf(rd)?.reason, "AllReplicasAvailable", readyOf(rd)?.message);
        assert.equal(rd?.status?.availableDeploymentCount, 2);
        return new Set((await replicasOf(namespace, "api")).map((d) => d.metadata!.uid));
      },
      { timeoutMs: 90_000 },
    );
    assert.equal(old.size, 2);

    // New replicas by provider, whose pods ask more cpu than a virtual node has: they stay Pending.
    await patchReplicated(namespace, "api", {
      spec: { generationLabels: [PROVIDER], template: template("api", 1, "1000") },
    });
    const stillServing = async () => {
      const found = await replicasOf(namespace, "api");
      assert.equal(found.length, 4);
      const fresh = found.filter((d) => !old.has(d.metadata!.uid));
      assert.deepEqual(fresh.map((d) => pinnedValue(d, PROVIDER)).sort(), ["aws", "gcp"]);
      const rd = await readReplicated(namespace, "api");
      assert.equal(rd?.status?.observedGeneration, rd?.metadata?.generation);
      assert.equal(readyOf(rd)?.reason, "ReplicasNotAvailable");
      assert.match(readyOf(rd)!.message, /keeping 2 obsolete replica/);
      const obsolete = rd?.status?.deployments?.filter((d) => d.obsolete) ?? [];
      assert.deepEqual(obsolete.map((d) => [d.generationLabelsValues?.[REGION] ?? "", d.available]).sort(), [
        ["eu-south", true],
        ["us-east", true],
      ]);
    };
    await eventually(stillServing, { timeoutMs: 60_000 });
    await sleep(3_000);
    await stillServing();

    // The new replicas' pods fit once they ask less: they run, and only then do the old ones go.
    await patchReplicated(namespace, "api", { spec: { template: template("api", 1) } });
    await eventually(
      async () => {
        const found = await replicasOf(namespace, "api");
        assert.deepEqual(found.map((d) => pinnedValue(d, PROVIDER)).sort(), ["aws", "gcp"]);
        const rd = await readReplicated(namespace, "api");
        assert.equal(readyOf(rd)?.reason, "AllReplicasAvailable", readyOf(rd)?.message);
        assert.equal(rd?.status?.deployments?.length, 2);
      },
      { timeoutMs: 90_000 },
    );
  });

  test("a replica a user deletes is created again", async () => {
    const [victim] = await replicasOf(namespace, "api");
    await home.apps.deleteNamespacedDeployment({ name: victim!.metadata!.name!, namespace });
    await eventually(
      async () => {
        const again = (await replicasOf(namespace, "api")).find(
          (d) => d.metadata!.name === victim!.metadata!.name,
        );
        assert.ok(again, "recreated");
        assert.notEqual(again.metadata!.uid, victim!.metadata!.uid);
      },
      { timeoutMs: 30_000 },
    );
  });

  test("deleting the ReplicatedDeployment deletes its replicas, in the foreground or in the background", async () => {
    assert.ok((await replicasOf(namespace, "api")).length > 0);
    assert.equal((await replicasOf(namespace, "web")).length, 1);
    // Foreground: the ReplicatedDeployment goes only after its replicas, and those after their pods
    // (whose copies in the providers are deleted first).
    const foreground = await kubectl(config, [
      "delete",
      "rdeploy",
      "api",
      "-n",
      namespace,
      "--cascade=foreground",
      "--wait=false",
    ]);
    assert.equal(foreground.code, 0, foreground.stderr);
    const background = await kubectl(config, ["delete", "rdeploy", "web", "-n", namespace, "--wait=false"]);
    assert.equal(background.code, 0, background.stderr);
    await eventually(
      async () => {
        for (const name of ["api", "web"]) {
          const left = await home.apps.listNamespacedDeployment({
            namespace,
            labelSelector: `${REPLICATED_DEPLOYMENT_LABEL}=${name}`,
          });
          assert.equal(
            left.items.length,
            0,
            `${name}: ${left.items.map((d) => d.metadata!.name).join(", ")}`,
          );
          assert.equal(await readReplicated(namespace, name), undefined);
        }
      },
      { timeoutMs: 60_000 },
    );
  });

  test("a namespace without NamespaceOffloading gets no replica and says why; Local offloading neither", async () => {
    await createReplicated(bare, "lonely", { template: template("lonely", 1) });
    await eventually(async () => {
      const ready = readyOf(await readReplicated(bare, "lonely"));
      assert.equal(ready?.status, "False");
      assert.equal(ready?.reason, "NamespaceNotOffloaded");
      assert.match(ready!.message, new RegExp(`namespace ${bare} has no NamespaceOffloading`));
    });
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace: bare },
      spec: { podOffloadingStrategy: "Local" },
    });
    await eventually(async () => {
      assert.equal(readyOf(await readReplicated(bare, "lonely"))?.reason, "LocalOnlyOffloading");
    });
    assert.deepEqual(await replicasOf(bare, "lonely"), []);
  });

  test("replicas that cannot be applied are reported by name, with the API server's reason", async () => {
    // The Deployment's own validation (not the ReplicatedDeployment's schema) refuses the container name.
    const broken = template("broken", 0);
    broken.spec.template.spec!.containers[0]!.name = "Not_A_Name";
    await createReplicated(namespace, "broken", { template: broken, generationLabels: [REGION] });
    // The template's own affinity excludes eu-south: that replica cannot exist.
    const picky = template("picky", 0);
    picky.spec.template.spec!.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: REGION, operator: "In", values: ["us-east"] }] }],
        },
      },
    };
    await createReplicated(namespace, "picky", { template: picky, generationLabels: [REGION] });
    await eventually(async () => {
      const rd = await readReplicated(namespace, "broken");
      const ready = readyOf(rd);
      assert.equal(rd?.status?.observedGeneration, rd?.metadata?.generation);
      assert.equal(ready?.reason, "ReplicaFailed");
      assert.match(
        ready!.message,
        /broken-\w+ \(topology\.kubernetes\.io\/region=(eu-south|us-east)\): .*spec\.template\.spec\.containers\[0\]\.name/,
      );
      assert.equal(rd?.status?.deployments?.filter((d) => d.error).length, 2);
    });
    assert.deepEqual(await replicasOf(namespace, "broken"), []);
    await eventually(async () => {
      const rd = await readReplicated(namespace, "picky");
      assert.equal(readyOf(rd)?.reason, "ReplicaFailed");
      assert.match(
        readyOf(rd)!.message,
        /picky-\w+ \(topology\.kubernetes\.io\/region=eu-south\): the template's own required node affinity and selectedClusters exclude every node/,
      );
      assert.deepEqual(
        (await replicasOf(namespace, "picky")).map((d) => pinnedValue(d, REGION)),
        ["us-east"],
      );
    });
  });

  test("virtual nodes joining, relabelled and leaving re-evaluate the replicas", async () => {
    const [first, second] = fakeNodes as [V1Node, V1Node];
    await home.objects.create({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: NAMESPACE_OFFLOADING_NAME, namespace: follow },
      spec: {
        clusterSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: FAKE_NODE_RUN_LABEL, operator: "In", values: [run] }] },
          ],
        },
      },
    });
    await createReplicated(follow, "follow", { template: template("follow", 0), generationLabels: [REGION] });
    const regions = async (count: number) =>
      eventually(async () => {
        const found = await replicasOf(follow, "follow");
        assert.equal(found.length, count, found.map((d) => d.metadata!.name).join(", "));
        return found.map((d) => pinnedValue(d, REGION)).sort();
      });
    await eventually(async () => {
      assert.equal(readyOf(await readReplicated(follow, "follow"))?.reason, "NoClusterSelected");
    });

    await home.core.createNode({ body: first });
    assert.deepEqual(await regions(1), ["fake-region-0"]);
    await home.core.createNode({ body: second });
    assert.deepEqual(await regions(2), ["fake-region-0", "fake-region-1"]);

    // The second node moves to the first one's region: one replica for both.
    await home.core.patchNode(
      {
        name: second.metadata!.name!,
        body: { metadata: { labels: { [REGION]: "fake-region-0" } } },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    assert.deepEqual(await regions(1), ["fake-region-0"]);
    await eventually(async () => {
      const rd = await readReplicated(follow, "follow");
      assert.deepEqual(
        rd?.status?.deployments?.map((d) => d.virtualNodes),
        [[first.metadata!.name, second.metadata!.name]],
      );
    });

    await home.core.deleteNode({ name: first.metadata!.name! });
    await eventually(async () => {
      const rd = await readReplicated(follow, "follow");
      assert.deepEqual(
        rd?.status?.deployments?.map((d) => d.virtualNodes),
        [[second.metadata!.name]],
      );
    });
    await home.core.deleteNode({ name: second.metadata!.name! });
    assert.deepEqual(await regions(0), []);
    await eventually(async () => {
      assert.equal(readyOf(await readReplicated(follow, "follow"))?.reason, "NoClusterSelected");
    });
  });

  test("bad specs are refused, naming the field", async () => {
    const create = async (edit: (spec: ReplicatedDeploymentSpec) => void) => {
      const spec: ReplicatedDeploymentSpec = { template: template("odd", 1) };
      edit(spec);
      const manifest = JSON.stringify({
        apiVersion: TENANTS_API_VERSION,
        kind: "ReplicatedDeployment",
        metadata: { name: "odd", namespace },
        spec,
      });
      const result = await kubectl(config, ["create", "-f", "-"], manifest);
      assert.notEqual(result.code, 0, "refused");
      return result.stderr;
    };
    assert.match(
      await create((spec) => {
        spec.template.spec.selector = { matchLabels: { app: "other" } };
      }),
      /spec\.template\.spec\.selector\.matchLabels: Invalid value: .*selector\.matchLabels must all appear, with the same values, in template\.metadata\.labels/,
    );
    assert.match(
      await create((spec) => {
        spec.template.spec.selector = {};
      }),
      /spec\.template\.spec\.selector: Invalid value: .*selector must not be empty/,
    );
    assert.match(
      await create((spec) => {
        spec.generationLabels = Array.from({ length: 9 }, (_, i) => `example.com/l${i}`);
      }),
      /spec\.generationLabels: Too many: 9: must have at most 8 items/,
    );
    assert.match(
      await create((spec) => {
        spec.generationLabels = ["not a label"];
      }),
      /spec\.generationLabels\[0\]: Invalid value: "not a label"/,
    );
    assert.match(
      await create((spec) => {
        delete (spec.template.spec as { template?: unknown }).template;
      }),
      /spec\.template\.spec\.template: Required value/,
    );
  });
});
