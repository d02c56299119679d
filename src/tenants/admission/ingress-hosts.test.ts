import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Ingress } from "@kubernetes/client-node";
import type { AdmissionRequest } from "../../webhooks/index.js";
import { IngressHostClaims, type IngressHostIndex } from "./ingress-hosts.js";

function ingress(namespace: string, name: string, hosts: string[], tlsHosts: string[] = []): V1Ingress {
  return {
    metadata: { namespace, name },
    spec: {
      rules: hosts.map((host) => ({ host })),
      ...(tlsHosts.length ? { tls: [{ hosts: tlsHosts }] } : {}),
    },
  };
}

/** Ingresses and namespaces as the informers' caches would hold them. */
function index(ingresses: V1Ingress[], tenants: Record<string, string>): IngressHostIndex {
  return {
    ingressesWithHost: (host) =>
      ingresses.filter((i) =>
        [
          ...(i.spec?.rules ?? []).map((r) => r.host),
          ...(i.spec?.tls ?? []).flatMap((t) => t.hosts ?? []),
        ].includes(host),
      ),
    tenantNameOfNamespace: (namespace) => tenants[namespace],
    ingress: (namespace, name) =>
      ingresses.find((i) => i.metadata?.namespace === namespace && i.metadata?.name === name),
  };
}

function request(object: V1Ingress, oldObject?: V1Ingress, dryRun = false): AdmissionRequest {
  return {
    uid: "1",
    kind: { group: "networking.k8s.io", version: "v1", kind: "Ingress" },
    resource: { group: "networking.k8s.io", version: "v1", resource: "ingresses" },
    namespace: object.metadata!.namespace!,
    name: object.metadata!.name!,
    operation: oldObject ? "UPDATE" : "CREATE",
    userInfo: { username: "someone" },
    object: object as unknown as Record<string, unknown>,
    ...(oldObject ? { oldObject: oldObject as unknown as Record<string, unknown> } : {}),
    dryRun,
  };
}

const tenants = { "acme-web": "acme", "acme-shop": "acme", "beta-web": "beta" };

describe("ingress hostnames belong to one tenant", () => {
  test("another tenant's host, or a host outside every tenant, is refused naming the field", async () => {
    const existing = [
      ingress("acme-web", "site", ["shop.example.com"]),
      ingress("ingress-system", "ops", ["ops.example.com"]),
    ];
    const claims = new IngressHostClaims(index(existing, tenants));
    assert.equal(
      await claims.check(
        request(ingress("beta-web", "steal", ["www.beta.example", "shop.example.com"])),
        "beta",
      ),
      'spec.rules[1].host: host "shop.example.com" is already used by an Ingress outside tenant "beta"; a hostname belongs to one tenant',
    );
    assert.equal(
      await claims.check(request(ingress("beta-web", "tls", [], ["ops.example.com"])), "beta"),
      'spec.tls[0].hosts[0]: host "ops.example.com" is already used by an Ingress outside tenant "beta"; a hostname belongs to one tenant',
    );
  });

  test("a tenant may use its own host again, in another namespace too, and keep hosts it has", async () => {
    const existing = [
      ingress("acme-web", "site", ["shop.example.com"]),
      ingress("beta-web", "old", ["x.example"]),
    ];
    const claims = new IngressHostClaims(index(existing, tenants));
    assert.equal(
      await claims.check(request(ingress("acme-shop", "api", ["shop.example.com"])), "acme"),
      undefined,
    );
    const site = ingress("acme-web", "site", ["shop.example.com"]);
    assert.equal(await claims.check(request(site, site), "acme"), undefined, "an update of itself");
    // Two tenants that shared a host before the rule existed may still change other fields.
    const shared = ingress("acme-web", "legacy", ["x.example"]);
    assert.equal(await claims.check(request(shared, shared), "acme"), undefined);
  });

  test("of two tenants racing for a new host, the second loses even before the cache sees the first", async () => {
    let now = 1_000;
    const claims = new IngressHostClaims(index([], tenants), { pendingTtlMs: 30_000, now: () => now });
    const [first, second] = await Promise.all([
      claims.check(request(ingress("acme-web", "a", ["new.example.com"])), "acme"),
      claims.check(request(ingress("beta-web", "b", ["new.example.com"])), "beta"),
    ]);
    assert.equal(first, undefined);
    assert.match(
      second ?? "",
      /host "new\.example\.com" is already used by an Ingress outside tenant "beta"/,
    );
    now += 31_000;
    assert.equal(
      await claims.check(request(ingress("beta-web", "b", ["new.example.com"])), "beta"),
      undefined,
      "a claim whose Ingress never appeared lapses",
    );
  });

  test("a claim the cache has seen is the cache's: once its Ingress is deleted the host is free", async () => {
    const cached: V1Ingress[] = [];
    const claims = new IngressHostClaims(index(cached, tenants));
    const first = ingress("acme-web", "a", ["free.example"]);
    assert.equal(await claims.check(request(first), "acme"), undefined);
    cached.push(first);
    assert.match(
      (await claims.check(request(ingress("beta-web", "b", ["free.example"])), "beta")) ?? "",
      /outside/,
    );
    cached.pop();
    assert.equal(await claims.check(request(ingress("beta-web", "b", ["free.example"])), "beta"), undefined);
  });

  test("a dry run claims nothing", async () => {
    const claims = new IngressHostClaims(index([], tenants));
    assert.equal(
      await claims.check(request(ingress("acme-web", "a", ["dry.example"]), undefined, true), "acme"),
      undefined,
    );
    assert.equal(await claims.check(request(ingress("beta-web", "b", ["dry.example"])), "beta"), undefined);
  });
});
