import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Runtime } from "../../runtimes/index.js";
import { agentJobName, backupLocation, metadataKey, volumeKey } from "./layout.js";

describe("backup layout in the store", () => {
  const runtime = {
    spec: { tenant: "acme", user: "keystone:Alice@example.com", service: "jupyter", instance: "lab" },
  } as Runtime;

  test("one prefix per tenant, user, service, instance and backup; the user as a DNS-safe slug", () => {
    const location = backupLocation(runtime, "lab-1");
    assert.match(location, /^acme\/u-keystone-alice-example-com-[0-9a-f]{8}\/jupyter\/lab\/lab-1$/);
    assert.equal(metadataKey(location), `${location}/metadata.json.enc`);
    assert.equal(volumeKey(location, "lab-home"), `${location}/volumes/lab-home.tar.enc`);
  });

  test("job names fit a label even for long backup names", () => {
    assert.ok(agentJobName("x".repeat(80), 3).length <= 63);
  });
});
