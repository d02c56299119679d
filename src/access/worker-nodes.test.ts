import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Tenant, tenantRole, userLabelValue } from "../tenants/index.js";
import { pinnedValues } from "./selectors.js";
import { type ClusterScopedAttributes, WorkerNodeAccess, type WorkerNodeOwnership } from "./worker-nodes.js";

function tenant(name: string, spec: Partial<Tenant["spec"]>): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name },
    spec: { owners: [{ kind: "User", name: "olga" }], ...spec },
  } as Tenant;
}

const nodes: Record<string, WorkerNodeOwnership> = {
  "alice-1": { owner: "alice", tenant: "a" },
  "bob-1": { owner: "bob", tenant: "a" },
  "carol-1": { owner: "carol", tenant: "c" },
};
const access = new WorkerNodeAccess({ workerNode: async (name) => nodes[name] });
const withNodes = tenant("a", { users: [{ name: "alice" }, { name: "bob" }], workerNodes: { maxNodes: 3 } });
const plain = tenant("c", { owners: [{ kind: "User", name: "carol" }] });

function ask(username: string, attrs: ClusterScopedAttributes) {
  const requester = { username, groups: [] };
  const tenants = [withNodes, plain]
    .map((t) => ({ tenant: t, role: tenantRole(t, requester)! }))
    .filter((m) => m.role);
  return access.decide({ group: "tenantry.dev", resource: "workernodes", ...attrs }, { requester, tenants });
}

const userSelector = (user: string) => ({
  requirements: [{ key: "tenantry.dev/user", operator: "In", values: [userLabelValue(user)] }],
});

describe("tenant users and WorkerNodes", () => {
  test("a tenant without spec.workerNodes: nothing at all, every verb, NodeProviders too", async () => {
    for (const verb of ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]) {
      const decision = await ask("carol", { verb });
      assert.equal(decision?.decision, "deny", verb);
      assert.match(decision!.reason, /none of your tenants \("c"\) may ask for worker nodes/);
    }
    assert.equal((await ask("carol", { verb: "get", name: "alice-1" }))?.decision, "deny");
    assert.equal((await ask("carol", { verb: "list", resource: "nodeproviders" }))?.decision, "deny");
  });

  test("create is allowed, and named verbs only on one's own node (or the tenant's, for its owner)", async () => {
    assert.equal((await ask("alice", { verb: "create" }))?.decision, "allow");
    for (const verb of ["get", "update", "patch", "delete"]) {
      assert.equal((await ask("alice", { verb, name: "alice-1" }))?.decision, "allow", verb);
      const other = await ask("alice", { verb, name: "bob-1" });
      assert.equal(other?.decision, "deny", verb);
      assert.match(other!.reason, /WorkerNode "bob-1" belongs to another user/);
      assert.equal((await ask("olga", { verb, name: "bob-1" }))?.decision, "allow", "the tenant's owner");
      assert.equal((await ask("olga", { verb, name: "carol-1" }))?.decision, "deny", "another tenant's");
    }
    assert.equal((await ask("alice", { verb: "get", name: "missing" }))?.decision, "allow", "a 404 follows");
    assert.equal((await ask("alice", { verb: "get" }))?.decision, "deny", "get without a name");
    assert.equal(await ask("alice", { verb: "update", subresource: "status" }), undefined, "RBAC's call");
  });

  test("list and watch only with a selector pinning oneself or an owned tenant", async () => {
    const plainList = await ask("alice", { verb: "list" });
    assert.equal(plainList?.decision, "deny");
    assert.match(plainList!.reason, new RegExp(`-l tenantry.dev/user=${userLabelValue("alice")}`));
    assert.equal(
      (await ask("alice", { verb: "list", labelSelector: userSelector("alice") }))?.decision,
      "allow",
    );
    assert.equal(
      (await ask("alice", { verb: "watch", labelSelector: userSelector("bob") }))?.decision,
      "deny",
    );
    const raw = { rawSelector: `app=x,tenantry.dev/user=${userLabelValue("alice")}` };
    assert.equal((await ask("alice", { verb: "watch", labelSelector: raw }))?.decision, "allow");
    const tenantA = { rawSelector: "tenantry.dev/tenant=a" };
    assert.equal((await ask("olga", { verb: "list", labelSelector: tenantA }))?.decision, "allow");
    assert.equal(
      (await ask("alice", { verb: "list", labelSelector: tenantA }))?.decision,
      "deny",
      "a member",
    );
    const byName = (name: string) => ({ rawSelector: `metadata.name=${name}` });
    assert.equal(
      (await ask("alice", { verb: "watch", fieldSelector: byName("alice-1") }))?.decision,
      "allow",
    );
    assert.equal((await ask("alice", { verb: "watch", fieldSelector: byName("bob-1") }))?.decision, "deny");
    assert.equal(
      (await ask("alice", { verb: "watch", fieldSelector: byName("later") }))?.decision,
      "deny",
      "a watch on a name nobody has yet would show whoever takes it",
    );
  });

  test("NodeProviders: readable by tenants with worker nodes; named, only those allowed", async () => {
    const limited = tenant("l", {
      users: [{ name: "dan" }],
      workerNodes: { maxNodes: 1, providers: ["os"] },
    });
    const requester = { username: "dan", groups: [] };
    const providers = (verb: string, name?: string) =>
      access.decide(
        { group: "tenantry.dev", resource: "nodeproviders", verb, ...(name ? { name } : {}) },
        { requester, tenants: [{ tenant: limited, role: "member" }] },
      );
    assert.equal((await providers("list"))?.decision, "allow");
    assert.equal((await providers("get", "os"))?.decision, "allow");
    assert.equal((await providers("get", "simulated"))?.decision, "deny");
    assert.equal(await providers("create"), undefined, "RBAC's call (users have none)");
  });
});

describe("selector values", () => {
  test("what a selector pins a key to, from requirements or raw text", () => {
    assert.deepEqual(pinnedValues({ rawSelector: "a=1,b==2" }, "b"), new Set(["2"]));
    assert.deepEqual(pinnedValues({ rawSelector: "a in (1, 2),b=3" }, "a"), new Set(["1", "2"]));
    assert.equal(pinnedValues({ rawSelector: "a!=1" }, "a"), undefined);
    assert.equal(pinnedValues({ rawSelector: "a" }, "a"), undefined);
    assert.equal(pinnedValues({ rawSelector: "a notin (1)" }, "a"), undefined);
    assert.equal(pinnedValues(undefined, "a"), undefined);
    const both = {
      requirements: [
        { key: "a", operator: "In", values: ["1", "2"] },
        { key: "a", operator: "In", values: ["2", "3"] },
      ],
    };
    assert.deepEqual(pinnedValues(both, "a"), new Set(["2"]));
    assert.equal(
      pinnedValues({ requirements: [{ key: "a", operator: "NotIn", values: ["1"] }] }, "a"),
      undefined,
    );
  });
});
