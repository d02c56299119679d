import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiException } from "@kubernetes/client-node";
import { UserError } from "../common/index.js";
import { errorReport } from "./error-report.js";

function refusal(code: number, reason: string, message: string): ApiException<string> {
  const body = JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code, reason, message });
  return new ApiException(code, "Unsuccessful HTTP Request", body, {
    "content-type": "application/json",
    "audit-id": "0c4e0f0e-9d1f-4a5c-8f8e-7d3a2b1c0d9e",
  });
}

describe("CLI error report", () => {
  test("an API refusal prints the server's message with the field, not the HTTP body or headers", () => {
    const message =
      'User.tenantry.dev "eve" is invalid: spec.groups[0]: Invalid value: "system:masters": groups starting with system: are reserved';
    const report = errorReport(refusal(422, "Invalid", message));
    assert.deepEqual(report, { exitCode: 2, message });
    assert.doesNotMatch(report.message, /audit-id|Unsuccessful HTTP Request|"kind"/);
  });

  test("exit codes follow the CLI's convention", () => {
    assert.equal(errorReport(refusal(404, "NotFound", 'tenants "x" not found')).exitCode, 3);
    assert.equal(errorReport(refusal(409, "AlreadyExists", 'tenants "x" already exists')).exitCode, 4);
    assert.equal(errorReport(refusal(409, "Conflict", "the object has been modified")).exitCode, 1);
    assert.equal(errorReport(refusal(403, "Forbidden", "forbidden")).exitCode, 2);
    assert.deepEqual(errorReport(refusal(500, "InternalError", "etcd is down")), {
      exitCode: 1,
      message: "etcd is down (HTTP 500)",
    });
    assert.deepEqual(errorReport(new UserError("bad flag", 2)), { exitCode: 2, message: "bad flag" });
    assert.deepEqual(errorReport(new Error("connect ECONNREFUSED 127.0.0.1:6443")), {
      exitCode: 1,
      message: "connect ECONNREFUSED 127.0.0.1:6443",
    });
  });
});
