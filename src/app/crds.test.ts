import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { ALL_CRDS, CRD_MANIFEST_DIR, CRD_MANIFEST_HEADER, crdManifests } from "./crds.js";

const repositoryRoot = join(import.meta.dirname, "..", "..");

describe(`${CRD_MANIFEST_DIR}`, () => {
  it("holds exactly what scripts/generate-crds.ts generates (run it after changing a schema)", async () => {
    const dir = join(repositoryRoot, CRD_MANIFEST_DIR);
    const generated = crdManifests();
    const committed: { file: string; content: string }[] = [];
    for (const file of (await readdir(dir)).filter((f) => f.endsWith(".yaml")).sort()) {
      const content = await readFile(join(dir, file), "utf8");
      if (content.startsWith("# Generated from")) committed.push({ file, content });
    }
    assert.deepEqual(
      committed.map((m) => m.file),
      generated.map((m) => m.file).sort(),
      "deploy/crds is out of date: run `npx tsx scripts/generate-crds.ts`",
    );
    for (const { file, content } of generated) {
      const onDisk = committed.find((m) => m.file === file)?.content;
      assert.equal(onDisk, content, `${file} is out of date: run \`npx tsx scripts/generate-crds.ts\``);
    }
  });

  it("parses back to the same CRD objects", () => {
    for (const [i, { content }] of crdManifests().entries()) {
      assert.deepEqual(parse(content), ALL_CRDS[i]);
      assert.ok(content.startsWith(CRD_MANIFEST_HEADER));
    }
  });

  it("names every CRD once", () => {
    const names = ALL_CRDS.map((crd) => crd.metadata.name);
    assert.equal(new Set(names).size, names.length);
  });
});
