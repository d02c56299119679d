/**
 * Who gets in (certificates of the cluster's CA; nobody anonymous; nobody choosing whom to
 * impersonate), per-tenant rate limits answering 429 with Retry-After, and per-tenant metrics.
 * Plain HTTPS requests: kubectl retries a 429 by itself, which would hide it.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createCertificateAuthority, issueCertificate } from "../../src/pki/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  call,
  createTenant,
  deleteTenants,
  gatewayKubeconfig,
  startTestGateway,
  type TestGateway,
  waitForNamespaces,
  watchFor,
} from "./support.js";

describe("tenant gateway: authentication, rate limits, metrics", () => {
  const a = uniqueName("rla");
  const b = uniqueName("rlb");
  let alice: TestUser;
  let bob: TestUser;
  let root: TestUser;
  let gw: TestGateway;

  before(async () => {
    [alice, bob, root] = await Promise.all([
      testUser(uniqueName("alice")),
      testUser(uniqueName("bob")),
      testUser(uniqueName("root"), ["system:masters"]),
    ]);
    await Promise.all([
      createTenant(a, { owners: [{ kind: "User", name: alice.name }], namespaces: [{ name: "one" }] }),
      createTenant(b, {
        owners: [{ kind: "User", name: bob.name }],
        namespaces: [{ name: "one" }, { name: "two" }],
      }),
    ]);
    gw = await startTestGateway({ rateLimit: { qps: 2, burst: 5 }, metricsPort: 0 });
    await waitForNamespaces(gw.informers, [`${a}-one`, `${b}-one`, `${b}-two`]);
  });

  after(async () => {
    await gw?.stop();
    await deleteTenants([a, b]);
  });

  test("an anonymous request gets 401 with a Status", async () => {
    const answer = await call(gw.gateway, "/api/v1/namespaces");
    assert.equal(answer.status, 401);
    const status = JSON.parse(answer.body) as { kind: string; reason: string; code: number; status: string };
    assert.deepEqual(
      [status.kind, status.reason, status.code, status.status],
      ["Status", "Unauthorized", 401, "Failure"],
    );
  });

  test("a client certificate of another CA, or a bad token, gets 401", async () => {
    const stranger = await createCertificateAuthority("stranger-ca");
    const pair = await issueCertificate(stranger, { commonName: alice.name, usage: "client", validDays: 1 });
    const forged: TestUser = {
      ...alice,
      kubeConfig: (() => {
        const kc = alice.kubeConfig;
        const copy = Object.create(kc) as typeof kc;
        copy.getCurrentUser = () => ({
          ...kc.getCurrentUser()!,
          certData: Buffer.from(pair.certPem).toString("base64"),
          keyData: Buffer.from(pair.keyPem).toString("base64"),
        });
        return copy;
      })(),
    };
    const answer = await call(gw.gateway, "/api/v1/namespaces", { user: forged });
    assert.equal(answer.status, 401, answer.body);
    const token = await call(gw.gateway, "/api/v1/namespaces", { token: "not-a-token" });
    assert.equal(token.status, 401, token.body);
  });

  test("a caller choosing whom to impersonate gets 403", async () => {
    for (const header of [
      "Impersonate-User",
      "Impersonate-Group",
      "Impersonate-Uid",
      "Impersonate-Extra-scopes",
    ]) {
      const answer = await call(gw.gateway, "/api/v1/namespaces", {
        user: alice,
        headers: { [header]: "system:admin" },
      });
      assert.equal(answer.status, 403, `${header}: ${answer.body}`);
      assert.match(answer.body, /"reason":"Forbidden"/);
    }
  });

  test("a tenant that used up its bucket gets 429 with Retry-After; other tenants and admins do not", async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => call(gw.gateway, "/api/v1/namespaces", { user: alice })),
    );
    const limited = answers.filter((r) => r.status === 429);
    assert.ok(limited.length >= 5, `only ${limited.length} of 12 limited`);
    assert.ok(answers.filter((r) => r.status === 200).length >= 5);
    const first = limited[0]!;
    assert.ok(Number(first.headers["retry-after"]) >= 1, `Retry-After ${first.headers["retry-after"]}`);
    const status = JSON.parse(first.body) as {
      reason: string;
      code: number;
      details: { retryAfterSeconds: number };
    };
    assert.equal(status.reason, "TooManyRequests");
    assert.equal(status.code, 429);
    assert.ok(status.details.retryAfterSeconds >= 1);

    assert.equal((await call(gw.gateway, "/api/v1/namespaces", { user: bob })).status, 200);
    const admins = await Promise.all(
      Array.from({ length: 12 }, () => call(gw.gateway, "/api/v1/namespaces", { user: root })),
    );
    assert.deepEqual(
      admins.map((r) => r.status),
      Array(12).fill(200),
    );

    // kubectl retries a 429 after Retry-After by itself: it gets through, only later.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const retried = await kubectl(gatewayKubeconfig(gw.gateway, alice), ["get", "ns", "-o", "name"]);
    assert.equal(retried.code, 0, retried.stderr);
  });

  test("metrics per tenant: requests by verb, resource and code, latency, rate limiting, open watches, namespaces", async () => {
    await new Promise((resolve) => setTimeout(resolve, 3000));
    await call(gw.gateway, "/api/v1/namespaces", { user: bob });
    await call(gw.gateway, `/api/v1/namespaces/${b}-one/configmaps`, { user: bob });
    let during = "";
    await watchFor(gw.gateway, "/api/v1/namespaces?watch=1", bob, 500, async () => {
      during = await (await fetch(gw.gateway.metricsUrl!)).text();
    });
    assert.match(during, new RegExp(`tenantry_gateway_watches\\{tenant="${b}"\\} 1`));

    // The watch is counted as closed once the gateway has seen the caller hang up.
    const text = await eventually(async () => {
      const scraped = await (await fetch(gw.gateway.metricsUrl!)).text();
      assert.match(scraped, new RegExp(`tenantry_gateway_watches\\{tenant="${b}"\\} 0`));
      return scraped;
    });
    const line = (pattern: string) => assert.match(text, new RegExp(pattern), pattern);
    line(`tenantry_gateway_requests_total\\{tenant="${b}",verb="list",resource="namespaces",code="200"\\} 2`);
    line(`tenantry_gateway_requests_total\\{tenant="${b}",verb="list",resource="configmaps",code="200"\\} 1`);
    line(
      `tenantry_gateway_requests_total\\{tenant="${a}",verb="list",resource="namespaces",code="429"\\} \\d+`,
    );
    line(`tenantry_gateway_request_duration_seconds_count\\{tenant="${b}",verb="list"\\} 3`);
    line(`tenantry_gateway_rate_limited_total\\{tenant="${a}"\\} \\d+`);
    line(
      `tenantry_gateway_requests_total\\{tenant="${b}",verb="watch",resource="namespaces",code="200"\\} 1`,
    );
    line(`tenantry_tenant_namespaces\\{tenant="${b}"\\} 2`);
    line(`tenantry_tenant_namespaces\\{tenant="${a}"\\} 1`);
    assert.doesNotMatch(
      text,
      new RegExp(`tenantry_gateway_request_duration_seconds_count\\{tenant="${b}",verb="watch"`),
    );

    // Metrics are served on loopback over plain HTTP, not on the gateway's TLS port.
    assert.match(gw.gateway.metricsUrl!, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.equal((await call(gw.gateway, "/metrics", { user: alice })).status, 403);
  });
});
