import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { NODE_OWNER_LABEL } from "../nodes/index.js";
import { TENANT_LABEL, type Tenant, USER_LABEL, userLabelValue } from "../tenants/index.js";
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
const me = { username: "alice@example.com", groups: [] };

describe("what tenant users see of cluster-scoped kinds", () => {
  test("namespaces: those labelled with one of their tenants; the selector comes before the caller's", () => {
    const visible = kind("", "namespaces").visible([tenant("a"), tenant("b")], me);
    assert.equal(visible(named("a-1", { "tenantry.dev/tenant": "a" })), true);
    assert.equal(visible(named("c-1", { "tenantry.dev/tenant": "c" })), false);
    assert.equal(visible(named("default")), false);
    assert.equal(namespaceSelector([tenant("a"), tenant("b")], null), "tenantry.dev/tenant in (a,b)");
    assert.equal(namespaceSelector([tenant("a")], "x=y"), "tenantry.dev/tenant in (a),x=y");
  });

  test("nodes: the node pool's, every node without a pool, the union over several tenants", () => {
    const pool = (zone: string) => tenant(zone, { nodePool: { nodeSelector: { zone } } });
    const nodes = kind("", "nodes");
    assert.equal(nodes.visible([pool("z1")], me)(named("n", { zone: "z1" })), true);
    assert.equal(nodes.visible([pool("z1")], me)(named("n", { zone: "z2" })), false);
    assert.equal(nodes.visible([pool("z1"), pool("z2")], me)(named("n", { zone: "z2" })), true);
    assert.equal(nodes.visible([pool("z1"), tenant("free")], me)(named("n", { zone: "z9" })), true);
  });

  test("nodes: of the private nodes only the caller's own, whatever their pool", () => {
    const nodes = kind("", "nodes");
    const mine = named("mine", { [NODE_OWNER_LABEL]: userLabelValue(me.username) });
    const carols = named("carols", { [NODE_OWNER_LABEL]: userLabelValue("carol") });
    assert.equal(nodes.visible([tenant("free")], me)(mine), true);
    assert.equal(nodes.visible([tenant("free")], me)(carols), false, "a tenant without a pool too");
    const pool = tenant("p", { nodePool: { nodeSelector: { zone: "z1" } } });
    assert.equal(
      nodes.visible(
        [pool],
        me,
      )({ metadata: { ...carols.metadata, labels: { ...carols.metadata.labels, zone: "z1" } } }),
      false,
    );
  });

  test("worker nodes: the caller's own, and all of the tenants they own, within the scope", () => {
    const workerNodes = kind("tenantry.dev", "workernodes");
    const node = (user: string, tenantName: string) =>
      named(`${user}-node`, { [USER_LABEL]: userLabelValue(user), [TENANT_LABEL]: tenantName });
    const member = tenant("a", { users: [{ name: me.username }] });
    assert.equal(workerNodes.visible([member], me)(node(me.username, "a")), true);
    assert.equal(workerNodes.visible([member], me)(node("bob", "a")), false, "another member's");
    assert.equal(workerNodes.visible([member], me)(node("carol", "c")), false, "another tenant's");
    assert.equal(
      workerNodes.visible([tenant("b")], me)(node(me.username, "a")),
      false,
      "out of the path's scope",
    );
    const owned = tenant("a", { owners: [{ kind: "User", name: me.username }] });
    assert.equal(workerNodes.visible([owned], me)(node("bob", "a")), true, "an owner sees the tenant's");
    assert.equal(workerNodes.visible([owned], me)(node("carol", "c")), false);
  });

  test("node providers: those the caller's tenants may ask worker nodes from; none without spec.workerNodes", () => {
    const providers = kind("tenantry.dev", "nodeproviders");
    assert.equal(providers.visible([tenant("a")], me)(named("simulated")), false);
    assert.equal(
      providers.visible([tenant("a", { workerNodes: { maxNodes: 0 } })], me)(named("simulated")),
      false,
    );
    const any = tenant("a", { workerNodes: { maxNodes: 2 } });
    assert.equal(providers.visible([any], me)(named("simulated")), true);
    const some = tenant("a", { workerNodes: { maxNodes: 2, providers: ["openstack"] } });
    assert.equal(providers.visible([some], me)(named("simulated")), false);
    assert.equal(providers.visible([some], me)(named("openstack")), true);
  });

  test("classes: unset allows all, names and regex allow those, set but empty allows none", () => {
    const storage = kind("storage.k8s.io", "storageclasses");
    assert.equal(storage.visible([tenant("a")], me)(named("anything")), true);
    const listed = tenant("a", { allowed: { storageClasses: { names: ["gold"], regex: "^fast-" } } });
    assert.equal(storage.visible([listed], me)(named("gold")), true);
    assert.equal(storage.visible([listed], me)(named("fast-ssd")), true);
    assert.equal(storage.visible([listed], me)(named("silver")), false);
    const none = tenant("a", { allowed: { priorityClasses: {} } });
    assert.equal(kind("scheduling.k8s.io", "priorityclasses").visible([none], me)(named("high")), false);
    assert.equal(kind("networking.k8s.io", "ingressclasses").visible([none], me)(named("nginx")), true);
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
