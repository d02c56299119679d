import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Tenant } from "../tenants/index.js";
import { FILTERED_KINDS, filteredKind, namespaceSelector } from "./scope.js";

function tenant(name: string, spec: Partial<Tenant["spec"]> = {}): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name },
    spec: { owners: [{ kind: "User", name: "x" }], ...spec },
  } as Tenant;
}

const kind = (group: string, resource: string) =>
  FILTERED_KINDS.find((k) => k.group === group && k.resource === resource)!;
const named = (name: string, labels: Record<string, string> = {}) => ({ metadata: { name, labels } });

describe("what tenant users see of cluster-scoped kinds", () => {
  test("namespaces: those labelled with one of their tenants; the selector comes before the caller's", () => {
    const visible = kind("", "namespaces").visible([tenant("a"), tenant("b")]);
    assert.equal(visible(named("a-1", { "tenantry.dev/tenant": "a" })), true);
    assert.equal(visible(named("c-1", { "tenantry.dev/tenant": "c" })), false);
    assert.equal(visible(named("default")), false);
    assert.equal(namespaceSelector([tenant("a"), tenant("b")], null), "tenantry.dev/tenant in (a,b)");
    assert.equal(namespaceSelector([tenant("a")], "x=y"), "tenantry.dev/tenant in (a),x=y");
  });

  test("nodes: the node pool's, every node without a pool, the union over several tenants", () => {
    const pool = (zone: string) => tenant(zone, { nodePool: { nodeSelector: { zone } } });
    const nodes = kind("", "nodes");
    assert.equal(nodes.visible([pool("z1")])(named("n", { zone: "z1" })), true);
    assert.equal(nodes.visible([pool("z1")])(named("n", { zone: "z2" })), false);
    assert.equal(nodes.visible([pool("z1"), pool("z2")])(named("n", { zone: "z2" })), true);
    assert.equal(nodes.visible([pool("z1"), tenant("free")])(named("n", { zone: "z9" })), true);
  });

  test("classes: unset allows all, names and regex allow those, set but empty allows none", () => {
    const storage = kind("storage.k8s.io", "storageclasses");
    assert.equal(storage.visible([tenant("a")])(named("anything")), true);
    const listed = tenant("a", { allowed: { storageClasses: { names: ["gold"], regex: "^fast-" } } });
    assert.equal(storage.visible([listed])(named("gold")), true);
    assert.equal(storage.visible([listed])(named("fast-ssd")), true);
    assert.equal(storage.visible([listed])(named("silver")), false);
    const none = tenant("a", { allowed: { priorityClasses: {} } });
    assert.equal(kind("scheduling.k8s.io", "priorityclasses").visible([none])(named("high")), false);
    assert.equal(kind("networking.k8s.io", "ingressclasses").visible([none])(named("nginx")), true);
  });

  test("only cluster-scoped requests for those kinds are filtered", () => {
    const request = (apiGroup: string, resource: string, namespace?: string) => ({
      isResource: true as const,
      verb: "list",
      apiGroup,
      apiVersion: "v1",
      resource,
      legacyWatch: false,
      ...(namespace ? { namespace } : {}),
    });
    assert.equal(filteredKind(request("", "namespaces"))?.resource, "namespaces");
    assert.equal(filteredKind({ ...request("", "namespaces", "a"), name: "a" })?.resource, "namespaces");
    assert.equal(filteredKind(request("", "nodes", "a")), undefined);
    assert.equal(filteredKind(request("", "configmaps")), undefined);
    assert.equal(filteredKind(request("storage.k8s.io", "storageclasses"))?.group, "storage.k8s.io");
    assert.equal(filteredKind(request("storage.k8s.io", "csidrivers")), undefined);
  });
});
