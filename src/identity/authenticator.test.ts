import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Authenticator, UNRECOGNIZED_TOKEN_REASON } from "./authenticator.js";
import type { Authentication, IdentityProvider } from "./providers/provider.js";

/** Accepts `good-<n>` tokens (valid until `expiresAt`, if set) and counts how often it was asked. */
class CountingProvider implements IdentityProvider {
  readonly name = "counting";
  asked = 0;
  constructor(private readonly expiresAt?: () => Date) {}
  recognizes(token: string): boolean {
    return token.startsWith("good-") || token.startsWith("bad-");
  }
  async authenticate(token: string): Promise<Authentication> {
    this.asked++;
    if (!token.startsWith("good-")) return { authenticated: false, reason: "not good" };
    return {
      authenticated: true,
      identity: {
        username: token,
        uid: token,
        groups: [],
        tenantAdmin: false,
        provider: this.name,
        ...(this.expiresAt ? { expiresAt: this.expiresAt() } : {}),
      },
    };
  }
}

describe("Authenticator's cache of answers", () => {
  test("an answer is reused within its time to live, asked again after it", async () => {
    let now = 1_000_000;
    const provider = new CountingProvider();
    const authenticator = new Authenticator({ providers: [provider], cacheTtlMs: 10_000, now: () => now });
    assert.equal((await authenticator.authenticate("good-1")).authenticated, true);
    now += 9_000;
    await authenticator.authenticate("good-1");
    assert.equal(provider.asked, 1);
    now += 2_000;
    await authenticator.authenticate("good-1");
    assert.equal(provider.asked, 2);
  });

  test("an answer is never reused past its token's expiry, and refusals are never cached", async () => {
    let now = 1_000_000;
    const provider = new CountingProvider(() => new Date(now + 3_000));
    const authenticator = new Authenticator({ providers: [provider], cacheTtlMs: 10_000, now: () => now });
    await authenticator.authenticate("good-1");
    now += 2_000;
    await authenticator.authenticate("good-1");
    assert.equal(provider.asked, 1);
    now += 2_000;
    await authenticator.authenticate("good-1");
    assert.equal(provider.asked, 2);
    await authenticator.authenticate("bad-1");
    await authenticator.authenticate("bad-1");
    assert.equal(provider.asked, 4);
  });

  test("at most cacheSize answers are kept, the least recently used dropped first; forget() drops all", async () => {
    const provider = new CountingProvider();
    const authenticator = new Authenticator({ providers: [provider], cacheSize: 2 });
    await authenticator.authenticate("good-1");
    await authenticator.authenticate("good-2");
    await authenticator.authenticate("good-1");
    await authenticator.authenticate("good-3");
    assert.equal(provider.asked, 3);
    await authenticator.authenticate("good-1");
    assert.equal(provider.asked, 3);
    await authenticator.authenticate("good-2");
    assert.equal(provider.asked, 4);
    authenticator.forget();
    await authenticator.authenticate("good-1");
    assert.equal(provider.asked, 5);
  });

  test("a token of no provider is refused with the reason kube-apiserver shows", async () => {
    const authenticator = new Authenticator({ providers: [new CountingProvider()] });
    assert.deepEqual(await authenticator.authenticate("x"), {
      authenticated: false,
      reason: UNRECOGNIZED_TOKEN_REASON,
    });
  });
});
