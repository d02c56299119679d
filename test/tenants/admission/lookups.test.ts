import assert from "node:assert/strict";
import { after, before, describe, it, mock } from "node:test";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { ClusterClient, DynamicObjectApi } from "../../../src/kube/index.js";
import { TenantInformers, tenantWebhooks } from "../../../src/tenants/index.js";
import type { AdmissionRequest, AdmissionWebhook } from "../../../src/webhooks/index.js";
import { uniqueName } from "../../support/clusters.js";
import { eventually } from "../../support/eventually.js";
import { adminKubeConfig, createTenant, deleteTenants } from "./support.js";

/**
 * Namespace admission answers from the informers' indexes: with 50 tenants in the cache, deciding
 * which tenant an owner's namespace joins reads no list of Tenants from the API server.
 */
describe("namespace admission reads no list of tenants", () => {
  const prefix = uniqueName("idx");
  const tenants = Array.from({ length: 50 }, (_, i) => `${prefix}-${i}`);
  const owner = `${prefix}-owner`;
  let informers: TenantInformers;
  let webhooks: AdmissionWebhook[];

  before(async () => {
    informers = new TenantInformers(new ClusterClient("home", adminKubeConfig));
    await informers.start();
    await Promise.all(
      tenants.map((name, i) =>
        createTenant(name, {
          // Tenant 7 is the owner's; tenant 8 declares `<prefix>-8-app`.
          owners: [{ kind: "User", name: i === 7 ? owner : `${prefix}-someone-${i}` }],
          namespaceQuota: 3,
          ...(i === 8 ? { namespaces: [{ name: "app" }] } : {}),
        }),
      ),
    );
    await eventually(() => assert.ok(tenants.every((name) => informers.tenants.get(undefined, name))));
    webhooks = tenantWebhooks(informers, {
      controllerUsername: "tenantry-under-test",
      ownNamespace: "tenantry-system",
    });
  });

  after(async () => {
    await informers.stop();
    await deleteTenants(tenants);
  });

  const handler = (path: string) => webhooks.find((w) => w.path === path)!;
  const request = (
    name: string,
    labels: Record<string, string> = {},
    username = owner,
  ): AdmissionRequest => ({
    uid: name,
    kind: { group: "", version: "v1", kind: "Namespace" },
    resource: { group: "", version: "v1", resource: "namespaces" },
    name,
    operation: "CREATE",
    userInfo: { username, groups: ["system:authenticated"] },
    object: { apiVersion: "v1", kind: "Namespace", metadata: { name, labels } },
    dryRun: true,
  });

  it("mutates and validates an owner's namespace, refuses a declared name, without listing Tenants", async () => {
    const typedLists = mock.method(CustomObjectsApi.prototype, "listClusterCustomObject");
    const rawReads = mock.method(DynamicObjectApi.prototype, "getJson");
    try {
      const name = `${prefix}-7-team`;
      const mutated = await handler("/mutate/namespaces").handle(request(name));
      assert.equal(mutated.allowed, true);
      const labels = Object.fromEntries(
        (mutated.allowed ? (mutated.patch ?? []) : [])
          .filter((op) => op.path.startsWith("/metadata/labels"))
          .flatMap((op) =>
            op.path === "/metadata/labels"
              ? Object.entries(op.value as Record<string, string>)
              : [[op.path.slice("/metadata/labels/".length).replace("~1", "/"), op.value as string]],
          ),
      );
      assert.equal(labels["tenantry.dev/tenant"], `${prefix}-7`);
      const validated = await handler("/validate/namespaces").handle(request(name, labels));
      assert.deepEqual(validated, { allowed: true });

      const declared = await handler("/validate/namespaces").handle(
        request(`${prefix}-8-app`, {}, "stranger"),
      );
      assert.equal(declared.allowed, false);
      assert.match(declared.allowed ? "" : declared.message, /reserved for spec.namespaces of tenant/);

      assert.equal(typedLists.mock.callCount(), 0, "admission listed Tenants through the typed client");
      const tenantLists = rawReads.mock.calls.filter((call) => /\/tenants$/.test(String(call.arguments[0])));
      assert.equal(tenantLists.length, 0, "admission listed Tenants through the raw client");
    } finally {
      typedLists.mock.restore();
      rawReads.mock.restore();
    }
  });
});
