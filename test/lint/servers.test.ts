/**
 * Every HTTP server of the product runs in the shell of src/common/http-server.ts, so that each
 * has request ids, drain, problem answers and certificate reload alike. The local clusters'
 * harness (src/localcluster) stands in for kubelets and stores and is not the product's.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";

const root = join(import.meta.dirname, "..", "..");
const SHELL = "src/common/http-server.ts";

function productSources(): string[] {
  return readdirSync(join(root, "src"), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts"))
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .filter((f) => f !== SHELL && !f.startsWith("src/localcluster/"));
}

describe("HTTP servers", () => {
  it("are built only by the server shell", () => {
    const own = productSources().filter((f) => {
      const text = readFileSync(join(root, f), "utf8");
      return (
        /\bFastify\(/.test(text) ||
        /\bcreate(?:Secure)?Server\b[^;]*from "node:(?:http|https|http2)"/.test(text)
      );
    });
    assert.deepEqual(own, [], `build servers with HttpServer (${SHELL})`);
  });
});
