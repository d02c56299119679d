/**
 * A replica that loses the controllers' Lease and takes it again runs its controllers again: they
 * are built afresh on each lead, and what they share (the monitor's metrics) is registered once.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { CoordinationV1Api, V1MicroTime } from "@kubernetes/client-node";
import { CONTROLLERS_LEASE, TENANTRY_NAMESPACE } from "../../src/app/tenantry.js";
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
    // Another holder takes the lease for 3 s: this replica sees it at its next renewal and stops leading.
    const leases = cluster.kc.makeApiClient(CoordinationV1Api);
    const lease = await leases.readNamespacedLease({
      name: CONTROLLERS_LEASE,
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
      name: CONTROLLERS_LEASE,
      namespace: TENANTRY_NAMESPACE,
      body: lease,
    });
    await eventually(() => assert.ok(!tenantry.isLeader(), "no longer leading"), { timeoutMs: 60_000 });
    await eventually(() => assert.ok(tenantry.controllersRunning(), "controllers running again"), {
      timeoutMs: 120_000,
    });
  });
});
