import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Node } from "@kubernetes/client-node";
import {
  EDGE_1,
  EDGE_2,
  EDGE_3,
  PROVIDER,
  REGION,
  SECURITY,
  virtualNode,
} from "../../../testing/replication-fixtures.js";
import { MAX_REPLICATED_DEPLOYMENT_NAME, REPLICA_HASH_LENGTH } from "../api/replicated-deployment.js";
import {
  combinationHash,
  combinationIdentity,
  groupNodes,
  replicaName,
  selectNodes,
  shortHash,
} from "./combinations.js";

const NO_REGION = virtualNode("tenantry-bare", { [PROVIDER]: "aws" });

describe("combinations of generation-label values", () => {
  test("the hash is SHA-256 in 10 base-32 characters, the same on every run", () => {
    // sha256("") starts e3 b0 c4 42 98: 11100 01110 11000 01100 01000 …
    assert.equal(shortHash(""), "seoc8gkovg");
    assert.equal(shortHash("abc"), "n9s1dfsf07");
    assert.match(combinationHash({ [REGION]: "eu-south" }), new RegExp(`^[0-9a-v]{${REPLICA_HASH_LENGTH}}$`));
  });

  test("the same combination hashes alike whatever the label order; key, value and granularity all count", () => {
    const a = combinationHash({ [REGION]: "eu-south", [PROVIDER]: "aws" });
    assert.equal(a, combinationHash({ [PROVIDER]: "aws", [REGION]: "eu-south" }));
    assert.notEqual(a, combinationHash({ [REGION]: "eu-south", [PROVIDER]: "gcp" }));
    // Same value under another key (switching generation labels) is another replica.
    assert.notEqual(combinationHash({ [REGION]: "aws" }), combinationHash({ [PROVIDER]: "aws" }));
    // Separators inside values cannot make two combinations look alike.
    assert.notEqual(combinationHash({ a: "x", b: "y" }), combinationHash({ a: 'x","b', b: "y" }));
    assert.notEqual(combinationHash({}, "tenantry-edge-1"), combinationHash({ node: "tenantry-edge-1" }));
    assert.notEqual(combinationIdentity({}, "n"), combinationIdentity({ node: "n" }));
  });

  test("20,000 distinct combinations get 20,000 distinct hashes", () => {
    const hashes = new Set<string>();
    for (let i = 0; i < 10_000; i++) {
      hashes.add(combinationHash({ [REGION]: `r${i}` }));
      hashes.add(combinationHash({}, `tenantry-node-${i}`));
    }
    assert.equal(hashes.size, 20_000);
  });

  test("replica names stay 63-character DNS labels for the longest ReplicatedDeployment name", () => {
    const longest = "a".repeat(MAX_REPLICATED_DEPLOYMENT_NAME);
    const name = replicaName(longest, combinationHash({ [REGION]: "eu-south" }));
    assert.equal(name.length, 63);
    assert.match(name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  });

  test("region granularity: nodes sharing a region share a replica; nodes lacking the label are left out", () => {
    const { combinations, unlabelled } = groupNodes([EDGE_2, EDGE_1, EDGE_3, NO_REGION], [REGION]);
    assert.deepEqual(
      combinations
        .map((c) => [c.values, c.nodes])
        .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [
        [{ [REGION]: "eu-south" }, ["tenantry-edge-1", "tenantry-edge-3"]],
        [{ [REGION]: "us-east" }, ["tenantry-edge-2"]],
      ],
    );
    assert.deepEqual(unlabelled, ["tenantry-bare"]);
    assert.equal(combinations[0]!.hash < combinations[1]!.hash, true, "sorted by hash");
  });

  test("two generation labels: one replica per combination that exists", () => {
    const { combinations } = groupNodes([EDGE_1, EDGE_2, EDGE_3], [REGION, PROVIDER]);
    assert.equal(combinations.length, 3);
    assert.deepEqual(new Set(combinations.map((c) => c.nodes.length)), new Set([1]));
  });

  test("no generation label: one replica per virtual node, identified by the node", () => {
    const { combinations, unlabelled } = groupNodes([EDGE_1, EDGE_2, NO_REGION], []);
    assert.deepEqual(combinations.map((c) => c.node).sort(), [
      "tenantry-bare",
      "tenantry-edge-1",
      "tenantry-edge-2",
    ]);
    assert.deepEqual(combinations[0]!.values, {});
    assert.deepEqual(unlabelled, []);
    const edge1 = combinations.find((c) => c.node === "tenantry-edge-1")!;
    assert.equal(edge1.hash, combinationHash({}, "tenantry-edge-1"));
  });

  test("nodes must match the clusterSelector and selectedClusters; absent selectors do not filter", () => {
    const notStrict = {
      nodeSelectorTerms: [{ matchExpressions: [{ key: SECURITY, operator: "NotIn", values: ["strict"] }] }],
    };
    const europe = {
      nodeSelectorTerms: [{ matchExpressions: [{ key: REGION, operator: "In", values: ["eu-south"] }] }],
    };
    const names = (nodes: V1Node[]) => nodes.map((n) => n.metadata!.name);
    assert.deepEqual(names(selectNodes([EDGE_2, EDGE_1, EDGE_3], undefined, undefined)), [
      "tenantry-edge-1",
      "tenantry-edge-2",
      "tenantry-edge-3",
    ]);
    assert.deepEqual(names(selectNodes([EDGE_1, EDGE_2, EDGE_3], undefined, notStrict)), [
      "tenantry-edge-2",
      "tenantry-edge-3",
    ]);
    assert.deepEqual(names(selectNodes([EDGE_1, EDGE_2, EDGE_3], europe, notStrict)), ["tenantry-edge-3"]);
    const leaving = { ...EDGE_1, metadata: { ...EDGE_1.metadata, deletionTimestamp: new Date() } };
    assert.deepEqual(names(selectNodes([leaving, EDGE_2], undefined, undefined)), ["tenantry-edge-2"]);
  });
});
