import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { MAX_SEALED_LENGTH, newSessionKey, open, seal } from "./sealed.js";

describe("sealed values", () => {
  const key = newSessionKey();

  test("open what was sealed under the same key for the same purpose, before it expires", () => {
    const sealed = seal(key, "session", { tok: "t", exp: Date.now() + 60_000 });
    const opened = open<{ tok: string; exp: number }>(key, "session", sealed);
    assert.ok(opened.ok);
    assert.equal(opened.value.tok, "t");
  });

  test("another key, another purpose, a changed byte, an expired or an oversized value are refused", () => {
    const sealed = seal(key, "session", { tok: "t", exp: Date.now() + 60_000 });
    assert.deepEqual(open(newSessionKey(), "session", sealed), {
      ok: false,
      reason: "forged, changed, or sealed under another key",
    });
    assert.equal(open(key, "code", sealed).ok, false, "a session is no login code");
    const parts = sealed.split(".");
    const body = Buffer.from(parts[2]!, "base64url");
    body[0]! ^= 1;
    parts[2] = body.toString("base64url");
    assert.equal(open(key, "session", parts.join(".")).ok, false);
    const expired = seal(key, "session", { tok: "t", exp: Date.now() - 1 });
    assert.deepEqual(open(key, "session", expired), { ok: false, reason: "expired" });
    assert.equal(open(key, "session", "x".repeat(MAX_SEALED_LENGTH + 1)).ok, false);
    for (const junk of ["", "v1", "v1.a.b.c", "v2.a.b.c", "not a cookie"]) {
      assert.equal(open(key, "session", junk).ok, false, junk);
    }
  });
});
