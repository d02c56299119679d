/**
 * tenantry watches each resource once per cluster, whoever reads it: the run's tenantry process
 * reports its running informers by cluster and resource (`tenantry_informer_watches`). A second
 * watch is a second cache that can disagree with the first (a runtime ready for one component and
 * unknown to another) and a second copy in memory. The process also runs each edge cluster's own
 * tenantry, which watches its cluster as the home tenantry may (runtimes placed there, say): the
 * home cluster, watched by the home tenantry alone, is where a duplicate is one tenantry's.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { testEnvironment } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";

interface Watch {
  cluster: string;
  resource: string;
  count: number;
}

function parseWatches(text: string): Watch[] {
  const watches: Watch[] = [];
  for (const line of text.split("\n")) {
    const match = /^tenantry_informer_watches\{cluster="([^"]*)",resource="([^"]*)"\} (\d+)/.exec(line);
    if (match) watches.push({ cluster: match[1]!, resource: match[2]!, count: Number(match[3]) });
  }
  return watches;
}

const SHARED = ["Runtime", "RuntimeService", "RuntimeBackup", "RuntimeRestore", "BackupPolicy"].map(
  (kind) => `${TENANTS_API_VERSION}/${kind}`,
);

describe("watches of the run's tenantry", () => {
  it("no resource of the home cluster is watched twice; the runtimes' and backups' are watched", async () => {
    const env = testEnvironment();
    const home = env.tenantries?.find((t) => t.cluster === env.tenantry.cluster);
    assert.ok(home?.metricsUrl, "the run's home tenantry serves its metrics");
    const watches = await eventually(async () => {
      const response = await fetch(home.metricsUrl!);
      assert.equal(response.status, 200);
      const found = parseWatches(await response.text());
      // The leader's controllers (the backups' among them) have started.
      assert.ok(
        found.some((w) => w.resource.endsWith("/RuntimeRestore")),
        "the backup controllers are running",
      );
      return found;
    });
    const onHome = (resource: string) =>
      watches.find((w) => w.cluster === env.tenantry.cluster && w.resource === resource)?.count ?? 0;
    for (const resource of [...SHARED, "batch/v1/Job with labels tenantry.dev/backup-agent=true"])
      assert.equal(onHome(resource), 1, `${resource} is watched once`);
    const twice = watches
      .filter((w) => w.cluster === env.tenantry.cluster && w.count > 1)
      .map((w) => `${w.resource} ×${w.count}`);
    assert.deepEqual(twice, [], "resources watched more than once");
  });
});
