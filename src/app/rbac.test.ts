import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import { ALL_CRDS } from "./crds.js";
import { CLUSTER_RULES, flatten, NAMESPACE_RULES, RBAC_MANIFEST_DIR, rbacManifests } from "./rbac.js";

const repositoryRoot = join(import.meta.dirname, "..", "..");

describe("tenantry's RBAC rules", () => {
  it(`${RBAC_MANIFEST_DIR} holds exactly what scripts/generate-crds.ts generates from src/app/rbac.ts`, async () => {
    for (const { file, content } of rbacManifests()) {
      const onDisk = await readFile(join(repositoryRoot, RBAC_MANIFEST_DIR, file), "utf8");
      assert.equal(onDisk, content, `${file} is out of date: run \`npx tsx scripts/generate-crds.ts\``);
    }
    const [cluster, namespace] = rbacManifests();
    assert.deepEqual(parse(cluster!.content), flatten(CLUSTER_RULES));
    assert.deepEqual(parse(namespace!.content), flatten(NAMESPACE_RULES));
  });

  it("grants no wildcard: every verb, resource and group is named", () => {
    for (const rule of [...flatten(CLUSTER_RULES), ...flatten(NAMESPACE_RULES)]) {
      for (const field of ["apiGroups", "resources", "verbs"] as const) {
        assert.ok(!rule[field].includes("*"), `${JSON.stringify(rule)}: ${field} has "*"`);
        assert.ok(rule[field].length > 0, `${JSON.stringify(rule)}: ${field} is empty`);
      }
    }
  });

  it("lets tenantry read, write and watch every kind it installs, with its status", () => {
    const rules = flatten(CLUSTER_RULES);
    for (const crd of ALL_CRDS) {
      for (const resource of [crd.spec.names.plural, `${crd.spec.names.plural}/status`]) {
        const rule = rules.find(
          (r) => r.apiGroups.includes(crd.spec.group) && r.resources.includes(resource),
        );
        for (const verb of ["get", "list", "watch", "create", "update", "patch", "delete"])
          assert.ok(rule?.verbs.includes(verb), `${crd.spec.group} ${resource}: no rule grants ${verb}`);
      }
    }
  });
});
