import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Tenant } from "../api/tenant.js";
import { NAMESPACE_ISOLATION, NETWORK_ISOLATION_LABEL, TENANT_LABEL } from "./labels.js";
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
