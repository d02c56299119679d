import assert from "node:assert/strict";
import { test } from "node:test";
import { NamespaceFailures } from "./namespace-controller.js";
import { applyTogether } from "./writes.js";

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

test("writes applied together all run, and the first failure in their order is the one reported", async () => {
  const finished: string[] = [];
  const write = (name: string, ms: number, fail?: boolean) =>
    new Promise<void>((resolve, reject) =>
      setTimeout(() => {
        finished.push(name);
        if (fail) reject(new Error(`${name} failed`));
        else resolve();
      }, ms),
    );
  await assert.rejects(
    applyTogether([write("first", 20), write("second", 30, true), write("third", 1, true)]),
    /second failed/,
  );
  assert.deepEqual(finished.sort(), ["first", "second", "third"]);
});
