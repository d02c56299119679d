/**
 * The one conformance suite every IdentityProvider runs: the built-in provider, Keystone and OIDC
 * each call `identityProviderConformance` from their own test file with a fixture backed by the
 * real thing (the cluster, a real Keystone, a real OIDC issuer).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { IdentityProvider } from "../../src/identity/index.js";

export interface ConformanceUser {
  username: string;
  password: string;
  /** Keystone domain, when the provider has domains. */
  domain?: string;
  /** The Tenant name the provider must report for this user. */
  tenant: string;
  /** Groups the provider must report (at least these). */
  groups: string[];
  tenantAdmin: boolean;
}

export interface ProviderFixture {
  provider: IdentityProvider;
  /** Two users: a tenant admin and a plain member (of the same tenant or not). */
  admin: ConformanceUser;
  member: ConformanceUser;
  /** A fresh valid token for the user (password login, or the issuer handing one out). */
  tokenFor(user: ConformanceUser): Promise<string>;
  /** A token for the user that was valid and has expired (the fixture may wait for it to). */
  expiredToken(user: ConformanceUser): Promise<string>;
  /** A token of the right shape that the provider never issued (wrong key, tampered). */
  forgedToken(user: ConformanceUser): Promise<string>;
  /** Makes the token invalid; absent when the provider has no revocation (then the test is skipped). */
  revoke?(token: string): Promise<void>;
  /** Whether `provider.login` exists and takes passwords. */
  passwordLogin: boolean;
  /** What the provider puts before user names (`keystone:`, `oidc:`), so that they name nobody else. */
  usernamePrefix?: string;
  /** What the provider puts before the group names the fixture's users were given. */
  groupPrefix?: string;
  setUp?(): Promise<void>;
  tearDown?(): Promise<void>;
}

export function identityProviderConformance(name: string, fixture: () => ProviderFixture): void {
  describe(`${name} identity provider conformance`, () => {
    let f: ProviderFixture;
    before(async () => {
      f = fixture();
      await f.setUp?.();
    });
    after(async () => {
      await f.tearDown?.();
    });

    it("authenticates a valid token with username, uid, groups and tenant", async () => {
      for (const user of [f.admin, f.member]) {
        const token = await f.tokenFor(user);
        assert.ok(f.provider.recognizes(token), "the provider recognizes its own token");
        const result = await f.provider.authenticate(token);
        assert.ok(result.authenticated, `refused: ${!result.authenticated && result.reason}`);
        const { identity } = result;
        assert.equal(identity.username, `${f.usernamePrefix ?? ""}${user.username}`);
        assert.ok(identity.uid.length > 0, "uid is set");
        assert.equal(identity.tenant, user.tenant);
        assert.equal(identity.tenantAdmin, user.tenantAdmin);
        assert.equal(identity.provider, f.provider.name);
        for (const group of user.groups.map((g) => `${f.groupPrefix ?? ""}${g}`))
          assert.ok(identity.groups.includes(group), `groups include ${group}`);
        assert.ok(identity.expiresAt && identity.expiresAt.getTime() > Date.now(), "expiry is in the future");
      }
    });

    it("gives two users two different uids", async () => {
      const a = await f.provider.authenticate(await f.tokenFor(f.admin));
      const b = await f.provider.authenticate(await f.tokenFor(f.member));
      assert.ok(a.authenticated && b.authenticated);
      assert.notEqual(a.identity.uid, b.identity.uid);
    });

    it("refuses an expired token and says so", async () => {
      const result = await f.provider.authenticate(await f.expiredToken(f.member));
      assert.equal(result.authenticated, false);
      assert.match((result as { reason: string }).reason, /expired|not found|invalid/i);
    });

    it("refuses a forged token", async () => {
      const result = await f.provider.authenticate(await f.forgedToken(f.member));
      assert.equal(result.authenticated, false);
      assert.ok((result as { reason: string }).reason.length > 0);
    });

    it("refuses malformed and empty tokens without throwing", async () => {
      for (const token of ["", "not-a-token", "a.b.c", "x".repeat(10_000)]) {
        const result = await f.provider.authenticate(token);
        assert.equal(result.authenticated, false, `accepted ${JSON.stringify(token.slice(0, 20))}`);
      }
    });

    it("refuses a revoked token", async (t) => {
      if (!f.revoke) {
        t.skip("the provider has no revocation");
        return;
      }
      const token = await f.tokenFor(f.member);
      assert.ok((await f.provider.authenticate(token)).authenticated);
      await f.revoke(token);
      const result = await f.provider.authenticate(token);
      assert.equal(result.authenticated, false);
      assert.match((result as { reason: string }).reason, /revoked|not found|invalid/i);
    });

    it("logs in with a password and refuses a wrong one", async (t) => {
      if (!f.passwordLogin || !f.provider.login) {
        t.skip("the provider takes no passwords");
        return;
      }
      const issued = await f.provider.login({
        username: f.member.username,
        password: f.member.password,
        ...(f.member.domain ? { domain: f.member.domain } : {}),
      });
      assert.equal(issued.identity.username, `${f.usernamePrefix ?? ""}${f.member.username}`);
      assert.ok(issued.expiresAt.getTime() > Date.now());
      assert.ok((await f.provider.authenticate(issued.token)).authenticated);
      await assert.rejects(
        f.provider.login({
          username: f.member.username,
          password: `${f.member.password}-wrong`,
          ...(f.member.domain ? { domain: f.member.domain } : {}),
        }),
        { name: "AuthenticationError" },
      );
      await assert.rejects(f.provider.login({ username: "nobody-at-all", password: "whatever" }), {
        name: "AuthenticationError",
      });
    });
  });
}
