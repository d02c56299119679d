import assert from "node:assert/strict";
import { test } from "node:test";
import { parseClusterSelector } from "./cluster-selector.js";

test("--selector values become ORed node selector terms", () => {
  assert.equal(parseClusterSelector([]), undefined);
  assert.deepEqual(
    parseClusterSelector([
      "tenantry.dev/security-policy=strict,topology.kubernetes.io/region in (eu-south, us-east)",
      "!gpu,tier!=gold,cores>4",
    ]),
    {
      nodeSelectorTerms: [
        {
          matchExpressions: [
            { key: "tenantry.dev/security-policy", operator: "In", values: ["strict"] },
            { key: "topology.kubernetes.io/region", operator: "In", values: ["eu-south", "us-east"] },
          ],
        },
        {
          matchExpressions: [
            { key: "gpu", operator: "DoesNotExist" },
            { key: "tier", operator: "NotIn", values: ["gold"] },
            { key: "cores", operator: "Gt", values: ["4"] },
          ],
        },
      ],
    },
  );
  assert.deepEqual(parseClusterSelector(["ssd, zone notin (a)"])?.nodeSelectorTerms[0]?.matchExpressions, [
    { key: "ssd", operator: "Exists" },
    { key: "zone", operator: "NotIn", values: ["a"] },
  ]);
});

test("bad --selector values name the term and what is wrong", () => {
  assert.throws(
    () => parseClusterSelector(["region=eu,"]),
    /--selector "region=eu," has an empty requirement/,
  );
  assert.throws(
    () => parseClusterSelector(["-bad=x"]),
    /--selector "-bad=x": "-bad" is not a valid label key/,
  );
  assert.throws(
    () => parseClusterSelector([`a=${"v".repeat(64)}`]),
    /is not a valid label value \(at most 63 characters\)/,
  );
  assert.throws(() => parseClusterSelector(["a in ()"]), /"a in \(\)" lists no values/);
  assert.throws(() => parseClusterSelector(["a ~ b"]), /cannot read "a ~ b"; use key=value/);
});
