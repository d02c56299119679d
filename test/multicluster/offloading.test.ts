import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import type { V1Pod } from "@kubernetes/client-node";
import { isNotFound } from "../../src/kube/index.js";
import type { NamespaceMap, NamespaceOffloading } from "../../src/multicluster/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import { adminClient, exists, kubeconfigPath, tenantryOn } from "./support.js";

/** Runs on the shared topology: home consumes edge-1 (strict) and edge-2 (standard). */
const home = adminClient("home");
const edge1 = adminClient("edge-1");
const edge2 = adminClient("edge-2");
const homeId = () => tenantryOn("home").clusterId;

async function readOffloading(namespace: string): Promise<NamespaceOffloading | undefined> {
  try {
    return (await home.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: "offloading", namespace },
    })) as unknown as NamespaceOffloading;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

async function offload(namespace: string, spec: Record<string, unknown>): Promise<void> {
  await home.core.createNamespace({ body: { metadata: { name: namespace } } });
  await home.objects.create({
    apiVersion: TENANTS_API_VERSION,
    kind: "NamespaceOffloading",
    metadata: { name: "offloading", namespace },
    spec,
  } as never);
}

async function phaseOf(namespace: string, phase: string, timeoutMs = 30_000): Promise<NamespaceOffloading> {
  return eventually(
    async () => {
      const offloading = await readOffloading(namespace);
      assert.equal(offloading?.status?.offloadingPhase, phase, JSON.stringify(offloading?.status));
      assert.equal(offloading?.status?.observedGeneration, offloading?.metadata?.generation);
      return offloading!;
    },
    { timeoutMs },
  );
}

/** Creates a pod and returns it as plain JSON (the typed client returns model classes). */
async function createPod(request: { namespace: string; body: V1Pod }): Promise<V1Pod> {
  return JSON.parse(JSON.stringify(await home.core.createNamespacedPod(request))) as V1Pod;
}

/** `kubectl patch --type=merge` of a namespace's offloading spec, as a user would. */
function kubectlPatch(namespace: string, spec: Record<string, unknown>) {
  return kubectl(kubeconfigPath("home"), [
    "-n",
    namespace,
    "patch",
    "namespaceoffloading",
    "offloading",
    "--type=merge",
    "-p",
    JSON.stringify({ spec }),
  ]);
}

async function mapOf(peering: string): Promise<NamespaceMap> {
  return (await home.objects.read({
    apiVersion: TENANTS_API_VERSION,
    kind: "NamespaceMap",
    metadata: { name: peering, namespace: "tenantry-system" },
  })) as unknown as NamespaceMap;
}

const created: string[] = [];
after(async () => {
  await Promise.all(created.map((name) => home.core.deleteNamespace({ name }).catch(() => {})));
});

describe("namespace offloading on the shared topology", () => {
  test("Liqo thesis, 4.3: Remote, EnforceSameName, only strict clusters → one replica, in edge-1, and pods only there", async () => {
    const ns = uniqueName("strict");
    created.push(ns);
    await offload(ns, {
      namespaceMappingStrategy: "EnforceSameName",
      podOffloadingStrategy: "Remote",
      clusterSelector: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "tenantry.dev/security-policy", operator: "In", values: ["strict"] }] },
        ],
      },
    });
    const offloading = await phaseOf(ns, "Ready");
    assert.equal(offloading.status?.remoteNamespaceName, ns);
    assert.deepEqual(Object.keys(offloading.status?.remoteNamespacesConditions ?? {}), ["edge-1"]);
    const conditions = offloading.status!.remoteNamespacesConditions!["edge-1"]!;
    assert.deepEqual(
      conditions.map((c) => [c.type, c.status]),
      [
        ["Ready", "True"],
        ["OffloadingRequired", "True"],
      ],
    );
    const remote = await edge1.core.readNamespace({ name: ns });
    assert.equal(remote.metadata?.labels?.["offloading.tenantry.dev/origin-cluster-id"], homeId());
    assert.equal(remote.metadata?.labels?.["offloading.tenantry.dev/origin-namespace"], ns);
    assert.equal(
      remote.metadata?.labels?.["tenantry.dev/tenant"],
      "peer-home",
      "the replica belongs to home's tenant in edge-1",
    );
    assert.equal(await exists(edge2, "v1", "Namespace", ns), false);
    const map = await mapOf("edge-1");
    assert.equal(map.spec.desiredMapping?.[ns], ns);
    assert.equal(map.status?.currentMapping?.[ns]?.phase, "Accepted");
    assert.equal((await mapOf("edge-2")).spec.desiredMapping?.[ns], undefined);

    // The pod webhook forces the strategy: only virtual nodes matching the selector, with the toleration.
    const pod = await createPod({
      namespace: ns,
      body: {
        metadata: { name: "web" },
        spec: { containers: [{ name: "web", image: "nginx" }] },
      },
    });
    assert.deepEqual(pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: "tenantry.dev/security-policy", operator: "In", values: ["strict"] },
            { key: "tenantry.dev/type", operator: "In", values: ["virtual-node"] },
          ],
        },
      ],
    });
    assert.ok(
      pod.spec?.tolerations?.some(
        (t) => t.key === "virtual-node.tenantry.dev/not-allowed" && t.effect === "NoExecute",
      ),
    );
    const scheduled = await eventually(async () => {
      const current: V1Pod = await home.core.readNamespacedPod({ name: "web", namespace: ns });
      assert.ok(current.spec?.nodeName, "scheduled");
      return current;
    });
    assert.equal(scheduled.spec?.nodeName, "tenantry-edge-1");
    // A pod that insists on local nodes cannot run in a Remote namespace: refused, not left Pending.
    const refused = await kubectl(
      kubeconfigPath("home"),
      ["-n", ns, "apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "local-only" },
        spec: {
          containers: [{ name: "c", image: "nginx" }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  {
                    matchExpressions: [
                      { key: "tenantry.dev/type", operator: "NotIn", values: ["virtual-node"] },
                    ],
                  },
                ],
              },
            },
          },
        },
      }),
    );
    assert.notEqual(refused.code, 0);
    assert.match(
      refused.stderr,
      new RegExp(
        `namespace ${ns} is offloaded: the pod's required node affinity leaves no node that podOffloadingStrategy Remote and the namespace's clusterSelector allow`,
      ),
    );
  });

  test("a namespace's pods: LocalAndRemote adds a local-nodes term, Local changes nothing; a pod asking for more than allowed is refused", async () => {
    const ns = uniqueName("both");
    created.push(ns);
    await offload(ns, {
      clusterSelector: {
        nodeSelectorTerms: [
          {
            matchExpressions: [{ key: "topology.kubernetes.io/region", operator: "In", values: ["us-east"] }],
          },
        ],
      },
    });
    await phaseOf(ns, "Ready");
    const pod = await createPod({
      namespace: ns,
      body: { metadata: { name: "p" }, spec: { containers: [{ name: "c", image: "nginx" }] } },
    });
    assert.deepEqual(
      pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms,
      [
        { matchExpressions: [{ key: "topology.kubernetes.io/region", operator: "In", values: ["us-east"] }] },
        { matchExpressions: [{ key: "tenantry.dev/type", operator: "NotIn", values: ["virtual-node"] }] },
      ],
    );
    // The user's own terms stay, intersected with the namespace's.
    const narrowed = await createPod({
      namespace: ns,
      body: {
        metadata: { name: "q" },
        spec: {
          containers: [{ name: "c", image: "nginx" }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [
                  { matchExpressions: [{ key: "tenantry.dev/type", operator: "DoesNotExist" }] },
                ],
              },
            },
          },
        },
      },
    });
    assert.deepEqual(
      narrowed.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
        ?.nodeSelectorTerms,
      [
        {
          matchExpressions: [
            { key: "tenantry.dev/type", operator: "DoesNotExist" },
            { key: "topology.kubernetes.io/region", operator: "In", values: ["us-east"] },
          ],
        },
        {
          matchExpressions: [
            { key: "tenantry.dev/type", operator: "DoesNotExist" },
            { key: "tenantry.dev/type", operator: "NotIn", values: ["virtual-node"] },
          ],
        },
      ],
    );
    // Local: pods are left alone.
    await home.objects.patch(
      {
        apiVersion: TENANTS_API_VERSION,
        kind: "NamespaceOffloading",
        metadata: { name: "offloading", namespace: ns },
        spec: { podOffloadingStrategy: "Local" },
      } as never,
      undefined,
      undefined,
      undefined,
      undefined,
      "application/merge-patch+json" as never,
    );
    await eventually(async () => {
      const local = await createPod({
        namespace: ns,
        body: { metadata: { generateName: "local-" }, spec: { containers: [{ name: "c", image: "nginx" }] } },
      });
      assert.equal(local.spec?.affinity, undefined);
      assert.equal(
        local.spec?.tolerations?.some((t) => t.key === "virtual-node.tenantry.dev/not-allowed"),
        false,
      );
    });
  });

  test("NoClusterSelected when no peer matches; the selection follows a spec change", async () => {
    const ns = uniqueName("none");
    created.push(ns);
    await offload(ns, {
      podOffloadingStrategy: "Remote",
      clusterSelector: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: "topology.kubernetes.io/region", operator: "In", values: ["mars"] }] },
        ],
      },
    });
    const none = await phaseOf(ns, "NoClusterSelected");
    assert.match(
      none.status!.conditions!.find((c) => c.type === "Ready")!.message,
      /no peered cluster matches the clusterSelector/,
    );
    const pod = await createPod({
      namespace: ns,
      body: { metadata: { name: "p" }, spec: { containers: [{ name: "c", image: "nginx" }] } },
    });
    assert.equal(pod.spec?.nodeName, undefined);
    const edit = await kubectlPatch(ns, {
      clusterSelector: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              { key: "topology.kubernetes.io/region", operator: "In", values: ["mars", "us-east"] },
            ],
          },
        ],
      },
    });
    assert.equal(edit.code, 0, edit.stderr);
    const ready = await phaseOf(ns, "Ready");
    assert.deepEqual(Object.keys(ready.status!.remoteNamespacesConditions!), ["edge-2"]);
    assert.ok(await exists(edge2, "v1", "Namespace", `${ns}-${homeId()}`));
  });

  test("errors in status: a DefaultName over 63 characters, an EnforceSameName that collides; the mapping strategy cannot change", async () => {
    const long = `long-${"x".repeat(22)}`;
    created.push(long);
    await offload(long, {});
    const tooLong = await phaseOf(long, "AllFailed");
    assert.match(
      tooLong.status!.conditions!.find((c) => c.type === "Ready")!.message,
      /DefaultName would name the remote namespaces ".*" \(64 characters, more than 63\): the local namespace name may have at most 26 characters/,
    );
    assert.equal(await exists(edge1, "v1", "Namespace", `${long}-${homeId()}`), false);

    const taken = uniqueName("taken");
    created.push(taken);
    await edge2.core.createNamespace({ body: { metadata: { name: taken } } });
    try {
      await offload(taken, {
        namespaceMappingStrategy: "EnforceSameName",
        clusterSelector: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: "tenantry.dev/provider", operator: "In", values: ["gcp"] }] },
          ],
        },
      });
      const collided = await phaseOf(taken, "AllFailed");
      assert.match(
        collided.status!.remoteNamespacesConditions!["edge-2"]![0]!.message ?? "",
        new RegExp(
          `namespace ${taken} exists in cluster edge-2 but this cluster may not read it: it is not the replica of ${taken} \\(choose another namespaceMappingStrategy\\)`,
        ),
      );
      const still = await edge2.core.readNamespace({ name: taken });
      assert.equal(
        still.metadata?.labels?.["offloading.tenantry.dev/origin-cluster-id"],
        undefined,
        "the other namespace is untouched",
      );

      const change = await kubectlPatch(taken, { namespaceMappingStrategy: "DefaultName" });
      assert.notEqual(change.code, 0);
      assert.match(
        change.stderr,
        /spec\.namespaceMappingStrategy: Invalid value: "string": namespaceMappingStrategy cannot change after creation/,
      );
    } finally {
      await edge2.core.deleteNamespace({ name: taken }).catch(() => {});
    }
  });

  test("the namespace label creates the default offloading (every peer, DefaultName); removing it removes the replicas", async () => {
    const ns = uniqueName("label");
    created.push(ns);
    await home.core.createNamespace({
      body: { metadata: { name: ns, labels: { "tenantry.dev/offloading": "enabled" } } },
    });
    const ready = await phaseOf(ns, "Ready");
    assert.equal(ready.spec.namespaceMappingStrategy, "DefaultName");
    assert.equal(ready.spec.podOffloadingStrategy, "LocalAndRemote");
    assert.deepEqual(Object.keys(ready.status!.remoteNamespacesConditions!).sort(), ["edge-1", "edge-2"]);
    const remoteName = `${ns}-${homeId()}`;
    assert.equal(ready.status?.remoteNamespaceName, remoteName);
    for (const cluster of [edge1, edge2]) assert.ok(await exists(cluster, "v1", "Namespace", remoteName));

    const unlabel = await kubectl(kubeconfigPath("home"), [
      "label",
      "namespace",
      ns,
      "tenantry.dev/offloading-",
    ]);
    assert.equal(unlabel.code, 0, unlabel.stderr);
    await eventually(
      async () => {
        assert.equal(await readOffloading(ns), undefined);
        for (const cluster of [edge1, edge2]) {
          const left = await cluster.core.readNamespace({ name: remoteName }).catch(() => undefined);
          assert.ok(!left || left.metadata?.deletionTimestamp, "remote namespace deleted");
        }
      },
      { timeoutMs: 60_000 },
    );
  });

  test("Liqo thesis, 6.1.3: deleting the offloading shows Terminating, removes the replicas and only then the offloading", async () => {
    const ns = uniqueName("delete");
    created.push(ns);
    await offload(ns, {});
    await phaseOf(ns, "Ready");
    const remoteName = `${ns}-${homeId()}`;
    const seen = new Set<string>();
    await home.objects.delete({
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceOffloading",
      metadata: { name: "offloading", namespace: ns },
    });
    await eventually(
      async () => {
        const offloading = await readOffloading(ns);
        if (offloading?.status?.offloadingPhase) seen.add(offloading.status.offloadingPhase);
        if (offloading) {
          // While it exists, a replica still exists or is being removed.
          assert.fail(`still there (${offloading.status?.offloadingPhase})`);
        }
      },
      { timeoutMs: 90_000, intervalMs: 100 },
    );
    assert.ok(seen.has("Terminating"), [...seen].join(","));
    await eventually(async () => {
      for (const cluster of [edge1, edge2]) {
        const left = await cluster.core.readNamespace({ name: remoteName }).catch(() => undefined);
        assert.ok(!left || left.metadata?.deletionTimestamp, "remote namespace deleted");
      }
    });
    for (const peering of ["edge-1", "edge-2"]) {
      const map = await mapOf(peering);
      assert.equal(map.spec.desiredMapping?.[ns], undefined);
      assert.equal(map.status?.currentMapping?.[ns], undefined);
    }
  });
});
