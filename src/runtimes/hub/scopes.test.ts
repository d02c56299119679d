import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { allows, expandScopes, roleScopes, scopesBeyond, tokenScopes } from "./scopes.js";

describe("JupyterHub scopes", () => {
  it("expand to what they hold, narrowed as they are", () => {
    const held = expandScopes(["servers!user=alice"], "alice");
    assert.ok(held.has("read:servers!user=alice"));
    assert.ok(held.has("delete:servers!user=alice"));
    assert.ok(held.has("read:users:name!user=alice"));
    assert.ok(!held.has("read:servers"));
  });

  it("give a user their own servers and nobody else's", () => {
    const alice = roleScopes("alice", false);
    assert.ok(allows(alice, "start:servers", { user: "alice", server: "lab" }));
    assert.ok(allows(alice, "read:users:activity", { user: "alice" }));
    assert.ok(allows(alice, "tokens", { user: "alice" }));
    assert.ok(!allows(alice, "start:servers", { user: "bob", server: "lab" }));
    assert.ok(!allows(alice, "list:users"));
  });

  it("give an admin everyone's", () => {
    const admin = roleScopes("ops", true);
    assert.ok(allows(admin, "delete:servers", { user: "bob", server: "lab" }));
    assert.ok(allows(admin, "list:users"));
    assert.ok(allows(admin, "read:users:activity", { user: "carol" }));
  });

  it("keep a token within its owner", () => {
    const alice = roleScopes("alice", false);
    const activity = tokenScopes(["read:users:activity!user=alice", "read:servers"], alice, "alice");
    // read:servers unnarrowed is more than alice holds: only her own.
    assert.ok(!activity.has("read:servers"));
    assert.ok(allows(activity, "read:users:activity", { user: "alice" }));
    assert.ok(!allows(activity, "start:servers", { user: "alice" }));
    assert.deepEqual(scopesBeyond(["read:servers", "servers!user=alice", "no:such"], alice, "alice"), [
      "read:servers",
      "no:such",
    ]);
    assert.deepEqual(tokenScopes(["inherit"], alice, "alice"), alice);
    assert.deepEqual(tokenScopes([], alice, "alice"), alice);
  });

  it("narrow to one server", () => {
    const one = tokenScopes(["servers!server=alice/lab"], roleScopes("alice", false), "alice");
    assert.ok(allows(one, "delete:servers", { user: "alice", server: "lab" }));
    assert.ok(!allows(one, "delete:servers", { user: "alice", server: "other" }));
  });
});
