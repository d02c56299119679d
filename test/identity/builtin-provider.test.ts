import { after } from "node:test";
import { generateKeyPair, SignJWT } from "jose";
import { type BuiltinIdentity, TOKEN_AUDIENCE } from "../../src/identity/index.js";
import { uniqueName } from "../support/clusters.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { type ConformanceUser, identityProviderConformance } from "./provider-conformance.js";

const tenant = uniqueName("blt");
const admin: ConformanceUser = {
  username: uniqueName("ada"),
  password: "ada-secret-1",
  tenant,
  groups: ["developers", "auditors"],
  tenantAdmin: true,
};
const member: ConformanceUser = {
  username: uniqueName("ben"),
  password: "ben-secret-1",
  tenant,
  groups: ["developers"],
  tenantAdmin: false,
};

identityProviderConformance("builtin", () => {
  let identity: BuiltinIdentity;
  const token = async (user: ConformanceUser, ttlSeconds?: number) => {
    const stored = await identity.readUser(user.username);
    return (await identity.issue(stored!, ttlSeconds)).token;
  };
  return {
    get provider() {
      return identity;
    },
    admin,
    member,
    passwordLogin: true,
    async setUp() {
      identity = await sharedBuiltinIdentity();
      for (const user of [admin, member]) {
        await identity.createUser({
          name: user.username,
          password: user.password,
          groups: user.groups,
          tenant: user.tenant,
          tenantAdmin: user.tenantAdmin,
        });
      }
    },
    async tearDown() {
      for (const user of [admin, member]) await identity.deleteUser(user.username);
    },
    tokenFor: (user) => token(user),
    async expiredToken(user) {
      const expiring = await token(user, 1);
      await new Promise((resolve) => setTimeout(resolve, 2100));
      return expiring;
    },
    async forgedToken(user) {
      // Right issuer, audience, key id and claims; signed with a key tenantry never had.
      const { privateKey } = await generateKeyPair("ES256");
      const genuine = await identity.readUser(user.username);
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ preferred_username: user.username, groups: user.groups, tenant: user.tenant })
        .setProtectedHeader({ alg: "ES256", kid: identity.jwks().keys.at(-1)!.kid! })
        .setIssuer(identity.issuer)
        .setAudience(TOKEN_AUDIENCE)
        .setSubject(genuine!.metadata!.uid!)
        .setJti("forged")
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(privateKey);
    },
    revoke: (t) => identity.revoke(t),
  };
});

after(() => stopSharedBuiltinIdentity());
