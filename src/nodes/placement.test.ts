import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { NODE_OWNER_LABEL, NODE_OWNER_TAINT, NODE_POLICY_LABEL, WORKER_NODE_LABEL } from "./labels.js";
import {
  excludesOthersPrivateNodes,
  othersPrivateNodesTolerated,
  placementViolation,
  placePod,
  withOwnerExclusion,
} from "./placement.js";

const own = { key: NODE_OWNER_TAINT, operator: "Equal", value: "alice", effect: "NoSchedule" };

describe("pod placement around private nodes", () => {
  it("gives an owner of private nodes their toleration and a preference, once", () => {
    const placed = placePod({}, "alice", true);
    assert.deepEqual(placed?.tolerations, [own]);
    assert.deepEqual(placed?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution, [
      {
        weight: 100,
        preference: { matchExpressions: [{ key: NODE_OWNER_LABEL, operator: "In", values: ["alice"] }] },
      },
    ]);
    assert.equal(placed?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution, undefined);
    assert.equal(placePod(placed!, "alice", true), undefined, "placing again changes nothing");
  });

  it("leaves a pod without broad tolerations alone when its user owns no private node", () => {
    assert.equal(placePod({ tolerations: [{ key: "gpu", operator: "Exists" }] }, "bob", false), undefined);
    assert.equal(placePod({}, undefined, false), undefined);
  });

  it("keeps a pod tolerating every taint off other users' private nodes, within its own terms", () => {
    const pod = {
      tolerations: [{ operator: "Exists" }],
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] },
              { matchFields: [{ key: "metadata.name", operator: "In", values: ["n1"] }] },
            ],
          },
        },
      },
    };
    const placed = placePod(pod, "bob", false)!;
    const terms =
      placed.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms;
    assert.equal(terms.length, 6, "each own term with each allowed kind of node");
    assert.deepEqual(terms[2], {
      matchExpressions: [
        { key: "zone", operator: "In", values: ["a"] },
        { key: NODE_OWNER_LABEL, operator: "In", values: ["bob"] },
      ],
    });
    assert.deepEqual(terms[3]?.matchFields, [{ key: "metadata.name", operator: "In", values: ["n1"] }]);
    assert.ok(excludesOthersPrivateNodes(placed.affinity, "bob"));
    assert.equal(
      placementViolation(placed, "bob", () => undefined),
      undefined,
    );
  });

  it("a pod of nobody in particular may only use nodes that are no worker node, or shared ones", () => {
    const affinity = withOwnerExclusion(undefined, undefined);
    const unowned = { key: NODE_OWNER_LABEL, operator: "DoesNotExist" };
    assert.deepEqual(
      affinity.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms,
      [
        { matchExpressions: [unowned, { key: WORKER_NODE_LABEL, operator: "DoesNotExist" }] },
        { matchExpressions: [unowned, { key: NODE_POLICY_LABEL, operator: "In", values: ["shared"] }] },
      ],
    );
    assert.ok(excludesOthersPrivateNodes(affinity, undefined));
  });

  it('"no owner label" alone does not keep a pod off: a private node registers before tenantry labels its owner', () => {
    const ownerless = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: NODE_OWNER_LABEL, operator: "DoesNotExist" }] }],
        },
      },
    };
    assert.equal(excludesOthersPrivateNodes(ownerless, "bob"), false);
    assert.match(
      placementViolation(
        { tolerations: [{ operator: "Exists" }], affinity: ownerless },
        "bob",
        () => undefined,
      ) ?? "",
      /^spec\.tolerations\[0\]/,
    );
  });

  it("tells which tolerations reach other users' private nodes", () => {
    assert.equal(othersPrivateNodesTolerated([own], "alice"), -1);
    assert.equal(othersPrivateNodesTolerated([own], "bob"), 0);
    assert.equal(
      othersPrivateNodesTolerated([{ key: "x", operator: "Exists" }, { operator: "Exists" }], "bob"),
      1,
    );
    assert.equal(othersPrivateNodesTolerated([{ key: NODE_OWNER_TAINT, operator: "Exists" }], "bob"), 0);
    assert.equal(othersPrivateNodesTolerated([{ operator: "Exists", effect: "NoExecute" }], "bob"), -1);
  });

  it("refuses a toleration without the exclusion, and another user's private node by name", () => {
    const message = placementViolation({ tolerations: [{ operator: "Exists" }] }, "bob", () => undefined);
    assert.match(message ?? "", /^spec\.tolerations\[0\]: /);
    assert.match(placementViolation({ nodeName: "n" }, "bob", () => "alice") ?? "", /^spec\.nodeName: /);
    assert.equal(
      placementViolation({ nodeName: "n" }, "alice", () => "alice"),
      undefined,
    );
    assert.equal(
      placementViolation({ nodeName: "n" }, "bob", () => undefined),
      undefined,
    );
  });
});
