/**
 * tenantry's OIDC adapter, and kube-apiserver through tenantry's TokenReview webhook, against a real
 * third-party OpenID provider: Ory Hydra, its login and consent accepted through its admin API as
 * its login app would, its ID tokens obtained by the authorization-code flow.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { AuthenticationV1Api, CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from "jose";
import { OidcIdentityProvider } from "../../src/identity/index.js";
import { loadClusterClient, statusCode } from "../../src/kube/index.js";
import { TENANTS_API_VERSION, type Tenant, userLabelValue } from "../../src/tenants/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { type HydraClient, type RunningHydra, startHydra } from "../support/hydra.js";
import { tokenKubeconfig } from "../support/identity.js";
import { setProviderSection } from "../support/identity-providers.js";
import { type ConformanceUser, identityProviderConformance } from "./provider-conformance.js";

let hydra: RunningHydra;
/** The client tenantry accepts tokens of (their `aud`). */
let client: HydraClient;
/** Another client of the same Hydra: its tokens are for someone else. */
let otherClient: HydraClient;
/** A second Hydra: a foreign issuer. */
let foreign: RunningHydra;
let foreignClient: HydraClient;

const tenant = uniqueName("hyd");
const admin: ConformanceUser = {
  username: uniqueName("hilde"),
  password: "",
  tenant,
  groups: ["platform", "ops"],
  tenantAdmin: true,
};
const member: ConformanceUser = {
  username: uniqueName("hugo"),
  password: "",
  tenant,
  groups: ["devs"],
  tenantAdmin: false,
};

/** What Hydra's consent app puts in the ID token for a user: name, groups, tenant, admin flag. */
function claimsOf(user: ConformanceUser) {
  return {
    preferred_username: user.username,
    groups: user.groups,
    tenant: user.tenant,
    ...(user.tenantAdmin ? { tenant_admin: true } : {}),
  };
}

async function idToken(user: ConformanceUser, via = client, from = hydra): Promise<string> {
  return (await from.login(via, { subject: `sub-${user.username}`, claims: claimsOf(user) })).idToken;
}

/**
 * A token of `client` (so its audience is right) that lives 2 s: the client's ID-token lifespan is
 * shortened for this one login (tests run one at a time).
 */
async function shortLivedToken(user: ConformanceUser): Promise<string> {
  await hydra.setIdTokenLifespan(client, "2s");
  try {
    return await idToken(user);
  } finally {
    await hydra.setIdTokenLifespan(client, "1h");
  }
}

async function expiredToken(user: ConformanceUser): Promise<string> {
  const token = await shortLivedToken(user);
  const { exp } = decodeJwt(token);
  await sleep(Math.max(0, exp! * 1000 - Date.now()) + 1100);
  return token;
}

/** A token that says it is Hydra's (issuer, key id, claims) but is signed by another key. */
async function forgedToken(user: ConformanceUser): Promise<string> {
  const real = await idToken(user);
  const { kid, alg } = decodeProtectedHeader(real);
  const { privateKey } = await generateKeyPair("RS256");
  return new SignJWT(decodeJwt(real)).setProtectedHeader({ alg: alg!, kid: kid! }).sign(privateKey);
}

function provider(overrides: Partial<ConstructorParameters<typeof OidcIdentityProvider>[0]> = {}) {
  return new OidcIdentityProvider({
    issuer: hydra.issuer,
    audience: client.clientId,
    caPem: hydra.caPem,
    adminGroups: ["platform"],
    ...overrides,
  });
}

before(async () => {
  [hydra, foreign] = await Promise.all([startHydra(), startHydra()]);
  [client, otherClient, foreignClient] = await Promise.all([
    hydra.createClient(),
    hydra.createClient(),
    foreign.createClient(),
  ]);
});

after(async () => {
  await Promise.all([hydra?.stop(), foreign?.stop()]);
});

identityProviderConformance("oidc (Ory Hydra)", () => ({
  provider: provider(),
  admin,
  member,
  tokenFor: (user) => idToken(user),
  expiredToken,
  forgedToken,
  passwordLogin: false,
  usernamePrefix: "oidc:",
  groupPrefix: "oidc:",
}));

describe("tenantry's OIDC provider with Ory Hydra", () => {
  it("finds Hydra's keys through its discovery document", async () => {
    const discovery = await hydra.publicJson<{ issuer: string; jwks_uri: string }>(
      "/.well-known/openid-configuration",
    );
    assert.equal(discovery.issuer, hydra.issuer);
    assert.match(discovery.jwks_uri, /^https:\/\/127\.0\.0\.1:\d+\/\.well-known\/jwks\.json$/);
    const result = await provider().authenticate(await idToken(member));
    assert.ok(result.authenticated, !result.authenticated ? result.reason : "");
    assert.equal(result.identity.uid, `sub-${member.username}`);
    assert.deepEqual(result.identity.groups, ["oidc:devs"]);
  });

  it("takes groups from the claim Hydra's consent session put in the ID token, admin groups making tenant admins", async () => {
    const user = { ...member, username: uniqueName("gina"), groups: ["platform"] };
    const result = await provider({ prefix: "" }).authenticate(await idToken(user));
    assert.ok(result.authenticated);
    assert.deepEqual(result.identity.groups, ["platform"]);
    assert.equal(result.identity.tenantAdmin, true, "platform is an admin group");
  });

  it("accepts tokens signed with a key Hydra rotated in, and still those of the old key", async () => {
    const oidc = provider();
    const before = await idToken(member);
    assert.ok((await oidc.authenticate(before)).authenticated);
    const kid = await hydra.rotateIdTokenKey();
    const after = await idToken(member);
    assert.equal(decodeProtectedHeader(after).kid, kid, "Hydra signs with the new key");
    assert.notEqual(decodeProtectedHeader(before).kid, kid);
    // jose fetches the key set again for an unknown key id, at most once per 30 s cool-down.
    await eventually(
      async () => {
        const result = await oidc.authenticate(after);
        assert.ok(result.authenticated, !result.authenticated ? result.reason : "");
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    assert.ok((await oidc.authenticate(before)).authenticated, "the old key is still published");
  });

  it("refuses a token Hydra issued to another client (audience)", async () => {
    const result = await provider().authenticate(await idToken(member, otherClient));
    assert.equal(result.authenticated, false);
    assert.match((result as { reason: string }).reason, /aud/);
  });

  it("accepts a short-lived token until it expires, then refuses it", async () => {
    const token = await shortLivedToken(member);
    const oidc = provider();
    assert.ok((await oidc.authenticate(token)).authenticated);
    await sleep(Math.max(0, decodeJwt(token).exp! * 1000 - Date.now()) + 1100);
    const result = await oidc.authenticate(token);
    assert.equal(result.authenticated, false);
    assert.match((result as { reason: string }).reason, /expired/);
  });

  it("refuses another issuer's token, and a token claiming Hydra's issuer signed by the other", async () => {
    const oidc = provider();
    const foreignToken = await idToken(member, foreignClient, foreign);
    assert.equal(oidc.recognizes(foreignToken), false);
    assert.equal((await oidc.authenticate(foreignToken)).authenticated, false);
    // The foreign Hydra's token with our issuer and audience written in: its key is not Hydra's.
    const { kid } = decodeProtectedHeader(foreignToken);
    const { privateKey } = await generateKeyPair("RS256");
    const posing = await new SignJWT({ ...decodeJwt(foreignToken), iss: hydra.issuer, aud: client.clientId })
      .setProtectedHeader({ alg: "RS256", kid: kid! })
      .sign(privateKey);
    const result = await oidc.authenticate(posing);
    assert.equal(result.authenticated, false);
  });
});

describe("kube-apiserver accepts Hydra's ID tokens through tenantry's TokenReview webhook", () => {
  const home = loadClusterClient(
    "home",
    testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig,
  );
  /** Who kube-apiserver says the token's bearer is (SelfSubjectReview), or its refusal's HTTP status. */
  async function whoami(token: string): Promise<{ status: number; username?: string; groups?: string[] }> {
    const kc = new KubeConfig();
    kc.loadFromFile(tokenKubeconfig(token));
    try {
      const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
      return {
        status: 201,
        username: review.status?.userInfo?.username,
        groups: review.status?.userInfo?.groups,
      };
    } catch (err) {
      return { status: statusCode(err) ?? 0 };
    }
  }

  before(async () => {
    // Beside any provider another test file configures meanwhile (login's Keystone).
    await setProviderSection("oidc", [
      {
        issuer: hydra.issuer,
        audience: client.clientId,
        prefix: "hydra:",
        adminGroups: ["platform"],
        caPem: hydra.caPem,
      },
    ]);
    // tenantry reloads its providers from the Secret within seconds.
    await eventually(async () => assert.equal((await whoami(await idToken(member))).status, 201), {
      timeoutMs: 60_000,
      intervalMs: 1000,
    });
  });

  after(async () => {
    await setProviderSection("oidc", undefined).catch(() => {});
    await home.objects
      .delete({ apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name: tenant } })
      .catch(() => {});
  });

  it("authenticates the bearer with Hydra's subject, name and groups", async () => {
    const who = await whoami(await idToken(member));
    assert.equal(who.username, `hydra:${member.username}`);
    assert.ok(who.groups?.includes("hydra:devs"), JSON.stringify(who.groups));
  });

  it("refuses expired, wrong-audience and foreign-issuer tokens with 401", async () => {
    // One login at a time: Hydra's in-memory database answered concurrent code exchanges with 500.
    const expired = await expiredToken(member);
    const otherAudience = await idToken(member, otherClient);
    const foreignIssuer = await idToken(member, foreignClient, foreign);
    const forged = await forgedToken(member);
    for (const [what, token] of Object.entries({ expired, otherAudience, foreignIssuer, forged })) {
      assert.equal((await whoami(token)).status, 401, what);
    }
  });

  it("accepts tokens of a rotated-in key", async () => {
    assert.equal((await whoami(await idToken(member))).status, 201);
    const kid = await hydra.rotateIdTokenKey();
    const token = await idToken(member);
    assert.equal(decodeProtectedHeader(token).kid, kid);
    await eventually(async () => assert.equal((await whoami(token)).status, 201), {
      timeoutMs: 90_000,
      intervalMs: 2000,
    });
  });

  it("provisions at first login: the tenant and <tenant>-default made, its admin an owner, a member with edit", async () => {
    const adminWho = await whoami(await idToken(admin));
    assert.equal(adminWho.username, `hydra:${admin.username}`);
    const read = async () =>
      (await home.objects.read({
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name: tenant },
      })) as Tenant;
    // As documented: a tenant made at a tenant admin's first login is owned by the provider's admins of it.
    assert.deepEqual((await read()).spec.owners, [
      { kind: "Group", name: `tenantry:tenant-admins:${tenant}` },
    ]);

    const memberToken = await idToken(member);
    assert.equal((await whoami(memberToken)).status, 201);
    assert.deepEqual(
      ((await read()).spec.users ?? []).map((u) => u.name),
      [`hydra:${member.username}`],
    );

    // The member works in the tenant's namespace through kube-apiserver, with the token Hydra issued.
    const namespace = `${tenant}-default`;
    const kc = new KubeConfig();
    kc.loadFromFile(tokenKubeconfig(memberToken, { namespace }));
    const core = kc.makeApiClient(CoreV1Api);
    await eventually(
      () =>
        core.createNamespacedConfigMap({
          namespace,
          body: { metadata: { name: "from-hydra" }, data: { who: member.username } },
        }),
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const admins = testKubeConfig("home").makeApiClient(CoreV1Api);
    const made = await admins.readNamespacedConfigMap({ namespace, name: "from-hydra" });
    // The label holds the name in label-safe form (":" is not allowed there).
    assert.equal(made.metadata?.labels?.["tenantry.dev/user"], userLabelValue(`hydra:${member.username}`));
  });
});
