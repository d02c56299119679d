/**
 * The OIDC adapter against a real OIDC issuer: tenantry's own built-in identity service, which
 * publishes a discovery document and JWKS over HTTPS like any OIDC provider.
 */
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { generateKeyPair, SignJWT } from "jose";
import { OidcIdentityProvider, TOKEN_AUDIENCE } from "../../src/identity/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { builtinIssuedTokens } from "./builtin-tokens.js";
import { type ConformanceUser, identityProviderConformance } from "./provider-conformance.js";

const tenant = uniqueName("oidc");
const admin: ConformanceUser = {
  username: uniqueName("olga"),
  password: "olga-secret-1",
  tenant,
  groups: ["ops"],
  tenantAdmin: true,
};
const member: ConformanceUser = {
  username: uniqueName("otto"),
  password: "otto-secret-1",
  tenant,
  groups: ["devs"],
  tenantAdmin: false,
};

function oidcProvider(overrides: Partial<ConstructorParameters<typeof OidcIdentityProvider>[0]> = {}) {
  const env = testEnvironment();
  return new OidcIdentityProvider({
    issuer: env.tenantry.accessUrl,
    audience: TOKEN_AUDIENCE,
    caPem: env.tenantry.accessCaPem,
    ...overrides,
  });
}

identityProviderConformance("oidc", () => ({
  ...builtinIssuedTokens([admin, member]),
  provider: oidcProvider(),
  admin,
  member,
  passwordLogin: false,
  usernamePrefix: "oidc:",
  groupPrefix: "oidc:",
}));

describe("oidc identity provider", () => {
  it("prefixes usernames and groups when configured, and makes admin groups tenant admins", async () => {
    const issuer = await sharedBuiltinIdentity();
    const name = uniqueName("pia");
    await issuer.createUser({ name, password: "pia-secret-1", groups: ["platform"], tenant: "acme" });
    try {
      const provider = oidcProvider({ prefix: "oidc:", adminGroups: ["platform"] });
      const result = await provider.authenticate((await issuer.issue((await issuer.readUser(name))!)).token);
      assert.ok(result.authenticated);
      assert.equal(result.identity.username, `oidc:${name}`);
      assert.deepEqual(result.identity.groups, ["oidc:platform"]);
      assert.equal(result.identity.tenantAdmin, true);
    } finally {
      await issuer.deleteUser(name);
    }
  });

  it("refuses tokens issued to another audience", async () => {
    const issuer = await sharedBuiltinIdentity();
    const name = uniqueName("aud");
    await issuer.createUser({ name, password: "aud-secret-1" });
    try {
      const provider = oidcProvider({ audience: "some-other-client" });
      const result = await provider.authenticate((await issuer.issue((await issuer.readUser(name))!)).token);
      assert.equal(result.authenticated, false);
      assert.match((result as { reason: string }).reason, /aud/);
    } finally {
      await issuer.deleteUser(name);
    }
  });

  it("reports an unreachable issuer as unavailable, not as a bad token", async () => {
    const { privateKey } = await generateKeyPair("ES256");
    const issuerUrl = "https://127.0.0.1:1";
    const token = await new SignJWT({ preferred_username: "x" })
      .setProtectedHeader({ alg: "ES256" })
      .setIssuer(issuerUrl)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject("x")
      .setExpirationTime("1h")
      .sign(privateKey);
    const provider = new OidcIdentityProvider({
      issuer: issuerUrl,
      audience: TOKEN_AUDIENCE,
      timeoutMs: 1000,
    });
    await assert.rejects(provider.authenticate(token), { name: "IdentityProviderUnavailable" });
  });
});

after(() => stopSharedBuiltinIdentity());
