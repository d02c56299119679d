import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Secret } from "@kubernetes/client-node";
import { silentLogger } from "../../../kube/index.js";
import type { RuntimeService } from "../../api/runtime-service.js";
import { StaticRouteSource } from "../source.js";
import { ServiceModules } from "./registry.js";
import { type ModuleSettings, ModuleSettingsError, type ServiceModule } from "./spi.js";

function service(name: string, module?: string, secret?: string): RuntimeService {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "RuntimeService",
    metadata: { name },
    spec: {
      plugin: { builtin: "generic" },
      ...(module
        ? { proxyModule: { name: module, ...(secret ? { secretRef: { name: secret } } : {}) } }
        : {}),
    },
  } as RuntimeService;
}

function secret(name: string, data: Record<string, string>): V1Secret {
  return {
    metadata: { name, namespace: "tenantry-system" },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
  };
}

/** A module recording its inits; settings with `fail` are refused. */
function recorder() {
  const inits: { service: string; settings: ModuleSettings }[] = [];
  const closed: string[] = [];
  const factory = ({ service: name }: { service: string }): ServiceModule => ({
    init(settings) {
      if (settings.fail) throw new ModuleSettingsError("fail", "refused on purpose");
      inits.push({ service: name, settings });
    },
    close: () => closed.push(name),
  });
  return { inits, closed, factory };
}

async function setUp() {
  const source = new StaticRouteSource();
  const rec = recorder();
  const modules = new ServiceModules({ factories: { rec: rec.factory }, logger: silentLogger });
  modules.attach(source);
  return { source, rec, modules };
}

describe("service modules", () => {
  test("init runs with the service's Secret, decoded; a service without a module has none", async () => {
    const { source, rec, modules } = await setUp();
    source.putSecret(secret("s1", { token: "abc", "X-Header": "v" }));
    source.putService(service("nb", "rec", "s1"));
    source.putService(service("plain"));
    await modules.settled();
    assert.deepEqual(rec.inits, [{ service: "nb", settings: { token: "abc", "X-Header": "v" } }]);
    assert.equal(modules.state("nb").kind, "ready");
    assert.equal(modules.state("plain").kind, "none");
    assert.equal(modules.state("unknown").kind, "none");
  });

  test("init runs again when the Secret's data changes, not when only its metadata does", async () => {
    const { source, rec, modules } = await setUp();
    source.putSecret(secret("s1", { a: "1" }));
    source.putService(service("nb", "rec", "s1"));
    await modules.settled();
    source.putSecret({ ...secret("s1", { a: "1" }), metadata: { name: "s1", labels: { x: "y" } } });
    await modules.settled();
    assert.equal(rec.inits.length, 1);
    source.putSecret(secret("s1", { a: "2" }));
    await modules.settled();
    assert.deepEqual(
      rec.inits.map((i) => i.settings.a),
      ["1", "2"],
    );
  });

  test("two services with the same module have an instance each, with their own settings", async () => {
    const { source, rec, modules } = await setUp();
    source.putSecret(secret("s1", { a: "1" }));
    source.putSecret(secret("s2", { a: "2" }));
    source.putService(service("one", "rec", "s1"));
    source.putService(service("two", "rec", "s2"));
    await modules.settled();
    assert.deepEqual(rec.inits.map((i) => `${i.service}=${i.settings.a}`).sort(), ["one=1", "two=2"]);
    const one = modules.state("one");
    const two = modules.state("two");
    assert.ok(one.kind === "ready" && two.kind === "ready" && one.module !== two.module);
  });

  test("refused settings, a missing Secret or an unknown module make the service unavailable, saying why", async () => {
    const { source, modules } = await setUp();
    source.putSecret(secret("bad", { fail: "yes" }));
    source.putService(service("refused", "rec", "bad"));
    source.putService(service("missing", "rec", "nosuch"));
    source.putService(service("unknown", "nosuch-module"));
    await modules.settled();
    const refused = modules.state("refused");
    assert.ok(refused.kind === "unavailable");
    assert.match(
      refused.detail,
      /"rec" of service refused refused its settings: setting fail: refused on purpose/,
    );
    const missing = modules.state("missing");
    assert.ok(missing.kind === "unavailable");
    assert.match(missing.detail, /Secret tenantry-system\/nosuch .* does not exist/);
    const unknown = modules.state("unknown");
    assert.ok(unknown.kind === "unavailable");
    assert.match(
      unknown.detail,
      /"nosuch-module" .* not known to this proxy \(it knows inject-headers, rec\)/,
    );
  });

  test("a good Secret after a bad one, or a Secret that appears, makes the module ready", async () => {
    const { source, modules } = await setUp();
    source.putSecret(secret("s1", { fail: "yes" }));
    source.putService(service("nb", "rec", "s1"));
    source.putService(service("late", "rec", "later"));
    await modules.settled();
    assert.equal(modules.state("nb").kind, "unavailable");
    source.putSecret(secret("s1", { ok: "yes" }));
    source.putSecret(secret("later", { ok: "yes" }));
    await modules.settled();
    assert.equal(modules.state("nb").kind, "ready");
    assert.equal(modules.state("late").kind, "ready");
    source.deleteSecret("later");
    assert.equal(modules.state("late").kind, "unavailable");
  });

  test("a service removed, or naming another module, closes the module it had", async () => {
    const { source, rec, modules } = await setUp();
    source.putService(service("nb", "rec"));
    source.putService(service("gone", "rec"));
    await modules.settled();
    source.putService(service("nb", "inject-headers"));
    source.deleteService("gone");
    await modules.settled();
    assert.deepEqual(rec.closed.sort(), ["gone", "nb"]);
    const state = modules.state("nb");
    assert.ok(state.kind === "ready" && state.name === "inject-headers");
    assert.equal(modules.state("gone").kind, "none");
  });

  test("requests wait for a first init that is still running", async () => {
    const source = new StaticRouteSource();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const modules = new ServiceModules({
      factories: { slow: () => ({ init: () => gate }) },
      logger: silentLogger,
    });
    modules.attach(source);
    source.putService(service("nb", "slow"));
    const state = modules.state("nb");
    assert.equal(state.kind, "pending");
    release();
    await (state as { settled: Promise<void> }).settled;
    assert.equal(modules.state("nb").kind, "ready");
  });
});
