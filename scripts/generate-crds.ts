/**
 * Writes deploy/crds/*.yaml from the TypeBox schemas (src/<capability>/api), which the chart's
 * crds/ links to, and the chart's RBAC rules (deploy/helm/tenantry/rbac/) from src/app/rbac.ts.
 * Unit tests fail when the committed files differ from what this produces, so run it after every
 * schema or rule change:
 *   npx tsx scripts/generate-crds.ts
 */
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CRD_MANIFEST_DIR, crdManifests } from "../src/app/crds.js";
import { RBAC_MANIFEST_DIR, rbacManifests } from "../src/app/rbac.js";

const dir = join(import.meta.dirname, "..", CRD_MANIFEST_DIR);
await mkdir(dir, { recursive: true });
const manifests = crdManifests();
const wanted = new Set(manifests.map((m) => m.file));
// A CRD that no longer exists leaves its generated file behind; files written by hand stay.
for (const file of (await readdir(dir)).filter((f) => f.endsWith(".yaml") && !wanted.has(f))) {
  if ((await readFile(join(dir, file), "utf8")).startsWith("# Generated from")) {
    await rm(join(dir, file));
    process.stdout.write(`removed ${join(CRD_MANIFEST_DIR, file)}\n`);
  }
}
for (const { file, content } of manifests) {
  await writeFile(join(dir, file), content);
  process.stdout.write(`wrote ${join(CRD_MANIFEST_DIR, file)}\n`);
}

const rbacDir = join(import.meta.dirname, "..", RBAC_MANIFEST_DIR);
await mkdir(rbacDir, { recursive: true });
for (const { file, content } of rbacManifests()) {
  await writeFile(join(rbacDir, file), content);
  process.stdout.write(`wrote ${join(RBAC_MANIFEST_DIR, file)}\n`);
}
