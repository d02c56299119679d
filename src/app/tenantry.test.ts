import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import { Manager } from "../kube/index.js";
import { capabilities, startTenantry } from "./tenantry.js";

const logger = pino({ level: "silent" });
const options = { cluster: "home", kubeconfig: "/nonexistent", logger, webhookClientCa: false as const };

describe("the composition root", () => {
  it("lists capabilities the manager accepts, leader controllers in their old order", () => {
    const listed = capabilities(options);
    assert.doesNotThrow(() => new Manager(listed));
    assert.deepEqual(
      listed.map((c) => c.name),
      [
        "webhook certificate",
        "tenants",
        "clusters",
        "multicluster",
        "runtimes",
        "monitor",
        "backup",
        "storage",
        "clouds",
        "nodes",
        "access",
        "webhooks",
        "identity",
        "gateway",
        "dashboard",
        "webhook certificate keeper",
      ],
    );
  });

  it("refuses wrong options before touching the cluster", async () => {
    await assert.rejects(
      startTenantry({ ...options, webhookClientCa: undefined }),
      /webhookClientCa: the CA of kube-apiserver's webhook client certificate is required/,
    );
    await assert.rejects(startTenantry({ ...options, storage: { advisor: { smoothing: 2 } } }), /smoothing/);
  });
});
