import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ClusterClient } from "../../../src/kube/index.js";
import {
  NAMESPACE_RESERVATIONS_ANNOTATION,
  NamespaceQuota,
  readReservations,
} from "../../../src/tenants/admission/namespace-quota.js";
import { TenantInformers } from "../../../src/tenants/index.js";
import { uniqueName } from "../../support/clusters.js";
import { adminKubeConfig, createTenant, deleteTenants, getTenant } from "./support.js";

/**
 * Two NamespaceQuota instances stand for two tenantry replicas: each serialises only its own
 * requests, so only the compare-and-swap on the Tenant keeps them from overrunning the quota.
 */
describe("namespace quota reservations across replicas", () => {
  const tenant = uniqueName("replicas");
  let informers: TenantInformers;

  before(async () => {
    informers = new TenantInformers(new ClusterClient("home", adminKubeConfig));
    await informers.start();
    await createTenant(tenant, { owners: [{ kind: "User", name: uniqueName("owner") }], namespaceQuota: 3 });
  });

  after(async () => {
    await informers.stop();
    await deleteTenants([tenant]);
  });

  it("20 racing reservations from two replicas admit exactly 3", async () => {
    const replicas = [new NamespaceQuota({ informers }), new NamespaceQuota({ informers })];
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) => replicas[i % 2]!.reserve(tenant, `${tenant}-${i}`)),
    );
    assert.equal(outcomes.filter((o) => o.admitted).length, 3);
    for (const outcome of outcomes.filter((o) => !o.admitted))
      assert.deepEqual(outcome, { admitted: false, used: 3, quota: 3 });
    const stored = await getTenant(tenant);
    assert.equal(readReservations(stored).length, 3);
    assert.ok(stored.metadata?.annotations?.[NAMESPACE_RESERVATIONS_ANNOTATION]);
    // A dry run decides without writing.
    assert.deepEqual(await replicas[0]!.reserve(tenant, `${tenant}-dry`, true), {
      admitted: false,
      used: 3,
      quota: 3,
    });
  });

  it("reservations lapse, and the slots come back", async () => {
    const quick = new NamespaceQuota({ informers, now: () => new Date(Date.now() + 120_000) });
    assert.deepEqual(await quick.reserve(tenant, `${tenant}-late`), { admitted: true });
    assert.deepEqual(
      readReservations(await getTenant(tenant)).map((r) => r.namespace),
      [`${tenant}-late`],
    );
  });
});
