import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { describe, test } from "node:test";
import { backupKey, decryptor, encryptor, HashingStream, newTenantKey } from "./crypto.js";

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("backup encryption", () => {
  const plain = randomBytes(100_000);

  test("what is encrypted decrypts to the same bytes, and the ciphertext is not the plaintext", async () => {
    const key = newTenantKey();
    const enc = encryptor(key);
    const cipher = await collect(Readable.from([plain]).pipe(enc.stream));
    assert.equal(cipher.length, plain.length);
    assert.ok(!cipher.equals(plain));
    const back = await collect(Readable.from([cipher]).pipe(decryptor(key, enc.sealed())));
    assert.ok(back.equals(plain));
  });

  test("a changed byte, another tenant's key or another tag fails the decryption", async () => {
    const key = newTenantKey();
    const enc = encryptor(key);
    const cipher = await collect(Readable.from([plain]).pipe(enc.stream));
    const sealed = enc.sealed();
    const flipped = Buffer.from(cipher);
    flipped[500] = flipped[500]! ^ 1;
    const sink = new HashingStream();
    await assert.rejects(pipeline(Readable.from([flipped]), decryptor(key, sealed), sink), /authenticate/);
    await assert.rejects(
      pipeline(Readable.from([cipher]), decryptor(newTenantKey(), sealed), new HashingStream()),
      /authenticate/,
    );
    const otherTag = { ...sealed, tag: Buffer.alloc(16).toString("base64") };
    await assert.rejects(
      pipeline(Readable.from([cipher]), decryptor(key, otherTag), new HashingStream()),
      /authenticate/,
    );
  });

  test("a key of the wrong length is refused, naming the length", () => {
    assert.throws(() => encryptor(Buffer.alloc(16)), /must be 32 bytes, it is 16/);
  });

  test("the hashing stream counts and hashes what passes", async () => {
    const hashing = new HashingStream();
    await collect(Readable.from([Buffer.from("ab"), Buffer.from("c")]).pipe(hashing));
    assert.equal(hashing.bytes, 3);
    assert.equal(hashing.digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });

  test("each backup has its own key, derived from the tenant's: the same location gives the same key", async () => {
    const tenant = newTenantKey();
    const one = backupKey(tenant, "acme/bob/echo/one/first");
    assert.equal(one.length, 32);
    assert.ok(one.equals(backupKey(tenant, "acme/bob/echo/one/first")));
    assert.ok(!one.equals(backupKey(tenant, "acme/bob/echo/one/second")));
    assert.ok(!one.equals(backupKey(newTenantKey(), "acme/bob/echo/one/first")));
    assert.ok(!one.equals(tenant));
    const enc = encryptor(one);
    const cipher = await collect(Readable.from([plain]).pipe(enc.stream));
    await assert.rejects(
      collect(
        Readable.from([cipher]).pipe(decryptor(backupKey(tenant, "acme/bob/echo/one/second"), enc.sealed())),
      ),
      /authenticate/,
    );
  });
});
