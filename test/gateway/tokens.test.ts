/**
 * Bearer tokens through the gateway: tokens of tenantry's built-in identity provider (checked by
 * the provider itself) and service-account tokens (checked by a TokenReview), with kubectl.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { kubectl } from "../support/kubectl.js";
import { testUser } from "../support/users.js";
import {
  call,
  core,
  createTenant,
  deleteTenants,
  gatewayTokenKubeconfig,
  names,
  startTestGateway,
  type TestGateway,
  waitForNamespaces,
} from "./support.js";

interface WhoAmI {
  status: { userInfo: { username: string; groups?: string[]; extra?: Record<string, string[]> } };
}

describe("tenant gateway: bearer tokens", () => {
  const a = uniqueName("tka");
  const b = uniqueName("tkb");
  const aNamespaces = [`${a}-one`, `${a}-two`];
  const member = uniqueName("dana");
  const password = "dana-secret-1";
  let identity: BuiltinIdentity;
  let gw: TestGateway;
  let token: string;

  before(async () => {
    const [owner, other] = await Promise.all([testUser(uniqueName("alice")), testUser(uniqueName("bob"))]);
    await Promise.all([
      createTenant(a, {
        owners: [{ kind: "User", name: owner.name }],
        namespaces: [{ name: "one" }, { name: "two" }],
      }),
      createTenant(b, { owners: [{ kind: "User", name: other.name }], namespaces: [{ name: "one" }] }),
    ]);
    identity = await sharedBuiltinIdentity();
    await identity.createUser({ name: member, password, tenant: a, tenantAdmin: false });
    // The gateway puts a user in their tenant at first login, as the token webhook does.
    gw = await startTestGateway({ providers: [identity], provisionTenants: true });
    await waitForNamespaces(gw.informers, [...aNamespaces, `${b}-one`]);
    token = (await identity.login({ username: member, password })).token;
  });

  after(async () => {
    await gw?.stop();
    await identity?.deleteUser(member).catch(() => {});
    await stopSharedBuiltinIdentity();
    await deleteTenants([a, b]);
  });

  test("a built-in user's token: kubectl sees the tenant's namespaces and works in them as the user", async () => {
    const config = gatewayTokenKubeconfig(gw.gateway, token);
    const ns = await kubectl(config, ["get", "ns"]);
    assert.equal(ns.code, 0, ns.stderr);
    assert.deepEqual(names(ns.stdout), aNamespaces);

    const whoami = await kubectl(config, ["auth", "whoami", "-o", "json"]);
    assert.equal(whoami.code, 0, whoami.stderr);
    const user = (JSON.parse(whoami.stdout) as WhoAmI).status.userInfo;
    assert.equal(user.username, member);
    assert.deepEqual(user.extra?.["tenantry.dev/tenant"], [a]);
    assert.ok(user.groups?.includes(`tenantry:tenant:${a}`), JSON.stringify(user.groups));

    // First login through the gateway made the user a member; the tenant controller then grants edit.
    await eventually(
      async () => {
        const create = await kubectl(config, ["-n", aNamespaces[0]!, "create", "configmap", "from-dana"]);
        assert.equal(create.code, 0, create.stderr);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const read = await core.readNamespacedConfigMap({ name: "from-dana", namespace: aNamespaces[0]! });
    assert.equal(read.metadata?.name, "from-dana");

    const other = await kubectl(config, ["-n", `${b}-one`, "get", "configmaps"]);
    assert.notEqual(other.code, 0);
    assert.match(other.stderr, /\(Forbidden\)/);
    const otherNs = await kubectl(config, ["get", "ns", `${b}-one`]);
    assert.match(otherNs.stderr, /\(NotFound\)/);
  });

  test("a revoked or forged token gets 401", async () => {
    const spare = (await identity.login({ username: member, password })).token;
    assert.equal((await call(gw.gateway, "/api/v1/namespaces", { token: spare })).status, 200);
    await identity.revoke(spare);
    await eventually(async () => {
      const answer = await call(gw.gateway, "/api/v1/namespaces", { token: spare });
      assert.equal(answer.status, 401, answer.body);
    });
    const forged = `${token.slice(0, -4)}AAAA`;
    assert.equal((await call(gw.gateway, "/api/v1/namespaces", { token: forged })).status, 401);
  });

  test("a service account's token is reviewed by the API server and impersonated as that account", async () => {
    const namespace = aNamespaces[1]!;
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "robot" } } });
    const issued = await core.createNamespacedServiceAccountToken({
      name: "robot",
      namespace,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const config = gatewayTokenKubeconfig(gw.gateway, issued.status!.token!);
    const whoami = await kubectl(config, ["auth", "whoami", "-o", "json"]);
    assert.equal(whoami.code, 0, whoami.stderr);
    const user = (JSON.parse(whoami.stdout) as WhoAmI).status.userInfo;
    assert.equal(user.username, `system:serviceaccount:${namespace}:robot`);
    assert.ok(user.groups?.includes(`system:serviceaccounts:${namespace}`));
    assert.ok(user.extra?.["authentication.kubernetes.io/credential-id"]);
    const pods = await kubectl(config, ["-n", namespace, "get", "pods"]);
    assert.match(pods.stderr, /\(Forbidden\).*system:serviceaccount:/);
  });
});
