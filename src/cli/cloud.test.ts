import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parsePermission, parseSelector } from "./cloud.js";

describe("parseSelector", () => {
  it("reads kubectl's selector syntax into a label selector", () => {
    assert.deepEqual(parseSelector("team=finance,tenantry.dev/provider in (aws, gcp),!legacy,gpu,zone!=a"), {
      matchLabels: { team: "finance" },
      matchExpressions: [
        { key: "tenantry.dev/provider", operator: "In", values: ["aws", "gcp"] },
        { key: "legacy", operator: "DoesNotExist" },
        { key: "gpu", operator: "Exists" },
        { key: "zone", operator: "NotIn", values: ["a"] },
      ],
    });
  });

  it("refuses what is not a requirement", () => {
    assert.throws(() => parseSelector("a in b"), /"a in b" is not a requirement/);
    assert.throws(() => parseSelector(","), /names no requirement/);
  });
});

describe("parsePermission", () => {
  it("reads name:verbs:resources[:groups][@namespace], in the cloud's namespace by default", () => {
    assert.deepEqual(parsePermission("dev:get,list:pods,deployments:,apps", "ns1"), {
      metadata: { name: "dev" },
      spec: {
        namespace: "ns1",
        verbs: ["get", "list"],
        resources: ["pods", "deployments"],
        apiGroups: ["", "apps"],
      },
    });
    assert.equal(parsePermission("nodes:list:nodes@*", "ns1").spec.namespace, "");
    assert.throws(() => parsePermission("dev:get", "ns1"), /must be name:verbs:resources/);
  });
});
