import assert from "node:assert/strict";
import { test } from "node:test";
import { webhookEvaluations } from "./doctor.js";

test("kube-apiserver's authorization webhook evaluations are read per authorizer and result", () => {
  const metrics = [
    "# HELP apiserver_authorization_webhook_evaluations_total [ALPHA] Round-trips to authorization webhooks.",
    "# TYPE apiserver_authorization_webhook_evaluations_total counter",
    'apiserver_authorization_webhook_evaluations_total{name="tenantry",result="success"} 41',
    'apiserver_authorization_webhook_evaluations_total{name="tenantry",result="error"} 2',
    'apiserver_authorization_decisions_total{decision="allowed",name="rbac",type="RBAC"} 7',
  ].join("\n");
  assert.deepEqual(
    [...webhookEvaluations(metrics)],
    [
      ["name=tenantry result=success", 41],
      ["name=tenantry result=error", 2],
    ],
  );
  assert.equal(webhookEvaluations("apiserver_request_total 3\n").size, 0);
});
