import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Counter, Registry } from "prom-client";
import { UserError } from "../common/index.js";
import { parseAddress, startHealthServer } from "./health.js";

describe("health server", () => {
  test("/readyz follows readiness, /healthz always answers, /metrics serves the registry", async () => {
    const registry = new Registry();
    new Counter({ name: "tenantry_test_total", help: "a test counter", registers: [registry] }).inc(3);
    let ready = false;
    const server = await startHealthServer({ host: "127.0.0.1", port: 0, registry, ready: () => ready });
    try {
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
      const notReady = await fetch(`${server.url}/readyz`);
      assert.equal(notReady.status, 503);
      assert.match(await notReady.text(), /informers not synced/);
      ready = true;
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
      const metrics = await fetch(`${server.url}/metrics`);
      assert.match(await metrics.text(), /^tenantry_test_total 3$/m);
    } finally {
      await server.stop();
    }
  });

  test("addresses: host:port, [v6]:port, :port; anything else names the option", () => {
    assert.deepEqual(parseAddress("--health-address", "0.0.0.0:8081"), { host: "0.0.0.0", port: 8081 });
    assert.deepEqual(parseAddress("--health-address", "[::]:9090"), { host: "::", port: 9090 });
    assert.deepEqual(parseAddress("--health-address", ":8081"), { host: "0.0.0.0", port: 8081 });
    for (const bad of ["8081", "host:99999", "host:port"]) {
      assert.throws(
        () => parseAddress("--health-address", bad),
        (err: unknown) => err instanceof UserError && err.message.startsWith("--health-address:"),
      );
    }
  });
});
