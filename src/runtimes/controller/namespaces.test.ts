import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Tenant } from "../../tenants/index.js";
import { MIRROR_LABEL, mirrorTenant } from "./namespaces.js";

describe("a tenant mirrored into a runtimes cluster", () => {
  it("keeps the tenant's policies, not its namespaces, templates or node pool", () => {
    const tenant = {
      apiVersion: "tenantry.dev/v1alpha1",
      kind: "Tenant",
      metadata: { name: "acme", uid: "u-1", resourceVersion: "7" },
      spec: {
        owners: [{ kind: "User", name: "alice" }],
        namespaces: [{ name: "dev" }],
        templates: [{ name: "base" }],
        namespaceQuota: 5,
        namespacePrefix: "acme-",
        quota: { hard: { pods: "20" } },
        podSecurity: { level: "restricted" },
        networkIsolation: { enabled: true },
        nodePool: { nodeSelector: { pool: "acme" } },
        firstLoginGroups: ["staff"],
      },
    } as unknown as Tenant;
    const mirror = mirrorTenant(tenant, "home");
    assert.deepEqual(mirror.metadata, {
      name: "acme",
      labels: { [MIRROR_LABEL]: "home", "app.kubernetes.io/managed-by": "tenantry" },
    });
    assert.deepEqual(mirror.spec, {
      owners: [{ kind: "User", name: "alice" }],
      namespaceQuota: 0,
      quota: { hard: { pods: "20" } },
      podSecurity: { level: "restricted" },
      networkIsolation: { enabled: true },
    });
  });

  it("leaves out a quota that refers to a TenantResourceQuota of the other cluster", () => {
    const tenant = {
      metadata: { name: "acme" },
      spec: { owners: [{ kind: "User", name: "alice" }], quota: { quotaRef: { name: "gold" } } },
    } as unknown as Tenant;
    assert.equal(mirrorTenant(tenant, "home").spec.quota, undefined);
  });
});
