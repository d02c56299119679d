import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { describe, test } from "node:test";
import { pino } from "pino";
import type { RuntimeOwnerAccess, Tenant } from "../tenants/index.js";
import { isPrivate, RuntimeNamespaceAccess, type RuntimeRequest } from "./runtime-namespaces.js";

function tenant(owners?: RuntimeOwnerAccess): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name: "demo" },
    spec: {
      owners: [{ kind: "User", name: "olga" }],
      users: [{ name: "alice" }, { name: "bob" }],
      ...(owners ? { runtimeAccess: { owners } } : {}),
    },
  } as Tenant;
}

function recorder() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level: "info" },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    }),
  );
  return { access: new RuntimeNamespaceAccess({ logger }), lines };
}

const namespace = "demo-rt-alice";
const request = (verb: string, resource: string, extra: Partial<RuntimeRequest> = {}): RuntimeRequest => ({
  namespace,
  verb,
  resource,
  ...extra,
});
const PROBES: RuntimeRequest[] = [
  request("get", "secrets", { name: "jupyter-lab-token" }),
  request("list", "secrets"),
  request("watch", "secrets"),
  request("get", "configmaps"),
  request("get", "pods", { subresource: "log", name: "lab-0" }),
  request("create", "pods", { subresource: "exec", name: "lab-0" }),
  request("get", "pods", { subresource: "exec", name: "lab-0" }),
  request("create", "pods", { subresource: "portforward", name: "lab-0" }),
  request("get", "services", { subresource: "proxy", name: "lab" }),
  request("delete", "pods", { name: "lab-0" }),
];

describe("a user's runtimes namespace", () => {
  test("another member gets nothing there, reads included", () => {
    const { access } = recorder();
    for (const probe of [
      ...PROBES,
      request("list", "pods"),
      request("get", "runtimes", { group: "tenantry.dev" }),
    ]) {
      const decision = access.decide(probe, { username: "bob", groups: [] }, tenant(), "alice", "member");
      assert.equal(decision?.decision, "deny", JSON.stringify(probe));
      assert.match(
        decision!.reason,
        /runtimes namespace of user "alice": other members of tenant "demo" get nothing there unless "alice" lets them in with an AccessGrant/,
      );
    }
  });

  test("owners under View (the default) see what runs, not its credentials, logs or insides, and change nothing", () => {
    const { access, lines } = recorder();
    const olga = { username: "olga", groups: [] };
    for (const probe of PROBES) {
      assert.ok(isPrivate(probe), JSON.stringify(probe));
      const decision = access.decide(probe, olga, tenant(), "alice", "owner");
      assert.equal(decision?.decision, "deny", JSON.stringify(probe));
      assert.match(decision!.reason, /spec.runtimeAccess.owners of tenant "demo" is View/);
    }
    for (const probe of [
      request("list", "pods"),
      request("watch", "events"),
      request("get", "runtimes", { group: "tenantry.dev" }),
    ])
      assert.equal(
        access.decide(probe, olga, tenant(), "alice", "owner")?.decision,
        "none",
        JSON.stringify(probe),
      );
    assert.equal(
      access.decide(request("delete", "namespaces", { name: namespace }), olga, tenant(), "alice", "owner")
        ?.decision,
      "none",
      "the namespace itself stays theirs to delete",
    );
    assert.equal(lines.length, 0, "nothing to record");
  });

  test("owners under None get nothing; under Full everything, each private use recorded", () => {
    const { access, lines } = recorder();
    const olga = { username: "olga", groups: [] };
    assert.equal(
      access.decide(request("list", "pods"), olga, tenant("None"), "alice", "owner")?.decision,
      "deny",
    );
    for (const probe of PROBES)
      assert.equal(access.decide(probe, olga, tenant("Full"), "alice", "owner")?.decision, "none");
    assert.equal(lines.length, PROBES.length, "an audit line per use");
    assert.deepEqual(
      {
        owner: lines[0]!.owner,
        namespace: lines[0]!.namespace,
        runtimeUser: lines[0]!.runtimeUser,
        request: lines[0]!.request,
      },
      { owner: "olga", namespace, runtimeUser: "alice", request: 'get secrets "jupyter-lab-token"' },
    );
    access.decide(request("list", "pods"), olga, tenant("Full"), "alice", "owner");
    assert.equal(lines.length, PROBES.length, "plain reads are not recorded");
  });

  test("those outside the tenant: RBAC's call, as in any namespace", () => {
    const { access } = recorder();
    assert.equal(
      access.decide(PROBES[0]!, { username: "carol", groups: [] }, tenant(), "alice", undefined),
      undefined,
    );
  });
});
