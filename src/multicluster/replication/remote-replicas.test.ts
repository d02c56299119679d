import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1ReplicaSet } from "@kubernetes/client-node";
import {
  EDGE_1,
  EDGE_2,
  EDGE_3,
  REGION,
  replicatedDeployment,
  virtualNode,
} from "../../../testing/replication-fixtures.js";
import type { NamespaceMap } from "../api/offloading.js";
import { REPLICA_LABEL, REPLICATED_DEPLOYMENT_LABEL } from "../api/replicated-deployment.js";
import { ORIGIN_CLUSTER_ID_LABEL } from "../offloading/labels.js";
import { labelSelectorMatches } from "../selectors.js";
import { PEERING_LABEL, VIRTUAL_NODE_TAINT } from "../virtual-node.js";
import { groupNodes } from "./combinations.js";
import {
  placementsOf,
  remoteReplicaSet,
  replicaSetAvailable,
  replicaSetsSummary,
  TEMPLATE_HASH_LABEL,
} from "./remote-replicas.js";
import { replicaDeployment } from "./replica.js";
import { deploymentAvailable } from "./status.js";

/** A virtual node with the Peering label a real one carries. */
function peered(node: typeof EDGE_1, peering: string) {
  return virtualNode(node.metadata!.name!, { ...node.metadata!.labels!, [PEERING_LABEL]: peering });
}
const NODES = [peered(EDGE_1, "edge-1"), peered(EDGE_2, "edge-2"), peered(EDGE_3, "edge-3")];
const BY_NAME = new Map(NODES.map((n) => [n.metadata!.name!, n]));

function map(peering: string, phase = "Accepted"): NamespaceMap {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "NamespaceMap",
    metadata: { name: peering, labels: { [PEERING_LABEL]: peering } },
    spec: {},
    status: { currentMapping: { shop: { remoteNamespace: `shop-${peering}`, phase } } },
  } as NamespaceMap;
}
const MAPS = [map("edge-1"), map("edge-2"), map("edge-3")];

const [euSouth, usEast] = groupNodes(NODES, [REGION]).combinations.sort((a, b) =>
  a.values[REGION]!.localeCompare(b.values[REGION]!),
);

describe("provider-kept replicas", () => {
  test("placements: one per virtual node of the combination, the declared pods split evenly", () => {
    const found = placementsOf(euSouth!, BY_NAME, MAPS, "shop", 5);
    assert.deepEqual(
      found.placements?.map((p) => [p.peering, p.remoteNamespace, p.replicas]),
      [
        ["edge-1", "shop-edge-1", 3],
        ["edge-3", "shop-edge-3", 2],
      ],
    );
    assert.deepEqual(
      placementsOf(usEast!, BY_NAME, MAPS, "shop", 2).placements?.map((p) => p.replicas),
      [2],
    );
  });

  test("placements: a node with no Peering behind it, or a replica namespace not accepted, is an error", () => {
    const fake = groupNodes([EDGE_2], [REGION]).combinations[0]!;
    assert.match(
      placementsOf(fake, new Map([[EDGE_2.metadata!.name!, EDGE_2]]), MAPS, "shop", 1).error ?? "",
      /virtual node tenantry-edge-2 has no Peering behind it/,
    );
    assert.match(
      placementsOf(usEast!, BY_NAME, [map("edge-2", "CreationLoopBackOff")], "shop", 1).error ?? "",
      /namespace shop has no accepted replica in cluster edge-2 yet/,
    );
  });

  test("the ReplicaSet: the replica's labels and pod template made runnable in the provider, the template's hash in its name and selector", () => {
    const rd = replicatedDeployment();
    const tolerating = replicatedDeployment();
    tolerating.spec.template.spec.template!.spec!.tolerations = [
      { ...VIRTUAL_NODE_TAINT, operator: "Equal" },
    ];
    const deployment = replicaDeployment(tolerating, usEast!);
    const placement = placementsOf(usEast!, BY_NAME, MAPS, "shop", 2).placements![0]!;
    const set = remoteReplicaSet(deployment, placement, "home-id", true);
    const hash = set.metadata!.labels![TEMPLATE_HASH_LABEL]!;
    assert.equal(set.metadata!.name, `${deployment.metadata!.name}-${hash}`);
    assert.equal(set.metadata!.namespace, "shop-edge-2");
    assert.equal(set.metadata!.labels![REPLICATED_DEPLOYMENT_LABEL], "web");
    assert.equal(set.metadata!.labels![REPLICA_LABEL], usEast!.hash);
    assert.equal(set.metadata!.labels![ORIGIN_CLUSTER_ID_LABEL], "home-id");
    assert.equal(set.metadata!.labels!.tier, "front");
    assert.equal(set.metadata!.ownerReferences, undefined);
    assert.equal(set.spec!.replicas, 2);
    const podLabels = set.spec!.template!.metadata!.labels!;
    assert.ok(labelSelectorMatches(set.spec!.selector, podLabels));
    assert.equal(podLabels[TEMPLATE_HASH_LABEL], hash);
    // Origin labels would make reflection take the provider's pods for its own.
    assert.equal(podLabels[ORIGIN_CLUSTER_ID_LABEL], undefined);
    // The virtual node's toleration and the pinning to it mean nothing in the provider.
    assert.deepEqual(set.spec!.template!.spec!.tolerations ?? [], []);
    assert.equal(set.spec!.template!.spec!.affinity?.nodeAffinity, undefined);

    const scaled = remoteReplicaSet(deployment, { ...placement, replicas: 4 }, "home-id", true);
    assert.equal(scaled.metadata!.name, set.metadata!.name, "a scale change is the same ReplicaSet");
    rd.spec.template.spec.template!.spec!.containers[0]!.image = "nginx:1.28";
    const changed = remoteReplicaSet(replicaDeployment(rd, usEast!), placement, "home-id", true);
    assert.notEqual(changed.metadata!.name, set.metadata!.name, "a template change is a new ReplicaSet");
  });

  test("the summary: Available only when every provider's ReplicaSet has seen its spec and has its pods", () => {
    const [one, three] = placementsOf(euSouth!, BY_NAME, MAPS, "shop", 3).placements!;
    const set = (replicas: number, available: number, observed = 1): V1ReplicaSet => ({
      metadata: { generation: 1 },
      spec: { replicas, selector: {} },
      status: {
        replicas,
        readyReplicas: available,
        availableReplicas: available,
        observedGeneration: observed,
      },
    });
    assert.ok(replicaSetAvailable(set(2, 2)));
    assert.ok(!replicaSetAvailable(set(2, 2, 0)), "an unobserved spec is not available yet");
    const ready = replicaSetsSummary("web-x", [
      { placement: one!, current: set(2, 2) },
      { placement: three!, current: set(1, 1) },
    ]);
    assert.ok(deploymentAvailable(ready));
    assert.equal(ready.spec!.replicas, 3);
    assert.equal(ready.status!.readyReplicas, 3);
    const cut = replicaSetsSummary("web-x", [
      { placement: one!, current: set(2, 2) },
      { placement: three!, error: "cluster edge-3: no answer" },
    ]);
    assert.ok(!deploymentAvailable(cut));
    assert.equal(cut.status!.readyReplicas, 2);
    assert.equal(cut.status!.conditions![0]!.message, "cluster edge-3: 0 of 1 pod(s) available");
  });
});
