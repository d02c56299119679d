import assert from "node:assert/strict";
import { test } from "node:test";
import { admissionWebhookCalls, webhookEvaluations } from "./doctor.js";

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

test("kube-apiserver's calls of tenantry's admission webhooks are summed per HTTP code, others' left out", () => {
  const metrics = [
    "# TYPE apiserver_admission_webhook_request_total counter",
    'apiserver_admission_webhook_request_total{code="200",name="namespaces.tenants.tenantry.dev",operation="CREATE",rejected="false",type="validating"} 5',
    'apiserver_admission_webhook_request_total{code="200",name="namespace-owners.tenants.tenantry.dev",operation="CREATE",rejected="false",type="admit"} 4',
    'apiserver_admission_webhook_request_total{code="401",name="namespaces.tenants.tenantry.dev",operation="CREATE",rejected="true",type="validating"} 2',
    'apiserver_admission_webhook_request_total{code="200",name="someone-elses.example.com",operation="CREATE",rejected="false",type="validating"} 9',
  ].join("\n");
  const names = new Set(["namespaces.tenants.tenantry.dev", "namespace-owners.tenants.tenantry.dev"]);
  assert.deepEqual(
    [...admissionWebhookCalls(metrics, names)],
    [
      ["200", 9],
      ["401", 2],
    ],
  );
});
