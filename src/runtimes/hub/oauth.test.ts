import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import { oauthClientId, pkceChallenge, serverAccessScopes, serverTokenScopes } from "./oauth.js";
import { allows, expandScopes, roleScopes, tokenScopes } from "./scopes.js";

describe("JupyterHub's OAuth for single-user servers", () => {
  test("client ids are JupyterHub's: jupyterhub-user-<name>, and -<server> for a named server", () => {
    assert.equal(oauthClientId("alice", ""), "jupyterhub-user-alice");
    assert.equal(oauthClientId("alice", "lab"), "jupyterhub-user-alice-lab");
    assert.equal(oauthClientId("a b", "x/y"), "jupyterhub-user-a%20b-x%2Fy");
  });

  test("PKCE S256 is base64url(sha256(verifier)) without padding (RFC 7636 appendix B)", () => {
    assert.equal(
      pkceChallenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
      "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    );
    assert.doesNotMatch(pkceChallenge("x"), /=/);
    assert.equal(pkceChallenge("x").length, createHash("sha256").digest("base64url").length);
  });

  test("a server's token reaches its server and reports activity, nothing else of its owner's", () => {
    const owner = roleScopes("alice", false);
    const scopes = tokenScopes(serverTokenScopes("alice", "lab"), owner, "alice");
    assert.ok(allows(scopes, "access:servers", { user: "alice", server: "lab" }));
    assert.ok(allows(scopes, "users:activity", { user: "alice" }));
    assert.ok(!allows(scopes, "access:servers", { user: "alice", server: "other" }));
    assert.ok(!allows(scopes, "servers", { user: "alice", server: "lab" }));
    assert.ok(!allows(scopes, "read:users", { user: "alice" }));
    assert.ok(!allows(scopes, "tokens", { user: "alice" }));
  });

  test("the access scopes a server checks are held by its owner and not by another user", () => {
    const access = serverAccessScopes("alice", "lab");
    const held = (user: string) => expandScopes(["self"], user);
    assert.ok(access.some((s) => held("alice").has(s)));
    assert.ok(!access.some((s) => held("mallory").has(s)));
  });
});
