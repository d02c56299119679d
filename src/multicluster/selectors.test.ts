import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Node, V1NodeSelectorRequirement } from "@kubernetes/client-node";
import {
  intersectSelectors,
  labelSelectorMatches,
  requirementMatches,
  selectorMatches,
  termMatches,
} from "./selectors.js";

const node = (name: string, labels: Record<string, string>): V1Node => ({ metadata: { name, labels } });
const req = (key: string, operator: string, values?: string[]): V1NodeSelectorRequirement => ({
  key,
  operator,
  ...(values ? { values } : {}),
});

describe("node selectors", () => {
  test("each operator, with the label present and absent", () => {
    assert.equal(requirementMatches(req("a", "In", ["x", "y"]), "y"), true);
    assert.equal(requirementMatches(req("a", "In", ["x"]), undefined), false);
    assert.equal(requirementMatches(req("a", "NotIn", ["x"]), "y"), true);
    assert.equal(requirementMatches(req("a", "NotIn", ["x"]), "x"), false);
    assert.equal(requirementMatches(req("a", "NotIn", ["x"]), undefined), true);
    assert.equal(requirementMatches(req("a", "Exists"), ""), true);
    assert.equal(requirementMatches(req("a", "Exists"), undefined), false);
    assert.equal(requirementMatches(req("a", "DoesNotExist"), undefined), true);
    assert.equal(requirementMatches(req("a", "DoesNotExist"), "x"), false);
    assert.equal(requirementMatches(req("a", "Gt", ["3"]), "4"), true);
    assert.equal(requirementMatches(req("a", "Gt", ["3"]), "3"), false);
    assert.equal(requirementMatches(req("a", "Lt", ["3"]), "-1"), true);
    assert.equal(requirementMatches(req("a", "Gt", ["3"]), "four"), false);
    assert.equal(requirementMatches(req("a", "Gt", ["3", "4"]), "5"), false);
    assert.equal(requirementMatches(req("a", "Sometimes", ["x"]), "x"), false);
  });

  test("terms AND their requirements, selectors OR their terms, an empty term matches nothing", () => {
    const strict = node("tenantry-edge-1", { region: "eu", policy: "strict" });
    const standard = node("tenantry-edge-2", { region: "us", policy: "standard" });
    const term = { matchExpressions: [req("region", "In", ["eu", "us"]), req("policy", "In", ["strict"])] };
    assert.equal(termMatches(term, strict), true);
    assert.equal(termMatches(term, standard), false);
    assert.equal(termMatches({}, strict), false);
    assert.equal(
      termMatches({ matchFields: [req("metadata.name", "In", ["tenantry-edge-2"])] }, standard),
      true,
    );
    assert.equal(termMatches({ matchFields: [req("spec.unschedulable", "In", ["true"])] }, standard), false);
    const either = { nodeSelectorTerms: [term, { matchExpressions: [req("region", "In", ["us"])] }] };
    assert.equal(selectorMatches(either, strict), true);
    assert.equal(selectorMatches(either, standard), true);
    assert.equal(selectorMatches({ nodeSelectorTerms: [] }, strict), false);
  });

  test("intersection: every pair of terms ANDed, contradictions left out", () => {
    const user = {
      nodeSelectorTerms: [
        { matchExpressions: [req("region", "In", ["eu"])] },
        { matchExpressions: [req("type", "DoesNotExist")] },
      ],
    };
    const admin = {
      nodeSelectorTerms: [
        { matchExpressions: [req("region", "In", ["eu", "us"]), req("type", "In", ["virtual-node"])] },
        { matchExpressions: [req("region", "In", ["us"])] },
      ],
    };
    assert.deepEqual(intersectSelectors(user, admin), {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            req("region", "In", ["eu"]),
            req("region", "In", ["eu", "us"]),
            req("type", "In", ["virtual-node"]),
          ],
        },
        { matchExpressions: [req("type", "DoesNotExist"), req("region", "In", ["us"])] },
      ],
    });
    const notIn = intersectSelectors(
      { nodeSelectorTerms: [{ matchExpressions: [req("type", "NotIn", ["virtual-node"])] }] },
      { nodeSelectorTerms: [{ matchExpressions: [req("type", "In", ["virtual-node"])] }] },
    );
    assert.deepEqual(notIn, { nodeSelectorTerms: [] });
  });

  test("label selectors: matchLabels and every operator of matchExpressions", () => {
    const labels = { app: "web", tier: "front" };
    assert.ok(labelSelectorMatches({ matchLabels: { app: "web" } }, labels));
    assert.ok(!labelSelectorMatches({ matchLabels: { app: "db" } }, labels));
    assert.ok(
      labelSelectorMatches(
        { matchExpressions: [{ key: "tier", operator: "In", values: ["front", "back"] }] },
        labels,
      ),
    );
    assert.ok(
      !labelSelectorMatches(
        { matchExpressions: [{ key: "tier", operator: "NotIn", values: ["front"] }] },
        labels,
      ),
    );
    assert.ok(
      labelSelectorMatches({ matchExpressions: [{ key: "zone", operator: "DoesNotExist" }] }, labels),
    );
    assert.ok(!labelSelectorMatches({ matchExpressions: [{ key: "zone", operator: "Exists" }] }, labels));
  });
});
