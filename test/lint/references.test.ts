/**
 * Sources are cited by the short names of docs/REFERENCES.md, never by the file numbers of the
 * documents they were first read from, which mean nothing to a reader of the code.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";

const root = join(import.meta.dirname, "..", "..");
const NUMBERED = /\b[Dd]ocument 00\d\b/;
const SHORT_NAMES = [
  "Vasilenko & Kurapati",
  "CloudVeneto CaaS",
  "ICN logical cloud",
  "Arktos overview",
  "Liqo thesis",
];

function textFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|tsx|mjs|md|yaml|json)$/.test(e.name))
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

describe("citations of the source documents", () => {
  it("use short names, not document numbers", () => {
    const files = [
      ...["src", "test", "bench", "docs", "examples", "deploy", "scripts"].flatMap(textFiles),
      "README.md",
    ];
    const numbered = files.filter((f) => NUMBERED.test(readFileSync(join(root, f), "utf8")));
    assert.deepEqual(numbered, [], "cite the sources by their short names in docs/REFERENCES.md");
  });

  it("have every short name listed in docs/REFERENCES.md", () => {
    const references = readFileSync(join(root, "docs", "REFERENCES.md"), "utf8");
    for (const name of SHORT_NAMES) assert.match(references, new RegExp(`^\\| ${name} \\|`, "m"), name);
  });
});
