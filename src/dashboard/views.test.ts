import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Namespace } from "@kubernetes/client-node";
import type { Tenant } from "../tenants/index.js";
import { ActionError, actionErrorOf } from "./actions.js";
import { alertsOf, ownerCreatedNamespaces, quotaRows, tenantPage, tenantSummary } from "./views.js";

function tenant(name: string, extra: Partial<Tenant> = {}): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name },
    spec: { owners: [{ kind: "User", name: "alice" }] },
    ...extra,
  } as Tenant;
}

test("quota rows: the namespace count against namespaceQuota, then status.usage by resource", () => {
  const t = tenant("demo", {
    spec: { owners: [{ kind: "User", name: "alice" }], namespaceQuota: 2 },
    status: {
      namespaceCount: 1,
      usage: { hard: { pods: "20", "requests.memory": "1Gi" }, used: { "requests.memory": "512Mi" } },
    },
  } as Partial<Tenant>);
  assert.deepEqual(quotaRows(t, 1), [
    { resource: "namespaces", used: "1", hard: "2", usedValue: 1, hardValue: 2 },
    { resource: "pods", used: "0", hard: "20", usedValue: 0, hardValue: 20 },
    {
      resource: "requests.memory",
      used: "512Mi",
      hard: "1Gi",
      usedValue: 512 * 1024 * 1024,
      hardValue: 1024 * 1024 * 1024,
    },
  ]);
  assert.deepEqual(quotaRows(tenant("bare"), 0), [], "no quota, no rows (nothing made up)");
  const namespace = (name: string, origin?: string, deleting = false): V1Namespace => ({
    metadata: {
      name,
      labels: origin ? { "tenantry.dev/namespace-origin": origin } : ({} as Record<string, string>),
      ...(deleting ? { deletionTimestamp: new Date() } : {}),
    },
  });
  assert.equal(
    ownerCreatedNamespaces([
      namespace("demo-dev", "declared"),
      namespace("demo-team", "owner"),
      namespace("demo-old", "owner", true),
      namespace("demo-other"),
    ]),
    1,
    "only namespaces owners created and are not deleting count against namespaceQuota",
  );
});

test("a tenant page: sorted by name, filtered by part of it, sliced", () => {
  const tenants = ["c", "a", "b", "ab"].map((n) => tenant(n));
  const page = tenantPage(tenants, { offset: 1, limit: 2 }, () => 0);
  assert.equal(page.total, 4);
  assert.deepEqual(
    page.items.map((t) => t.name),
    ["ab", "b"],
  );
  assert.deepEqual(
    tenantPage(tenants, { filter: "A", offset: 0, limit: 50 }, () => 0).items.map((t) => t.name),
    ["a", "ab"],
  );
});

test("summary and alerts say what the Ready condition says", () => {
  const failing = tenant("broken", {
    status: {
      conditions: [
        { type: "Ready", status: "False", reason: "Failed", message: "quota: bad", lastTransitionTime: "" },
      ],
    },
  } as Partial<Tenant>);
  assert.equal(tenantSummary(failing, 0).ready, false);
  assert.equal(tenantSummary(failing, 0).readyMessage, "quota: bad");
  assert.deepEqual(alertsOf({ tenants: [failing, tenant("fine")], clusters: [], nodes: [] }), [
    { kind: "Tenant", name: "broken", message: "quota: bad" },
  ]);
});

test("an API refusal keeps its message and status, and names its field", () => {
  const admission = Object.assign(new Error("HTTP-Code: 403"), {
    code: 403,
    body: JSON.stringify({
      kind: "Status",
      code: 403,
      message:
        'admission webhook "namespaces.tenantry.dev" denied the request: metadata.labels["tenantry.dev/tenant"]: only owners of tenant "demo" may put a namespace into it',
    }),
  });
  const error = actionErrorOf(admission);
  assert.equal(error.status, 403);
  assert.match(error.message, /only owners of tenant "demo"/);
  assert.equal(error.field, 'metadata.labels["tenantry.dev/tenant"]');
  const invalid = Object.assign(new Error("HTTP-Code: 422"), {
    code: 422,
    body: JSON.stringify({
      kind: "Status",
      code: 422,
      message: 'Namespace "X" is invalid',
      details: { causes: [{ field: "metadata.name", message: "a lowercase RFC 1123 label" }] },
    }),
  });
  assert.equal(actionErrorOf(invalid).field, "metadata.name");
  const own = new ActionError(400, "metadata.name: required", "metadata.name");
  assert.equal(actionErrorOf(own), own);
});
