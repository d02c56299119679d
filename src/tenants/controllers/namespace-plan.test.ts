import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject, V1RoleBinding } from "@kubernetes/client-node";
import type { Tenant } from "../api/tenant.js";
import {
  NAMESPACE_ISOLATION,
  NETWORK_ISOLATION_LABEL,
  RUNTIME_USER_ANNOTATION,
  TENANT_LABEL,
} from "./labels.js";
import { planNamespace } from "./namespace-plan.js";
import { ISOLATION_POLICY } from "./render.js";

const tenant = {
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "Tenant",
  metadata: { name: "acme", uid: "u-1" },
  spec: {
    owners: [{ kind: "User", name: "alice" }],
    networkIsolation: {
      allowFromNamespaces: [{ matchLabels: { "kubernetes.io/metadata.name": "ingress" } }],
    },
  },
} as Tenant;

function policyFrom(labels: Record<string, string>): unknown[] {
  const plan = planNamespace(
    tenant,
    "acme-rt-alice",
    { metadata: { name: "acme-rt-alice", labels } },
    new Map(),
  );
  const policy = plan!.contents.find(
    (o: KubernetesObject) => o.kind === "NetworkPolicy" && o.metadata?.name === ISOLATION_POLICY,
  ) as { spec: { ingress: { from: unknown[] }[] } };
  return policy.spec.ingress[0]!.from;
}

describe("tenant isolation policy", () => {
  it("admits the tenant's namespaces and the allowed ones", () => {
    assert.deepEqual(policyFrom({ [TENANT_LABEL]: "acme" }), [
      { namespaceSelector: { matchLabels: { [TENANT_LABEL]: "acme" } } },
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ingress" } } },
    ]);
  });

  it("admits only the namespace itself (and the allowed ones) in a namespace isolated on its own", () => {
    assert.deepEqual(policyFrom({ [TENANT_LABEL]: "acme", [NETWORK_ISOLATION_LABEL]: NAMESPACE_ISOLATION }), [
      { podSelector: {} },
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "ingress" } } },
    ]);
  });
});

describe("a user's runtimes namespace", () => {
  const withUsers = {
    ...tenant,
    spec: {
      ...tenant.spec,
      users: [
        { name: "alice", role: "edit" },
        { name: "bob", role: "edit" },
      ],
    },
  } as Tenant;
  const bindings = (t: Tenant, annotations: Record<string, string> = {}) =>
    planNamespace(t, "acme-rt-alice", { metadata: { name: "acme-rt-alice", annotations } }, new Map())!
      .contents.filter((o) => o.kind === "RoleBinding")
      .map((o) => {
        const b = o as V1RoleBinding;
        return `${b.metadata!.name} ${b.roleRef.name} ${b.subjects!.map((s) => s.name).join(",")}`;
      })
      .sort();

  it("is its user's: they administer it, owners view it, the tenant's other users get nothing", () => {
    assert.deepEqual(bindings(withUsers, { [RUNTIME_USER_ANNOTATION]: "alice" }), [
      "tenantry-namespace-owner tenantry-namespace-owner alice",
      "tenantry-owners-runtime-view tenantry:runtime-viewer alice",
      "tenantry-runtime-user admin alice",
    ]);
  });

  it("gives owners what spec.runtimeAccess.owners says", () => {
    const access = (owners: "None" | "Full") =>
      bindings({ ...withUsers, spec: { ...withUsers.spec, runtimeAccess: { owners } } } as Tenant, {
        [RUNTIME_USER_ANNOTATION]: "bob",
      });
    assert.deepEqual(access("None"), [
      "tenantry-namespace-owner tenantry-namespace-owner alice",
      "tenantry-runtime-user admin bob",
    ]);
    assert.ok(access("Full").includes("tenantry-owners admin alice"));
  });

  it("keeps its user on the namespace; other namespaces bind every user as before", () => {
    const plan = planNamespace(
      withUsers,
      "acme-rt-alice",
      { metadata: { name: "acme-rt-alice", annotations: { [RUNTIME_USER_ANNOTATION]: "alice" } } },
      new Map(),
    )!;
    assert.equal(plan.namespace.metadata?.annotations?.[RUNTIME_USER_ANNOTATION], "alice");
    assert.equal(bindings(withUsers).filter((b) => b.startsWith("tenantry-user-")).length, 2);
  });
});
