import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { safeNext } from "./login.js";

describe("login's next", () => {
  const token = "a".repeat(43);
  test("a path into a runtime is kept, with its query", () => {
    assert.deepEqual(safeNext(`/r/${token}/lab?x=1`), { path: `/r/${token}/lab?x=1`, token });
  });
  test("anything else is refused: other sites, other paths, malformed tokens", () => {
    for (const next of [
      undefined,
      "",
      "https://evil.example/",
      "//evil.example/r/x",
      "/services/alice",
      "/r/short/",
      `/r/${token}\\@evil`,
      `/r/${token}/ x`,
      `/r/${token}/${"x".repeat(5000)}`,
    ]) {
      assert.equal(safeNext(next), undefined, String(next));
    }
  });
});
