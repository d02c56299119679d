import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { fitLabel, runtimePlacement, userSlug } from "./placement.js";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

describe("runtime placement", () => {
  it("keeps short DNS-label user names readable", () => {
    assert.equal(userSlug("alice"), "alice");
  });

  it("maps other names to distinct DNS labels", () => {
    const names = [
      "Alice",
      "alice@example.com",
      "keystone:alice",
      "oidc:alice",
      "a".repeat(200),
      "-",
      "u-x-12345678",
    ];
    const slugs = names.map((n) => userSlug(n));
    for (const slug of slugs) assert.match(slug, DNS_LABEL);
    assert.equal(new Set([...slugs, "alice"]).size, names.length + 1);
  });

  it("segregated: a namespace per user, objects service-instance", () => {
    assert.deepEqual(
      runtimePlacement({ tenant: "demo", user: "alice", service: "jupyter", instance: "main" }),
      {
        namespace: "demo-rt-alice",
        name: "jupyter-main",
      },
    );
  });

  it("combined: one namespace, objects user-service-instance", () => {
    const placed = runtimePlacement(
      { tenant: "demo", user: "alice", service: "jupyter", instance: "main" },
      "Combined",
      "rt",
    );
    assert.deepEqual(placed, { namespace: "rt", name: "alice-jupyter-main" });
  });

  it("long parts still give DNS labels of at most 63 characters, distinct per input", () => {
    const long = "x".repeat(63);
    const a = runtimePlacement({ tenant: long, user: long, service: long, instance: "a" }, "Combined");
    const b = runtimePlacement({ tenant: long, user: long, service: long, instance: "b" }, "Combined");
    assert.ok(a.name.length <= 63 && DNS_LABEL.test(a.name));
    assert.notEqual(a.name, b.name);
    assert.equal(fitLabel("short"), "short");
  });
});
