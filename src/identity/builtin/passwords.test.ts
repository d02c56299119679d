import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hashPassword, passwordMatches, verifyPassword } from "./passwords.js";

describe("password hashing", () => {
  it("verifies the right password and refuses a wrong one", async () => {
    const encoded = await hashPassword("correct horse battery");
    assert.match(encoded, /^scrypt\$32768\$8\$1\$[\w-]+\$[\w-]+$/);
    assert.equal(await verifyPassword("correct horse battery", encoded), true);
    assert.equal(await verifyPassword("correct horse batterY", encoded), false);
    assert.equal(await verifyPassword("", encoded), false);
  });

  it("salts every hash", async () => {
    assert.notEqual(await hashPassword("same password"), await hashPassword("same password"));
  });

  it("refuses passwords that are too short or too long, naming the limit", async () => {
    await assert.rejects(hashPassword("short"), /password must be 8 to 1024 characters long, got 5/);
    await assert.rejects(hashPassword("x".repeat(1025)), /got 1025/);
  });

  it("treats a malformed stored hash as a mismatch", async () => {
    assert.equal(await verifyPassword("whatever1", "plain-text"), false);
    assert.equal(await verifyPassword("whatever1", "scrypt$1$2$3"), false);
  });

  it("an unknown user costs one key derivation of the same cost as a wrong password, and never matches", async () => {
    const stored = await hashPassword("correct horse battery");
    const decoy = await hashPassword("a random decoy password");
    const cost = (encoded: string) => encoded.split("$").slice(0, 4).join("$");
    assert.equal(cost(decoy), cost(stored), "the decoy is as costly as a real hash");
    const derived: string[] = [];
    const counting = async (password: string, encoded: string) => {
      derived.push(encoded);
      return verifyPassword(password, encoded);
    };
    assert.equal(
      await passwordMatches("correct horse battery", undefined, async () => decoy, counting),
      false,
    );
    assert.deepEqual(derived, [decoy], "the unknown user's check ran against the decoy");
    assert.equal(await passwordMatches("wrong horse battery", stored, async () => decoy, counting), false);
    assert.equal(await passwordMatches("correct horse battery", stored, async () => decoy, counting), true);
    assert.deepEqual(derived, [decoy, stored, stored], "one derivation per login, whoever asks");
  });
});
