import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AdmissionRequest } from "../../webhooks/index.js";
import { tenantryIdentity } from "./identity.js";
import { checkReservedTolerations, RUNTIMES_NODE_TAINT_KEY } from "./reserved-nodes.js";

const identity = tenantryIdentity("tenantry-admin", "tenantry-system");
const reserved = { key: RUNTIMES_NODE_TAINT_KEY, operator: "Equal", value: "true", effect: "NoSchedule" };
const podSpec = (tolerations: object[]) => ({ containers: [{ name: "c", image: "x" }], tolerations });

function request(kind: string, object: Record<string, unknown>, username: string, groups: string[] = []) {
  return {
    uid: "1",
    kind: { group: "", version: "v1", kind },
    resource: { group: "", version: "v1", resource: `${kind.toLowerCase()}s` },
    namespace: "acme-dev",
    operation: "CREATE",
    userInfo: { username, groups },
    object: { metadata: { name: "x", namespace: "acme-dev" }, ...object },
  } satisfies AdmissionRequest;
}

describe("nodes reserved for runtimes", () => {
  test("a tenant's pod tolerating the reserved taint is refused, naming the field", () => {
    const decision = checkReservedTolerations(
      request("Pod", { spec: podSpec([{ key: "other" }, reserved]) }, "alice"),
      identity,
    );
    assert.equal(decision.allowed, false);
    assert.match(
      (decision as { message: string }).message,
      /^spec\.tolerations\[1\]: only workloads tenantry applies for a RuntimeService may tolerate the taint runtimes\.tenantry\.dev\/reserved/,
    );
  });

  test("a toleration of every taint tolerates the reserved one too", () => {
    const decision = checkReservedTolerations(
      request("Pod", { spec: podSpec([{ operator: "Exists" }]) }, "alice"),
      identity,
    );
    assert.equal(decision.allowed, false);
  });

  test("every pod template is looked at: workloads, jobs, cron jobs, pod templates", () => {
    const cases: [string, Record<string, unknown>, string][] = [
      [
        "Deployment",
        { spec: { template: { spec: podSpec([reserved]) } } },
        "spec.template.spec.tolerations[0]",
      ],
      ["Job", { spec: { template: { spec: podSpec([reserved]) } } }, "spec.template.spec.tolerations[0]"],
      [
        "CronJob",
        { spec: { jobTemplate: { spec: { template: { spec: podSpec([reserved]) } } } } },
        "spec.jobTemplate.spec.template.spec.tolerations[0]",
      ],
      ["PodTemplate", { template: { spec: podSpec([reserved]) } }, "template.spec.tolerations[0]"],
    ];
    for (const [kind, object, field] of cases) {
      const decision = checkReservedTolerations(request(kind, object, "alice"), identity);
      assert.equal(decision.allowed, false, kind);
      assert.ok((decision as { message: string }).message.startsWith(`${field}:`), kind);
    }
  });

  test("tenantry, cluster administrators and the cluster's controllers may; other tolerations pass", () => {
    const pod = request("Pod", { spec: podSpec([reserved]) }, "tenantry-admin");
    assert.equal(checkReservedTolerations(pod, identity).allowed, true);
    const admin = request("Pod", { spec: podSpec([reserved]) }, "root", ["system:masters"]);
    assert.equal(checkReservedTolerations(admin, identity).allowed, true);
    const replicaSet = request(
      "Pod",
      { spec: podSpec([reserved]) },
      "system:serviceaccount:kube-system:replicaset-controller",
    );
    assert.equal(checkReservedTolerations(replicaSet, identity).allowed, true);
    const tenantSa = request("Pod", { spec: podSpec([reserved]) }, "system:serviceaccount:acme-dev:default");
    assert.equal(checkReservedTolerations(tenantSa, identity).allowed, false);
    const node = request("Pod", { spec: podSpec([reserved]) }, "system:node:worker-1", ["system:nodes"]);
    assert.equal(
      checkReservedTolerations(node, identity).allowed,
      false,
      "a node's mirror pod is no exception",
    );
    const plain = request(
      "Pod",
      { spec: podSpec([{ key: "tenantry.dev/pool", operator: "Exists" }]) },
      "alice",
    );
    assert.equal(checkReservedTolerations(plain, identity).allowed, true);
  });
});
