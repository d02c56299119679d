import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { benchmarkReplication } from "../../src/multicluster/index.js";
import { adminClient } from "./support.js";

/** `TENANTRY_BENCH_REPLICATION=10,30,100 npm test -- <this file>` for the chapter 8.2.1 series. */
const SIZES = (process.env.TENANTRY_BENCH_REPLICATION ?? "10").split(",").map(Number);

describe("deployment replication time (document 004, 8.2.1)", () => {
  test(`all replica Deployments exist and the status lists them, for ${SIZES.join(", ")} virtual nodes`, async () => {
    const client = adminClient("home");
    const rows: string[] = [];
    // Warm-up, not recorded: discovery caches, connections, the first watch events.
    await benchmarkReplication({ client, virtualNodes: 2 });
    for (const virtualNodes of SIZES) {
      const result = await benchmarkReplication({ client, virtualNodes });
      assert.ok(result.deploymentsMs > 0 && result.statusMs > 0);
      rows.push(
        `${String(virtualNodes).padStart(13)} | ${result.deploymentsMs.toFixed(0).padStart(14)} | ${result.statusMs.toFixed(0).padStart(9)}`,
      );
    }
    process.stderr.write(`virtual nodes | deployments ms | status ms\n${rows.join("\n")}\n`);
  });
});
