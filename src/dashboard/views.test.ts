import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Namespace, V1Pod } from "@kubernetes/client-node";
import type { AccessGrant } from "../access/index.js";
import type { MonitorRule } from "../monitor/index.js";
import type { NamespaceOffloading } from "../multicluster/index.js";
import { type Tenant, USER_LABEL } from "../tenants/index.js";
import { ActionError, actionErrorOf } from "./actions.js";
import {
  accessGrantView,
  alertsOf,
  monitorAlerts,
  offloadingView,
  ownerCreatedNamespaces,
  quotaRows,
  selectorText,
  tenantDetail,
  tenantPage,
  tenantSummary,
  userUsage,
} from "./views.js";

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

test("per-user usage sums each user's running and pending pods' requests; unlabelled and finished pods do not count", () => {
  const pod = (user: string | undefined, cpu: string, memory: string, phase = "Running"): V1Pod => ({
    metadata: { name: `p-${Math.random()}`, labels: user ? { [USER_LABEL]: user } : {} },
    spec: { containers: [{ name: "c", resources: { requests: { cpu, memory } } }] },
    status: { phase },
  });
  assert.deepEqual(
    userUsage([
      pod("bob", "100m", "64Mi"),
      pod("alice", "250m", "128Mi", "Pending"),
      pod("bob", "150m", "64Mi"),
      pod("bob", "4", "1Gi", "Succeeded"),
      pod(undefined, "1", "1Gi"),
    ]),
    [
      { user: "alice", pods: 1, cpu: "250m", memory: "128Mi" },
      { user: "bob", pods: 2, cpu: "250m", memory: "128Mi" },
    ],
  );
  assert.deepEqual(userUsage([]), [], "no pods, no rows (nothing made up)");
});

test("an offloading: strategies, selector and each cluster's replica as its status says", () => {
  const offloading = {
    metadata: { name: "offloading", namespace: "demo-dev" },
    spec: {
      podOffloadingStrategy: "Remote",
      clusterSelector: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: "region", operator: "In", values: ["eu", "us"] }] }],
      },
    },
    status: {
      offloadingPhase: "SomeFailed",
      remoteNamespaceName: "demo-dev-abc",
      conditions: [
        { type: "Ready", status: "False", reason: "SomeReplicasFailed", message: "edge-2: quota" },
      ],
      remoteNamespacesConditions: {
        "edge-2": [
          { type: "Ready", status: "False", reason: "CreationLoopBackOff", message: "quota" },
          { type: "OffloadingRequired", status: "True" },
        ],
        "edge-1": [
          { type: "Ready", status: "True", reason: "Accepted", message: "ready" },
          { type: "OffloadingRequired", status: "True" },
        ],
      },
    },
  } as unknown as NamespaceOffloading;
  assert.deepEqual(offloadingView(offloading, "demo"), {
    namespace: "demo-dev",
    tenant: "demo",
    podOffloadingStrategy: "Remote",
    namespaceMappingStrategy: "DefaultName",
    remoteNamespace: "demo-dev-abc",
    clusterSelector: "region In (eu, us)",
    phase: "SomeFailed",
    message: "edge-2: quota",
    clusters: [
      { cluster: "edge-1", selected: true, phase: "Accepted", ready: true, message: "ready" },
      { cluster: "edge-2", selected: true, phase: "CreationLoopBackOff", ready: false, message: "quota" },
    ],
  });
  assert.equal(selectorText(undefined), "", "no selector: every peered cluster");
});

test("monitor alerts: a tenant's to those who see it, tenantless ones only to those who see all", () => {
  const rule = {
    metadata: { name: "long-pending" },
    spec: { object: "Pod", condition: "long-pending" },
    status: {
      alerts: [
        {
          kind: "Pod",
          namespace: "b-dev",
          name: "p2",
          tenant: "b",
          since: "2026-01-02T00:00:00Z",
          firedAt: "",
          message: "pending",
        },
        {
          kind: "Pod",
          namespace: "a-dev",
          name: "p1",
          tenant: "a",
          since: "2026-01-01T00:00:00Z",
          firedAt: "",
          message: "pending",
        },
        { kind: "Node", name: "n1", since: "2026-01-03T00:00:00Z", firedAt: "", message: "not ready" },
      ],
    },
  } as unknown as MonitorRule;
  assert.deepEqual(
    monitorAlerts([rule], false, (t) => t === "a").map((a) => `${a.rule}:${a.namespace}/${a.name}`),
    ["long-pending:a-dev/p1"],
  );
  assert.deepEqual(
    monitorAlerts([rule], true, () => false).map((a) => a.name),
    ["p1", "p2", "n1"],
    "oldest first",
  );
});

test("a tenant's namespaces are paged and filtered on the server; choices only when few", () => {
  const namespaces = Array.from({ length: 250 }, (_, i) => ({
    metadata: { name: `big-ns-${String(i).padStart(3, "0")}` },
    status: { phase: "Active" },
  }));
  const detail = tenantDetail({
    tenant: tenant("big"),
    namespaces,
    query: { offset: 50, limit: 50, filter: "NS-1" },
    history: {},
    usage: [],
    grants: [],
  });
  assert.equal(detail.namespaces.total, 100);
  assert.equal(detail.namespaces.items.length, 50);
  assert.equal(detail.namespaces.items[0]!.name, "big-ns-150");
  assert.deepEqual(detail.namespaceChoices, [], "250 namespaces are typed, not offered");
});

test("an AccessGrant in a line: grantees, verbs on resources, groups named when not core", () => {
  const grant = {
    metadata: { name: "read", namespace: "demo-dev" },
    spec: {
      grantees: [{ kind: "User", name: "bob" }],
      rules: [
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list"] },
        { apiGroups: ["apps"], resources: ["deployments"], verbs: ["get"], resourceNames: ["web"] },
      ],
    },
  } as unknown as AccessGrant;
  assert.deepEqual(accessGrantView(grant), {
    namespace: "demo-dev",
    name: "read",
    grantees: ["User bob"],
    rules: ["get,list configmaps", "get deployments (apps) named web"],
    ready: true,
    message: "",
  });
});
