/**
 * A replica that loses a capability's Lease and takes it again runs that capability's controllers
 * again: they are built afresh on each lead, and what they share is registered once.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoordinationV1Api, V1MicroTime } from "@kubernetes/client-node";
import { controllersLease, TENANTRY_NAMESPACE } from "../../src/app/tenantry.js";
import { type DedicatedCluster, startDedicatedCluster } from "../nodes/dedicated.js";
import { eventually } from "../support/eventually.js";

describe("leadership lost and taken again", () => {
  let cluster: DedicatedCluster;
  before(async () => {
    cluster = await startDedicatedCluster("re-lead");
  });
  after(async () => {
    await cluster?.stop();
  });

  it("runs the controllers again after another holder's lease expires", async () => {
    const tenantry = cluster.tenantry;
    await eventually(() => assert.ok(tenantry.controllersRunning(), "controllers running"), {
      timeoutMs: 120_000,
    });
    // Another holder takes the tenants' Lease for 3 s: this replica sees it at its next renewal and
    // stops leading the tenants (the other capabilities' controllers go on).
    const leases = cluster.kc.makeApiClient(CoordinationV1Api);
    const lease = await leases.readNamespacedLease({
      name: controllersLease("tenants"),
      namespace: TENANTRY_NAMESPACE,
    });
    lease.spec = {
      ...lease.spec,
      holderIdentity: "another-replica",
      leaseDurationSeconds: 3,
      acquireTime: new V1MicroTime(),
      renewTime: new V1MicroTime(),
    };
    await leases.replaceNamespacedLease({
      name: controllersLease("tenants"),
      namespace: TENANTRY_NAMESPACE,
      body: lease,
    });
    await eventually(() => assert.ok(!tenantry.isLeader(), "no longer leading"), { timeoutMs: 60_000 });
    assert.ok(!tenantry.leading().includes("tenants"), "the tenants' controllers stopped");
    assert.ok(tenantry.leading().includes("nodes"), "the nodes' controllers kept running");
    await eventually(() => assert.ok(tenantry.controllersRunning(), "controllers running again"), {
      timeoutMs: 120_000,
    });
  });
});
