import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1NodeSelector, V1PodSpec } from "@kubernetes/client-node";
import {
  EDGE_1,
  EDGE_2,
  EDGE_3,
  PROVIDER,
  REGION,
  replicatedDeployment,
  SECURITY,
} from "../../../testing/replication-fixtures.js";
import { REPLICA_LABEL, REPLICATED_DEPLOYMENT_LABEL } from "../api/replicated-deployment.js";
import { labelSelectorMatches, selectorMatches } from "../selectors.js";
import { groupNodes } from "./combinations.js";
import {
  COMBINATION_ANNOTATION,
  checkSpec,
  pinningTerm,
  ReplicaError,
  recordedCombination,
  replicaDeployment,
  replicaNodeSelector,
} from "./replica.js";

const VIRTUAL = { key: "tenantry.dev/type", operator: "In", values: ["virtual-node"] };
const term = (key: string, operator: string, values?: string[]) => ({
  matchExpressions: [{ key, operator, ...(values ? { values } : {}) }],
});

describe("replica Deployments", () => {
  const [euSouth, usEast] = groupNodes([EDGE_1, EDGE_2, EDGE_3], [REGION]).combinations.sort((a, b) =>
    a.values[REGION]!.localeCompare(b.values[REGION]!),
  );

  test("the pinning term: virtual nodes with the combination's values, or the one node by name", () => {
    assert.deepEqual(pinningTerm(euSouth!), {
      matchExpressions: [VIRTUAL, { key: REGION, operator: "In", values: ["eu-south"] }],
    });
    const [byNode] = groupNodes([EDGE_2], []).combinations;
    assert.deepEqual(pinningTerm(byNode!), {
      matchExpressions: [VIRTUAL],
      matchFields: [{ key: "metadata.name", operator: "In", values: ["tenantry-edge-2"] }],
    });
  });

  test("without own affinity or selectedClusters, the pods' affinity is the pinning term alone", () => {
    assert.deepEqual(replicaNodeSelector(undefined, undefined, pinningTerm(euSouth!)), {
      nodeSelectorTerms: [pinningTerm(euSouth!)],
    });
  });

  test("own terms × selectedClusters terms, each ANDed with the pin; contradictions and empty terms drop out", () => {
    const own: V1NodeSelector = {
      nodeSelectorTerms: [term("disk", "In", ["ssd"]), term("gpu", "Exists"), {}],
    };
    const selected: V1NodeSelector = {
      nodeSelectorTerms: [term(SECURITY, "NotIn", ["strict"]), term(REGION, "In", ["us-east"]), {}],
    };
    const result = replicaNodeSelector(own, selected, pinningTerm(euSouth!));
    // region In [us-east] contradicts the pin's region In [eu-south]: 2 own × 1 selected term remain.
    assert.equal(result.nodeSelectorTerms.length, 2);
    for (const t of result.nodeSelectorTerms) {
      const keys = t.matchExpressions!.map((r) => r.key);
      assert.ok(keys.includes(SECURITY) && keys.includes(REGION) && keys.includes("tenantry.dev/type"));
    }
    // The result still selects exactly the nodes the user's terms allow within the combination.
    const edge3 = { metadata: { ...EDGE_3.metadata, labels: { ...EDGE_3.metadata!.labels, disk: "ssd" } } };
    const edge1 = { metadata: { ...EDGE_1.metadata, labels: { ...EDGE_1.metadata!.labels, disk: "ssd" } } };
    assert.equal(selectorMatches(result, edge3), true);
    assert.equal(selectorMatches(result, edge1), false, "strict is excluded by selectedClusters");
    assert.equal(selectorMatches(result, EDGE_3), false, "no ssd, no gpu");
  });

  test("an own affinity that excludes the whole combination leaves no term", () => {
    const own = { nodeSelectorTerms: [term(REGION, "In", ["us-east"])] };
    assert.deepEqual(replicaNodeSelector(own, undefined, pinningTerm(euSouth!)).nodeSelectorTerms, []);
    assert.deepEqual(
      replicaNodeSelector({ nodeSelectorTerms: [{}] }, undefined, pinningTerm(euSouth!)).nodeSelectorTerms,
      [],
    );
  });

  test("the Deployment: name, labels, owner, selector and pods narrowed to the replica, pods pinned", () => {
    const rd = replicatedDeployment();
    const d = replicaDeployment(rd, euSouth!);
    const hash = euSouth!.hash;
    assert.equal(d.metadata!.name, `web-${hash}`);
    assert.equal(d.metadata!.namespace, "shop");
    assert.deepEqual(d.metadata!.labels, {
      tier: "front",
      [REPLICATED_DEPLOYMENT_LABEL]: "web",
      [REPLICA_LABEL]: hash,
    });
    assert.deepEqual(d.metadata!.ownerReferences, [
      {
        apiVersion: "tenantry.dev/v1alpha1",
        kind: "ReplicatedDeployment",
        name: "web",
        uid: rd.metadata!.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    assert.deepEqual(recordedCombination(d), { values: { [REGION]: "eu-south" } });
    assert.equal(d.spec!.replicas, 2);
    assert.deepEqual(d.spec!.selector.matchLabels, { app: "web", [REPLICA_LABEL]: hash });
    assert.deepEqual(d.spec!.template.metadata!.labels, {
      app: "web",
      [REPLICATED_DEPLOYMENT_LABEL]: "web",
      [REPLICA_LABEL]: hash,
    });
    assert.ok(labelSelectorMatches(d.spec!.selector, d.spec!.template.metadata!.labels!));
    const other = replicaDeployment(rd, usEast!);
    assert.equal(labelSelectorMatches(other.spec!.selector, d.spec!.template.metadata!.labels!), false);
    assert.deepEqual(
      d.spec!.template.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution,
      {
        nodeSelectorTerms: [pinningTerm(euSouth!)],
      },
    );
    assert.deepEqual(d.spec!.template.spec!.containers, [{ name: "web", image: "nginx:1.27" }]);
    // Pure: the ReplicatedDeployment is left as it was.
    assert.deepEqual(rd, replicatedDeployment());
  });

  test("the template's other affinity, preferred terms and unknown fields are kept", () => {
    const rd = replicatedDeployment();
    const podSpec = rd.spec.template.spec.template.spec as V1PodSpec & { futureField?: string };
    podSpec.futureField = "kept";
    podSpec.affinity = {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: "kubernetes.io/hostname" }],
      },
      nodeAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 1, preference: term("disk", "In", ["ssd"]) },
        ],
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [term(PROVIDER, "In", ["aws", "gcp"])],
        },
      },
    };
    const d = replicaDeployment(rd, euSouth!);
    const spec = d.spec!.template.spec as V1PodSpec & { futureField?: string };
    assert.equal(spec.futureField, "kept");
    assert.deepEqual(spec.affinity!.podAntiAffinity, podSpec.affinity.podAntiAffinity);
    assert.deepEqual(
      spec.affinity!.nodeAffinity!.preferredDuringSchedulingIgnoredDuringExecution,
      podSpec.affinity.nodeAffinity!.preferredDuringSchedulingIgnoredDuringExecution,
    );
    assert.deepEqual(spec.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: PROVIDER, operator: "In", values: ["aws", "gcp"] },
            VIRTUAL,
            { key: REGION, operator: "In", values: ["eu-south"] },
          ],
        },
      ],
    });
  });

  test("a combination the template's own affinity excludes cannot get a Deployment", () => {
    const rd = replicatedDeployment();
    (rd.spec.template.spec.template.spec as V1PodSpec).affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [term(REGION, "In", ["us-east"])],
        },
      },
    };
    assert.throws(
      () => replicaDeployment(rd, euSouth!),
      (err) => err instanceof ReplicaError && /exclude every node/.test(err.message),
    );
  });

  test("node granularity records the node on the Deployment", () => {
    const [byNode] = groupNodes([EDGE_2], []).combinations;
    const d = replicaDeployment(replicatedDeployment({ generationLabels: [] }), byNode!);
    assert.equal(d.metadata!.annotations![COMBINATION_ANNOTATION], '{"node":"tenantry-edge-2"}');
    assert.deepEqual(recordedCombination(d), { values: {}, node: "tenantry-edge-2" });
    assert.equal(
      recordedCombination({ metadata: { annotations: { [COMBINATION_ANNOTATION]: "{garbled" } } }),
      undefined,
    );
  });

  test("bad specs are refused with the field named", () => {
    const fields = (
      spec: Parameters<typeof replicatedDeployment>[0],
      edit?: (rd: ReturnType<typeof replicatedDeployment>) => void,
    ) => {
      const rd = replicatedDeployment(spec);
      edit?.(rd);
      return checkSpec(rd).map((p) => `${p.field}: ${p.message}`);
    };
    assert.deepEqual(fields({}), []);
    assert.deepEqual(
      fields({}, (rd) => {
        rd.spec.template.spec.selector = {
          matchExpressions: [{ key: "app", operator: "In", values: ["db"] }],
        };
      }),
      ["spec.template.spec.template.metadata.labels: must match spec.template.spec.selector"],
    );
    assert.deepEqual(
      fields({}, (rd) => {
        rd.spec.template.spec.selector = {};
      }),
      ["spec.template.spec.selector: must not be empty: give matchLabels or matchExpressions"],
    );
    assert.deepEqual(
      fields({}, (rd) => {
        rd.spec.template.spec.selector = { matchLabels: { [REPLICA_LABEL]: "x" } };
        rd.spec.template.spec.template.metadata!.labels![REPLICA_LABEL] = "x";
      }),
      [`spec.template.spec.selector: must not use ${REPLICA_LABEL}: tenantry sets it on each replica`],
    );
    assert.deepEqual(
      fields({}, (rd) => {
        delete (rd.spec.template.spec as { selector?: unknown }).selector;
        delete (rd.spec.template.spec as { template?: unknown }).template;
      }),
      ["spec.template.spec.selector: Required value", "spec.template.spec.template: Required value"],
    );
  });
});
