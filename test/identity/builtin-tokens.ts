/**
 * Tokens from tenantry's built-in identity service for the conformance fixtures of the providers
 * that verify them (the built-in provider itself, and OIDC against the built-in issuer).
 */
import { generateKeyPair, SignJWT } from "jose";
import { type BuiltinIdentity, TOKEN_AUDIENCE } from "../../src/identity/index.js";
import { sharedBuiltinIdentity } from "../support/identity.js";
import type { ConformanceUser, ProviderFixture } from "./provider-conformance.js";

type IssuedTokens = Pick<
  ProviderFixture,
  "setUp" | "tearDown" | "tokenFor" | "expiredToken" | "forgedToken"
> & {
  /** The shared built-in identity service (after setUp). */
  issuer(): BuiltinIdentity;
};

export function builtinIssuedTokens(users: ConformanceUser[]): IssuedTokens {
  let issuer: BuiltinIdentity | undefined;
  const shared = () => {
    if (!issuer) throw new Error("setUp has not run");
    return issuer;
  };
  const token = async (user: ConformanceUser, ttlSeconds?: number) =>
    (await shared().issue((await shared().readUser(user.username))!, ttlSeconds)).token;
  return {
    issuer: shared,
    async setUp() {
      issuer = await sharedBuiltinIdentity();
      for (const user of users) {
        await issuer.createUser({
          name: user.username,
          password: user.password,
          groups: user.groups,
          tenant: user.tenant,
          tenantAdmin: user.tenantAdmin,
        });
      }
    },
    async tearDown() {
      for (const user of users) await shared().deleteUser(user.username);
    },
    tokenFor: (user) => token(user),
    async expiredToken(user) {
      const expiring = await token(user, 1);
      await new Promise((resolve) => setTimeout(resolve, 2100));
      return expiring;
    },
    async forgedToken(user) {
      // Right issuer, audience, key id, subject and claims; signed with a key tenantry never had.
      const { privateKey } = await generateKeyPair("ES256");
      const genuine = await shared().readUser(user.username);
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ preferred_username: user.username, groups: user.groups, tenant: user.tenant })
        .setProtectedHeader({ alg: "ES256", kid: shared().jwks().keys.at(-1)!.kid! })
        .setIssuer(shared().issuer)
        .setAudience(TOKEN_AUDIENCE)
        .setSubject(genuine!.metadata!.uid!)
        .setJti("forged")
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(privateKey);
    },
  };
}
