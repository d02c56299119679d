import assert from "node:assert/strict";
import { test } from "node:test";
import type { Tenant } from "../api/tenant.js";
import {
  isCascadeDeleter,
  isPrivileged,
  isSystemComponent,
  ownedTenants,
  ownsTenant,
  tenantryIdentity,
  userLabelValue,
} from "./identity.js";

const identity = tenantryIdentity("tenantry-admin", "tenantry-system");

function tenant(name: string, owners: Tenant["spec"]["owners"]): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name },
    spec: { owners },
  } as Tenant;
}

test("owners match by username, group membership and service account username", () => {
  const t = tenant("acme", [
    { kind: "User", name: "alice" },
    { kind: "Group", name: "acme-admins" },
    { kind: "ServiceAccount", name: "system:serviceaccount:ci:deployer" },
  ]);
  assert.equal(ownsTenant(t, { username: "alice" }), true);
  assert.equal(ownsTenant(t, { username: "bob", groups: ["acme-admins"] }), true);
  assert.equal(ownsTenant(t, { username: "system:serviceaccount:ci:deployer" }), true);
  assert.equal(ownsTenant(t, { username: "acme-admins" }), false, "a user named like the group is not in it");
  assert.equal(ownsTenant(t, { username: "mallory", groups: ["alice"] }), false);
  const other = tenant("beta", [{ kind: "User", name: "alice" }]);
  assert.deepEqual(
    ownedTenants([other, t], { username: "alice" }).map((x) => x.metadata!.name),
    ["acme", "beta"],
  );
});

test("tenantry and system:masters are privileged; cascades run as the garbage collector", () => {
  assert.equal(isPrivileged({ username: "tenantry-admin" }, identity), true);
  assert.equal(isPrivileged({ username: "root", groups: ["system:masters"] }, identity), true);
  assert.equal(isPrivileged({ username: "alice", groups: ["system:authenticated"] }, identity), false);
  assert.equal(
    isCascadeDeleter({ username: "system:serviceaccount:kube-system:generic-garbage-collector" }),
    true,
  );
  assert.equal(
    isCascadeDeleter({ username: "system:serviceaccount:kube-system:namespace-controller" }),
    true,
  );
  assert.equal(
    isCascadeDeleter({ username: "system:serviceaccount:acme-dev:generic-garbage-collector" }),
    false,
  );
});

test("cluster components are system users and kube-system service accounts, not tenant workloads", () => {
  assert.equal(isSystemComponent({ username: "system:kube-scheduler" }, identity), true);
  assert.equal(isSystemComponent({ username: "system:node:node-1" }, identity), true);
  assert.equal(
    isSystemComponent({ username: "system:serviceaccount:kube-system:replicaset-controller" }, identity),
    true,
  );
  assert.equal(isSystemComponent({ username: "system:serviceaccount:acme-dev:builder" }, identity), false);
  assert.equal(isSystemComponent({ username: "alice" }, identity), false);
});

test("usernames become label values: valid ones unchanged, others readable and hashed", () => {
  assert.equal(userLabelValue("alice"), "alice");
  const email = userLabelValue("zangrand@infn.it");
  assert.match(email, /^zangrand-at-infn\.it-[0-9a-f]{10}$/);
  const sa = userLabelValue("system:serviceaccount:acme-dev:builder");
  assert.match(sa, /^system_serviceaccount_acme-dev_builder-[0-9a-f]{10}$/);
  assert.notEqual(userLabelValue("a:b"), userLabelValue("a_b"), "rewritten alike, told apart by the hash");
  const long = userLabelValue(`${"x".repeat(100)}@example.com`);
  assert.ok(long.length <= 63, long);
  assert.match(long, /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/);
  assert.match(userLabelValue("@@@"), /^(-at-)?[0-9a-f]{10}$|^at-.*|^[0-9a-f]{10}$/);
  assert.match(userLabelValue("@@@"), /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/);
});

test("no user can take the label value another user's name was rewritten to", () => {
  const rewritten = userLabelValue("a:b");
  assert.notEqual(userLabelValue(rewritten), rewritten);
  const bare = userLabelValue("@@@");
  assert.notEqual(userLabelValue(bare), bare);
  const names = ["a:b", rewritten, "@@@", bare, "alice", "Alice", "alice-0123456789", "0123456789"];
  assert.equal(new Set(names.map(userLabelValue)).size, names.length);
  assert.equal(userLabelValue("alice-01234"), "alice-01234", "a short hex tail is not a hash");
});
