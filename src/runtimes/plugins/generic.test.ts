import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { GenericPlugin, validateGenericConfig } from "./generic.js";

const image = "docker.io/jmalloc/echo-server:v0.3.7";

describe("generic plugin parameters", () => {
  it("accepts a full set", () => {
    assert.deepEqual(
      validateGenericConfig({
        image,
        port: 8080,
        args: ["--verbose"],
        env: { GREETING: "hi" },
        cpu: "500m",
        memory: "512Mi",
        volumeSize: "10Gi",
        mountPath: "/srv",
        readinessProbe: "tcp",
      }),
      [],
    );
  });

  it("names the field and the limit of each problem", () => {
    const problems = (config: Record<string, unknown>) => validateGenericConfig({ image, ...config });
    assert.deepEqual(problems({ cpu: "17" }), [
      { field: "cpu", message: 'cpu: "17" is more than the limit 16', limit: "16" },
    ]);
    assert.equal(problems({ memory: "65Gi" })[0]?.limit, "64Gi");
    assert.equal(problems({ volumeSize: "2Ti" })[0]?.limit, "1Ti");
    assert.match(problems({ port: 70000 })[0]!.message, /^port: .*less than or equal to 65535/);
    assert.match(problems({ cpu: "lots" })[0]!.message, /^cpu: /);
    assert.match(problems({ colour: "blue" })[0]!.message, /^colour: not a parameter of the generic plugin/);
    assert.match(problems({ env: { TENANTRY_STOP_URL: "x" } })[0]!.message, /set by tenantry/);
    assert.match(problems({ mountPath: "/srv" })[0]!.message, /only with volumeSize/);
    assert.equal(validateGenericConfig({})[0]?.field, "image");
    assert.equal(validateGenericConfig({ image: "Not An Image" })[0]?.field, "image");
  });

  it("check-service: a running runtime keeps every parameter, a stopped one its volume's", async () => {
    const plugin = new GenericPlugin();
    const base = { user: "u", service: "s", instance: "i", current: { image, volumeSize: "1Gi" } };
    const running = await plugin.checkService({
      ...base,
      proposed: { image: `${image}-2`, volumeSize: "1Gi" },
      state: "Running",
    });
    assert.deepEqual(running.compatible ? undefined : running.field, "image");
    const resumed = await plugin.checkService({
      ...base,
      proposed: { image: `${image}-2`, volumeSize: "1Gi" },
      state: "Stopped",
    });
    assert.equal(resumed.compatible, true);
    const resized = await plugin.checkService({
      ...base,
      proposed: { image, volumeSize: "2Gi" },
      state: "Stopped",
    });
    assert.deepEqual(resized.compatible ? undefined : resized.field, "volumeSize");
  });

  it("serves at its root unless it asks for the base path", async () => {
    const registration = {
      user: "u",
      tenant: "t",
      service: "s",
      instance: "i",
      namespace: "n",
      name: "s-i",
      cluster: "c",
      basePath: "/r/tok/",
    };
    const plugin = new GenericPlugin();
    assert.deepEqual((await plugin.deployService({ registration, config: { image } })).endpoint, {
      port: 8080,
      path: "",
    });
    assert.deepEqual(
      (await plugin.deployService({ registration, config: { image, port: 9000, servesUnderBasePath: true } }))
        .endpoint,
      { port: 9000, path: "/r/tok" },
    );
  });
});
