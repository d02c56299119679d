import assert from "node:assert/strict";
import { test } from "node:test";
import { responseHeaders } from "./proxy.js";

test("the API server's hop-by-hop headers, and those its Connection header names, stay on its hop", () => {
  const out = responseHeaders([
    "Content-Type",
    "application/json",
    "Connection",
    "keep-alive, X-Hop",
    "X-Hop",
    "secret of this connection",
    "Transfer-Encoding",
    "chunked",
    "Audit-Id",
    "1",
    "Audit-Id",
    "2",
  ]);
  assert.deepEqual(out, { "content-type": "application/json", "audit-id": ["1", "2"] });
});

test("a rewritten body drops its length and encoding", () => {
  const out = responseHeaders(
    ["Content-Length", "10", "Content-Encoding", "gzip", "Content-Type", "x"],
    true,
  );
  assert.deepEqual(out, { "content-type": "x" });
});
