import assert from "node:assert/strict";
import { test } from "node:test";
import { NamespaceFailures } from "./namespace-controller.js";

const failure = (tenant: string, namespace: string, message = "boom") => ({
  tenant,
  namespace,
  message,
  template: false,
});

test("a tenant's first failing namespace is its own, sorted by name, whatever other tenants fail", () => {
  const changed: string[] = [];
  const failures = new NamespaceFailures((tenant) => changed.push(tenant));
  failures.set(failure("a", "a-prod"));
  failures.set(failure("a", "a-dev"));
  failures.set(failure("b", "b-dev"));
  assert.equal(failures.firstOf("a")?.namespace, "a-dev");
  assert.equal(failures.firstOf("b")?.namespace, "b-dev");
  assert.equal(failures.firstOf("c"), undefined);
  failures.clear("a-dev");
  assert.equal(failures.firstOf("a")?.namespace, "a-prod");
  assert.deepEqual(changed, ["a", "a", "b", "a"]);
});

test("a namespace that moves to another tenant leaves the first one's failures and tells both", () => {
  const changed: string[] = [];
  const failures = new NamespaceFailures((tenant) => changed.push(tenant));
  failures.set(failure("a", "shared"));
  failures.set(failure("b", "shared"));
  assert.equal(failures.firstOf("a"), undefined);
  assert.equal(failures.firstOf("b")?.namespace, "shared");
  assert.deepEqual(changed, ["a", "a", "b"]);
  // The same failure again changes nothing anyone reports.
  failures.set(failure("b", "shared"));
  assert.deepEqual(changed, ["a", "a", "b"]);
});
