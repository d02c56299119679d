/**
 * The one conformance suite every runtime plugin runs, whatever its transport: the built-in
 * generic plugin, a plugin over HTTP, an executable, and the example Jupyter plugin (both ways)
 * each call `pluginConformance` from their own test file with the plugin reached as tenantry
 * reaches it. What the plugin returns must pass tenantry's checks and the API server's (a
 * server-side dry run against the home cluster).
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { applyObject, type ClusterClient } from "../../src/kube/index.js";
import {
  ALLOWED_KINDS,
  buildManifest,
  CALLOUTS,
  PluginError,
  type RuntimeRegistration,
  type ServicePlugin,
} from "../../src/runtimes/index.js";
import { uniqueName } from "../support/clusters.js";
import { clusterClient, removeObject } from "../support/runtimes.js";

export interface PluginFixture {
  /** The plugin as tenantry reaches it (its transport). */
  plugin: ServicePlugin;
  /** Parameters a start may give. */
  config: Record<string, unknown>;
  /** The service's default parameters (what image-pull is told). */
  defaults?: Record<string, unknown>;
  /** Parameters the plugin must refuse, and the field its message must name. */
  invalid: { config: Record<string, unknown>; field: string };
  /** A change check-service must refuse even for a stopped runtime (its data's shape), and its field. */
  incompatible?: { change: Record<string, unknown>; field: string };
  setUp?(): Promise<void>;
  tearDown?(): Promise<void>;
}

const registration = (namespace: string, instance: string): RuntimeRegistration => ({
  user: "conformance-user",
  tenant: "conformance",
  service: "svc",
  instance,
  namespace,
  name: `svc-${instance}`,
  cluster: "home",
  basePath: `/r/${"t".repeat(43)}/`,
});

export function pluginConformance(name: string, fixture: () => PluginFixture): void {
  describe(`${name} runtime plugin conformance`, () => {
    let f: PluginFixture;
    let capabilities: string[];
    let client: ClusterClient;
    const namespace = uniqueName("plugin-conformance");

    before(async () => {
      f = fixture();
      await f.setUp?.();
      client = clusterClient();
      await client.core.createNamespace({ body: { metadata: { name: namespace } } });
    });
    after(async () => {
      await removeObject(client, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
      await f.tearDown?.();
    });

    it("init answers the callouts it implements, deploy-service among them", async () => {
      capabilities = (await f.plugin.init()).capabilities;
      assert.ok(capabilities.includes("deploy-service"), JSON.stringify(capabilities));
      for (const callout of capabilities) {
        assert.ok((CALLOUTS as readonly string[]).includes(callout), `${callout} is a callout`);
      }
    });

    it("deploy-service returns YAML tenantry accepts: allowed kinds, the namespace, names of the runtime", async () => {
      for (const instance of ["one", "other"]) {
        const reg = registration(namespace, instance);
        const result = await f.plugin.deployService({ registration: reg, config: f.config });
        const manifest = buildManifest(result, {
          namespace,
          name: reg.name,
          service: reg.service,
          stopUrl: "http://127.0.0.1:1/stop",
        });
        assert.ok(manifest.objects.length >= 1);
        for (const object of manifest.objects) {
          assert.ok(ALLOWED_KINDS.some((k) => k.kind === object.kind));
          assert.equal(object.metadata?.namespace, namespace);
          assert.ok(object.metadata!.name!.startsWith(reg.name));
        }
        assert.ok(manifest.endpoint.port >= 1 && manifest.endpoint.port <= 65535);
        assert.ok(
          ["", reg.basePath.replace(/\/$/, "")].includes(manifest.endpoint.path),
          `the endpoint path is the root or the base path, not ${manifest.endpoint.path}`,
        );
      }
    });

    it("the API server accepts its objects (server-side dry run)", async () => {
      const reg = registration(namespace, "dry");
      const result = await f.plugin.deployService({ registration: reg, config: f.config });
      const { objects } = buildManifest(result, {
        namespace,
        name: reg.name,
        service: reg.service,
        stopUrl: "http://127.0.0.1:1/stop",
      });
      for (const object of objects) await applyObject(client, object as KubernetesObject, { dryRun: true });
    });

    it("deploy-service refuses bad parameters with a message naming the field", async () => {
      const reg = registration(namespace, "bad");
      await assert.rejects(
        async () => {
          // A built-in plugin is also asked before the Admin API accepts a start.
          const violation = f.plugin.validateConfig?.(f.invalid.config)[0];
          if (violation) throw new PluginError("deploy-service", violation.message);
          await f.plugin.deployService({ registration: reg, config: f.invalid.config });
        },
        (err: Error) => {
          assert.ok(err instanceof PluginError, String(err));
          assert.ok(err.message.includes(f.invalid.field), err.message);
          return true;
        },
      );
    });

    it("check-service: the same parameters are compatible; a change to its data's shape is not, named", async (t) => {
      if (!f.plugin.checkService || !capabilities.includes("check-service"))
        return t.skip("no check-service");
      const base = { user: "u", service: "svc", instance: "one", current: f.config };
      for (const state of ["Running", "Stopped"] as const) {
        assert.deepEqual(await f.plugin.checkService({ ...base, proposed: { ...f.config }, state }), {
          compatible: true,
        });
      }
      if (!f.incompatible) return;
      for (const state of ["Running", "Stopped"] as const) {
        const result = await f.plugin.checkService({
          ...base,
          proposed: { ...f.config, ...f.incompatible.change },
          state,
        });
        assert.equal(result.compatible, false);
        assert.equal(!result.compatible && result.field, f.incompatible.field);
      }
    });

    it("image-pull names images; image-cleanup answers only among the images it is given", async (t) => {
      if (!f.plugin.imagePull || !capabilities.includes("image-pull")) return t.skip("no image-pull");
      const defaults = f.defaults ?? f.config;
      const pulled = await f.plugin.imagePull({ service: "svc", defaults, images: [] });
      assert.ok(pulled.images.length >= 1);
      for (const image of pulled.images) assert.match(image, /^[a-z0-9][^\s]*$/);
      if (!f.plugin.imageCleanup || !capabilities.includes("image-cleanup")) return;
      const stale = ["example/old:1", "example/old:2"];
      const dropped = await f.plugin.imageCleanup({ service: "svc", defaults, images: stale });
      for (const image of dropped.images) assert.ok(stale.includes(image), `${image} was not offered`);
    });

    it("deregister-service accepts a runtime's registration", async (t) => {
      if (!f.plugin.deregisterService || !capabilities.includes("deregister-service")) {
        return t.skip("no deregister-service");
      }
      await f.plugin.deregisterService(registration(namespace, "one"));
    });
  });
}
