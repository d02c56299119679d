import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1PodSpec } from "@kubernetes/client-node";
import {
  EDGE_1,
  EDGE_2,
  offloading,
  PROVIDER,
  REGION,
  replicatedDeployment,
  SECURITY,
} from "../../../testing/replication-fixtures.js";
import type { NodeSelector } from "../../apis/index.js";
import { combinationHash } from "./combinations.js";
import { deletableObsolete, offloadingBlock, planReplication } from "./plan.js";

const notStrict: NodeSelector = {
  nodeSelectorTerms: [{ matchExpressions: [{ key: SECURITY, operator: "NotIn", values: ["strict"] }] }],
};

describe("replication plan", () => {
  test("no NamespaceOffloading, one being deleted, or pods kept local: no replica at all", () => {
    assert.equal(offloadingBlock("shop", undefined)?.reason, "NamespaceNotOffloaded");
    assert.match(
      offloadingBlock("shop", undefined)!.message,
      /namespace shop has no NamespaceOffloading "offloading"/,
    );
    const leaving = {
      ...offloading(),
      metadata: { ...offloading().metadata, deletionTimestamp: new Date() },
    };
    assert.equal(offloadingBlock("shop", leaving)?.reason, "NamespaceNotOffloaded");
    assert.equal(
      offloadingBlock("shop", offloading({ podOffloadingStrategy: "Local" }))?.reason,
      "LocalOnlyOffloading",
    );
    assert.equal(offloadingBlock("shop", offloading({ podOffloadingStrategy: "Remote" })), undefined);
    assert.equal(offloadingBlock("shop", offloading()), undefined);
  });

  test("region granularity over the shared topology: two replicas, one per region", () => {
    const plan = planReplication(replicatedDeployment(), offloading(), [EDGE_1, EDGE_2]);
    assert.equal(plan.blocked, undefined);
    assert.equal(plan.selectedNodes, 2);
    assert.deepEqual(
      plan.wanted.map((w) => w.name).sort(),
      [
        `web-${combinationHash({ [REGION]: "eu-south" })}`,
        `web-${combinationHash({ [REGION]: "us-east" })}`,
      ].sort(),
    );
    assert.ok(plan.wanted.every((w) => w.deployment && !w.error));
  });

  test("selectedClusters excluding strict keeps the us-east replica, under the same name", () => {
    const all = planReplication(replicatedDeployment(), offloading(), [EDGE_1, EDGE_2]);
    const some = planReplication(replicatedDeployment({ selectedClusters: notStrict }), offloading(), [
      EDGE_1,
      EDGE_2,
    ]);
    assert.deepEqual(
      some.wanted.map((w) => w.combination.values),
      [{ [REGION]: "us-east" }],
    );
    assert.ok(all.wanted.some((w) => w.name === some.wanted[0]!.name));
    // selectedClusters also goes into the pods' affinity.
    const terms =
      some.wanted[0]!.deployment!.spec!.template.spec!.affinity!.nodeAffinity!
        .requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms;
    assert.ok(
      terms.every((t) => t.matchExpressions!.some((r) => r.key === SECURITY && r.operator === "NotIn")),
    );
  });

  test("the namespace's clusterSelector filters too", () => {
    const plan = planReplication(replicatedDeployment(), offloading({ clusterSelector: notStrict }), [
      EDGE_1,
      EDGE_2,
    ]);
    assert.equal(plan.selectedNodes, 1);
    assert.deepEqual(
      plan.wanted.map((w) => w.combination.nodes),
      [["tenantry-edge-2"]],
    );
  });

  test("switching generation labels gives other names: the old replicas become obsolete", () => {
    const byRegion = planReplication(replicatedDeployment(), offloading(), [EDGE_1, EDGE_2]);
    const byProvider = planReplication(replicatedDeployment({ generationLabels: [PROVIDER] }), offloading(), [
      EDGE_1,
      EDGE_2,
    ]);
    const before = new Set(byRegion.wanted.map((w) => w.name));
    assert.equal(byProvider.wanted.length, 2);
    assert.ok(byProvider.wanted.every((w) => !before.has(w.name)));
  });

  test("an invalid spec blocks everything, before looking at the offloading", () => {
    const rd = replicatedDeployment();
    rd.spec.template.spec.selector = { matchLabels: { app: "other" } };
    const plan = planReplication(rd, undefined, [EDGE_1]);
    assert.deepEqual(plan.blocked, {
      reason: "InvalidSpec",
      message: "spec.template.spec.template.metadata.labels: must match spec.template.spec.selector",
    });
    assert.deepEqual(plan.wanted, []);
  });

  test("a combination the template's affinity excludes is a replica with an error, the others go on", () => {
    const rd = replicatedDeployment();
    (rd.spec.template.spec.template.spec as V1PodSpec).affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: REGION, operator: "In", values: ["us-east"] }] }],
        },
      },
    };
    const plan = planReplication(rd, offloading(), [EDGE_1, EDGE_2]);
    const failed = plan.wanted.filter((w) => w.error);
    assert.deepEqual(
      failed.map((w) => w.combination.values),
      [{ [REGION]: "eu-south" }],
    );
    assert.equal(plan.wanted.filter((w) => w.deployment).length, 1);
  });

  test("obsolete replicas go once every wanted replica is Available (or none is wanted); unavailable ones at once", () => {
    const available = {
      metadata: { name: "available", generation: 1 },
      status: { observedGeneration: 1, conditions: [{ type: "Available", status: "True" }] },
    };
    const starting = {
      metadata: { name: "starting", generation: 1 },
      status: { observedGeneration: 1, conditions: [{ type: "Available", status: "False" }] },
    };
    const combination = { hash: "x", values: {}, nodes: [] };
    const names = (list: { metadata?: { name?: string } }[]) => list.map((d) => d.metadata!.name);
    const obsolete = [available, starting];
    assert.deepEqual(names(deletableObsolete([], obsolete)), ["available", "starting"]);
    assert.deepEqual(
      names(deletableObsolete([{ combination, name: "a", deployment: available }], obsolete)),
      ["available", "starting"],
    );
    const notYet = [
      [
        { combination, name: "a", deployment: available },
        { combination, name: "b", deployment: starting },
      ],
      [{ combination, name: "a", deployment: available, error: "quota exceeded" }],
      [{ combination, name: "a" }],
    ];
    for (const wanted of notYet) assert.deepEqual(names(deletableObsolete(wanted, obsolete)), ["starting"]);
  });
});
