/**
 * Every REST API and webhook endpoint of tenantry, fuzzed from its OpenAPI document with
 * schemathesis (valid and invalid requests, a bounded number per operation): no request may get a
 * server error, whatever is wrong with it, and tenantry must still answer afterwards. The APIs are
 * listed in targets.ts. The seed is printed; TENANTRY_FUZZ_SEED replays a run.
 */
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ensureSchemathesis, type SchemathesisInstall } from "../../scripts/schemathesis.js";
import { testEnvironment } from "../support/clusters.js";
import { stopSharedBuiltinIdentity } from "../support/identity.js";
import { runCommand } from "../support/kubectl.js";
import { FUZZ_TARGETS } from "./targets.js";

const SEED = process.env.TENANTRY_FUZZ_SEED ? Number(process.env.TENANTRY_FUZZ_SEED) : randomInt(2 ** 31);
/** Test cases per operation and phase: enough to find the easy crashes, bounded for `npm test`. */
const MAX_EXAMPLES = 15;

function healthy(url: string, caPem: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(`${url}/healthz`, { ca: caPem, timeout: 10_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", () => resolve(0));
    req.end();
  });
}

describe(`fuzzing every API from its OpenAPI document (schemathesis, seed ${SEED})`, () => {
  const env = testEnvironment();
  let schemathesis: SchemathesisInstall;
  let dir: string;

  before(async () => {
    process.stdout.write(`fuzz seed ${SEED} (replay with TENANTRY_FUZZ_SEED=${SEED})\n`);
    schemathesis = await ensureSchemathesis();
    dir = await mkdtemp(join(tmpdir(), "tenantry-fuzz-"));
  });

  after(() => stopSharedBuiltinIdentity());

  for (const [index, target] of FUZZ_TARGETS.entries()) {
    it(`${target.name}: no server error`, async (t) => {
      const openapi = target.openapi(env);
      if (!openapi) return t.skip("not served in this run");
      const access = await target.access(env);
      const args = [
        "--no-color",
        "run",
        openapi,
        "--checks",
        "not_a_server_error",
        "--max-examples",
        String(MAX_EXAMPLES),
        // Generated from the schema (boundaries, then at random); the operations are not linked, so
        // no stateful phase.
        "--phases",
        "coverage,fuzzing",
        "--seed",
        String(SEED),
        // One worker: Python 3.11's parser is not safe for Hypothesis's threads ("AST constructor
        // recursion depth mismatch"), which schemathesis reports as a runtime error.
        "--workers",
        "1",
        "--request-timeout",
        "30",
        // Nothing written beside the project: no example database, no reports.
        "--generation-database",
        "none",
      ];
      for (const [name, value] of Object.entries(access.headers ?? {}))
        args.push("--header", `${name}: ${value}`);
      if (access.caPem) {
        const ca = join(dir, `ca-${index}.pem`);
        await writeFile(ca, access.caPem);
        args.push("--tls-verify", ca);
      }
      if (access.clientCert)
        args.push(
          "--request-cert",
          access.clientCert.certFile,
          "--request-cert-key",
          access.clientCert.keyFile,
        );
      // In a folder of its own: schemathesis keeps caches in the folder it runs in.
      const run = await runCommand(schemathesis.program, args, undefined, dir);
      const output = `${run.stdout}\n${run.stderr}`;
      const summary = output.trim().split("\n").slice(-12).join("\n");
      t.diagnostic(summary);
      assert.equal(
        run.code,
        0,
        `schemathesis found problems in ${target.name} (seed ${SEED}):\n${output.slice(-8000)}`,
      );
    });
  }

  it("tenantry is still up and answering", async () => {
    assert.equal(await healthy(env.tenantry.accessUrl, env.tenantry.accessCaPem), 200);
  });
});
