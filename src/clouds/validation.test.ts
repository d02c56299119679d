import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createCertificateRequest } from "../pki/index.js";
import {
  checkPermission,
  checkQuota,
  checkSelector,
  checkUser,
  FieldError,
  quotaKeyAllowed,
} from "./validation.js";

function refusal(fn: () => unknown, field: string, message: RegExp) {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof FieldError, String(err));
    assert.equal(err.field, field);
    assert.match(err.message, message);
    return true;
  });
}

describe("checkQuota", () => {
  it("accepts DCM's keys and ResourceQuota's patterns with quantities", () => {
    assert.deepEqual(checkQuota({ "limits.cpu": "8", pods: 50, "count/deployments.apps": "3" }, "spec"), {
      "limits.cpu": "8",
      pods: "50",
      "count/deployments.apps": "3",
    });
    for (const key of [
      "requests.example.com/gpu",
      "hugepages-2Mi",
      "gold.storageclass.storage.k8s.io/requests.storage",
    ])
      assert.ok(quotaKeyAllowed(key), key);
  });

  it("names the key that is not a resource and the value that is not a quantity", () => {
    refusal(() => checkQuota({ cpus: "4" }, "spec"), "spec.cpus", /"cpus" is not a ResourceQuota resource/);
    refusal(
      () => checkQuota({ "limits.memory": "lots" }, "spec"),
      "spec.limits.memory",
      /"lots" is not a quantity/,
    );
    refusal(() => checkQuota({ pods: "-1" }, "spec"), "spec.pods", /negative/);
    refusal(() => checkQuota({}, "spec"), "spec", /names no resource/);
  });
});

describe("checkPermission", () => {
  it("names the verb RBAC does not know", () => {
    checkPermission({ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "*"] }, "spec");
    refusal(
      () => checkPermission({ apiGroups: [""], resources: ["pods"], verbs: ["get", "destroy"] }, "spec"),
      "spec.verbs[1]",
      /"destroy" is not a verb/,
    );
    refusal(
      () => checkPermission({ apiGroups: [""], resources: [], verbs: ["get"] }, "spec"),
      "spec.resources",
      /at least one resource/,
    );
  });
});

describe("checkSelector", () => {
  it("refuses a selector that selects everything and names bad requirements", () => {
    refusal(() => checkSelector({}, "spec.clusterSelector"), "spec.clusterSelector", /selects every cluster/);
    refusal(
      () => checkSelector({ matchExpressions: [{ key: "a", operator: "In", values: [] }] }, "s"),
      "s.matchExpressions[0].values",
      /must not be empty for In/,
    );
    refusal(
      () => checkSelector({ matchLabels: { "bad key": "x" } }, "s"),
      "s.matchLabels.bad key",
      /not a label key/,
    );
    checkSelector(
      { matchExpressions: [{ key: "tenantry.dev/provider", operator: "In", values: ["aws", "gcp"] }] },
      "s",
    );
  });
});

describe("checkUser", () => {
  it("accepts a request whose subject is the user, with the cloud as its only group", async () => {
    const { csrPem } = await createCertificateRequest("user-1", ["lc-1"]);
    await checkUser(
      { userName: "user-1", type: "certificate", certificateRequest: csrPem },
      "spec.user",
      "lc-1",
    );
  });

  it("refuses a request whose subject is not the user, or that asks for another group", async () => {
    const other = await createCertificateRequest("mallory", []);
    await assert.rejects(
      checkUser({ userName: "user-1", certificateRequest: other.csrPem }, "spec.user", "lc-1"),
      (err: unknown) =>
        err instanceof FieldError &&
        err.field === "spec.user.certificateRequest" &&
        /CN: "mallory" must be the username "user-1"/.test(err.message),
    );
    const masters = await createCertificateRequest("user-1", ["system:masters"]);
    await assert.rejects(
      checkUser({ userName: "user-1", certificateRequest: masters.csrPem }, "spec.user", "lc-1"),
      /system: group/,
    );
    await assert.rejects(checkUser({ userName: "bad name" }, "spec.user", "lc-1"), /spec.user.userName/);
    await assert.rejects(
      checkUser({ userName: "u", type: "APIKey" }, "spec.user", "lc-1"),
      /only "certificate"/,
    );
  });
});
