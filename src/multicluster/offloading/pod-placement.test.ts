import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { NodeSelector } from "../../apis/index.js";
import { placePod, strategySelector } from "./pod-placement.js";

const region: NodeSelector = {
  nodeSelectorTerms: [{ matchExpressions: [{ key: "region", operator: "In", values: ["us-west-1"] }] }],
};
const toleration = {
  key: "virtual-node.tenantry.dev/not-allowed",
  operator: "Equal",
  value: "true",
  effect: "NoExecute",
};

describe("pod placement per offloading strategy (Liqo thesis, 6.2.1)", () => {
  test("LocalAndRemote: the selector's terms plus one selecting local nodes", () => {
    assert.deepEqual(strategySelector("LocalAndRemote", region), {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: "region", operator: "In", values: ["us-west-1"] }] },
        { matchExpressions: [{ key: "tenantry.dev/type", operator: "NotIn", values: ["virtual-node"] }] },
      ],
    });
  });

  test("Remote: every term also requires a virtual node; Local: nothing", () => {
    assert.deepEqual(strategySelector("Remote", region), {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: "region", operator: "In", values: ["us-west-1"] },
            { key: "tenantry.dev/type", operator: "In", values: ["virtual-node"] },
          ],
        },
      ],
    });
    assert.equal(strategySelector("Local", region), undefined);
    assert.deepEqual(placePod({ podOffloadingStrategy: "Local", clusterSelector: region }, {}), {
      placement: {},
    });
  });

  test("the toleration is added once, other tolerations and affinities are kept", () => {
    const other = { key: "gpu", operator: "Exists" };
    const podAffinity = { requiredDuringSchedulingIgnoredDuringExecution: [] };
    const { placement } = placePod(
      { podOffloadingStrategy: "Remote" },
      { tolerations: [other], affinity: { podAffinity } },
    );
    assert.deepEqual(placement.tolerations, [other, toleration]);
    assert.deepEqual(placement.affinity?.podAffinity, podAffinity);
    // An empty clusterSelector means every virtual node.
    assert.deepEqual(placement.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, {
      nodeSelectorTerms: [
        { matchExpressions: [{ key: "tenantry.dev/type", operator: "In", values: ["virtual-node"] }] },
      ],
    });
    const again = placePod({ podOffloadingStrategy: "Remote" }, placement);
    assert.deepEqual(again.placement.tolerations, [other, toleration]);
  });

  test("a pod's own terms are intersected; terms that leave no allowed node are a conflict", () => {
    const local = {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              {
                matchExpressions: [{ key: "tenantry.dev/type", operator: "NotIn", values: ["virtual-node"] }],
              },
            ],
          },
        },
      },
    };
    const result = placePod({ podOffloadingStrategy: "Remote", clusterSelector: region }, local);
    assert.match(
      result.conflict ?? "",
      /leaves no node that podOffloadingStrategy Remote and the namespace's clusterSelector allow/,
    );
    const fine = placePod({ podOffloadingStrategy: "LocalAndRemote", clusterSelector: region }, local);
    assert.equal(fine.conflict, undefined);
    assert.equal(
      fine.placement.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms
        .length,
      2,
    );
  });
});
