/**
 * Resources read through tenantry's shared cache are watched once per cluster: the run's tenantry
 * process reports its running informers by resource (`tenantry_informer_watches`). A second watch
 * is a second cache that can disagree with the first (a runtime ready for one component and
 * unknown to another). The run's process also holds the harness's process nodes (their kubelet and
 * volume provisioner watch too), and not every capability reads through the cache yet: what else
 * is watched more than once is reported, not refused.
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
  it("the runtimes' and backups' resources are watched once, whoever reads them", async (t) => {
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
    for (const w of watches.filter((w) => w.count > 1))
      t.diagnostic(`watched more than once: ${w.cluster}: ${w.resource} ×${w.count}`);
  });
});
