import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pino } from "pino";
import { Manager } from "../kube/index.js";
import {
  CAPABILITY_NAMES,
  capabilities,
  LEADING_CAPABILITIES,
  selectedCapabilities,
  startTenantry,
} from "./tenantry.js";

const logger = pino({ level: "silent" });
const options = { cluster: "home", kubeconfig: "/nonexistent", logger, webhookClientCa: false as const };

describe("the composition root", () => {
  it("lists capabilities the manager accepts, the webhook certificate first and its keeper last", () => {
    const listed = capabilities(options);
    assert.doesNotThrow(() => new Manager(listed));
    assert.deepEqual(
      listed.map((c) => c.name),
      ["webhook certificate", ...CAPABILITY_NAMES, "webhook certificate keeper"],
    );
    assert.ok(LEADING_CAPABILITIES.every((n) => CAPABILITY_NAMES.includes(n)));
  });

  it("runs the capabilities named with what they depend on; the certificate's keeper waits only for servers started", () => {
    const names = (named: string[]) => selectedCapabilities(options, named).map((c) => c.name);
    assert.deepEqual(names(["monitor"]), ["monitor"], "a capability depending on nothing runs alone");
    assert.deepEqual(names(["gateway"]), [
      "webhook certificate",
      "tenants",
      "nodes",
      "access",
      "identity",
      "gateway",
      "webhook certificate keeper",
    ]);
    const keeper = selectedCapabilities(options, ["gateway"]).at(-1)!;
    assert.deepEqual(keeper.dependsOn, ["webhook certificate", "identity"]);
    assert.deepEqual(
      names([...CAPABILITY_NAMES]),
      capabilities(options).map((c) => c.name),
    );
    assert.doesNotThrow(() => new Manager(selectedCapabilities(options, ["webhooks", "clusters"])));
  });

  it("refuses an unknown capability, naming it and every known one, before touching the cluster", async () => {
    await assert.rejects(
      startTenantry({ ...options, capabilities: ["tenants", "tenant"] }),
      /^Error: capabilities: unknown "tenant"; known: tenants, clusters, .*, dashboard$/,
    );
    assert.throws(() => selectedCapabilities(options, []), /capabilities: none named/);
  });

  it("refuses wrong options before touching the cluster", async () => {
    await assert.rejects(
      startTenantry({ ...options, webhookClientCa: undefined }),
      /webhookClientCa: the CA of kube-apiserver's webhook client certificate is required/,
    );
    await assert.rejects(startTenantry({ ...options, storage: { advisor: { smoothing: 2 } } }), /smoothing/);
  });
});
