import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { headerSettings, injectHeadersModule } from "./inject-headers.js";

describe("inject-headers settings", () => {
  test("every key is a header to set", () => {
    assert.deepEqual(headerSettings({ Authorization: "token abc", "X-Team": "a" }), [
      ["Authorization", "token abc"],
      ["X-Team", "a"],
    ]);
  });

  test("bad names, bad values and connection headers are refused naming the key", () => {
    assert.throws(() => headerSettings({ "Bad Name": "x" }), /setting Bad Name: .* not an HTTP header name/);
    assert.throws(() => headerSettings({ "X-A": "a\nb" }), /setting X-A: the value holds/);
    assert.throws(
      () => headerSettings({ Connection: "close" }),
      /setting Connection: .* describes the connection/,
    );
    assert.throws(() => headerSettings({ "Content-Length": "1" }), /setting Content-Length/);
  });

  test("a refused Secret leaves the module's headers as they were", async () => {
    const module = injectHeadersModule();
    await module.init({ "X-A": "1" });
    assert.throws(() => module.init({ "X-A": "2", Host: "x" }));
    const set: [string, string][] = [];
    await module.http!(
      {} as never,
      {} as never,
      {
        setHeader: (n: string, v: string) => set.push([n, v]),
      } as never,
    );
    assert.deepEqual(set, [["X-A", "1"]]);
  });
});
