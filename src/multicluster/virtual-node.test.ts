import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { V1Node } from "@kubernetes/client-node";
import type { Peering } from "./api/peering.js";
import { parseClusterIdentity } from "./identity.js";
import {
  addTaintPatch,
  hasVirtualNodeTaint,
  microTime,
  newVirtualNode,
  nodeCapacity,
  nodeStatusStale,
  readyCondition,
  VIRTUAL_NODE_TAINT,
  virtualNodeLabels,
  virtualNodeStatus,
} from "./virtual-node.js";

const peering: Peering = {
  apiVersion: "tenantry.dev/v1alpha1",
  kind: "Peering",
  metadata: { name: "edge-1", uid: "u-1", generation: 1 },
  spec: {
    remoteClusterId: "id-1",
    remoteClusterName: "edge-1",
    labels: { "topology.kubernetes.io/region": "eu-south", "kubernetes.io/hostname": "spoofed" },
    kubeconfigSecretRef: { name: "tenantry-peer-edge-1" },
    namespaceQuota: 3,
    resources: { cpu: "8", memory: "16Gi", pods: "100" },
  },
};

describe("virtual node", () => {
  it("carries the provider's labels, but never lets them override its own", () => {
    const labels = virtualNodeLabels(peering);
    assert.equal(labels["topology.kubernetes.io/region"], "eu-south");
    assert.equal(labels["kubernetes.io/hostname"], "tenantry-edge-1");
    assert.equal(labels["tenantry.dev/type"], "virtual-node");
    assert.equal(labels["tenantry.dev/remote-cluster-id"], "id-1");
  });

  it("is created tainted and owned by its Peering", () => {
    const node = newVirtualNode(peering);
    assert.equal(node.metadata?.name, "tenantry-edge-1");
    assert.ok(hasVirtualNodeTaint(node));
    assert.deepEqual(node.metadata?.ownerReferences?.[0], {
      apiVersion: "tenantry.dev/v1alpha1",
      kind: "Peering",
      name: "edge-1",
      uid: "u-1",
      controller: true,
    });
  });

  it("adds its taint back without dropping the ones kube-controller-manager set", () => {
    const node: V1Node = {
      metadata: { name: "tenantry-edge-1", resourceVersion: "7" },
      spec: { taints: [{ key: "node.kubernetes.io/not-ready", effect: "NoExecute" }] },
    };
    assert.deepEqual(addTaintPatch(node), [
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      {
        op: "replace",
        path: "/spec/taints",
        value: [{ key: "node.kubernetes.io/not-ready", effect: "NoExecute" }, VIRTUAL_NODE_TAINT],
      },
    ]);
    assert.deepEqual(addTaintPatch({ metadata: { name: "n", resourceVersion: "1" } })[1], {
      op: "add",
      path: "/spec/taints",
      value: [VIRTUAL_NODE_TAINT],
    });
  });

  it("shows a quota as node capacity", () => {
    assert.deepEqual(
      nodeCapacity({
        cpu: "8",
        "requests.memory": "16Gi",
        "limits.cpu": "16",
        "count/deployments.apps": 5,
        pods: 100,
        "example.com/gpu": 2,
      }),
      { cpu: "8", memory: "16Gi", pods: "100", "example.com/gpu": "2" },
    );
  });

  it("moves the Ready transition time only when the status changes", () => {
    const t0 = new Date("2025-01-01T00:00:00Z");
    const t1 = new Date("2025-01-01T00:00:30Z");
    const first = readyCondition({ ready: true, reason: "PeerReady", message: "ok" }, undefined, t0);
    const again = readyCondition({ ready: true, reason: "PeerReady", message: "ok" }, first, t1);
    assert.equal(new Date(again.lastTransitionTime!).getTime(), t0.getTime());
    assert.equal(new Date(again.lastHeartbeatTime!).getTime(), t1.getTime());
    const down = readyCondition({ ready: false, reason: "PeerUnreachable", message: "x" }, again, t1);
    assert.equal(new Date(down.lastTransitionTime!).getTime(), t1.getTime());
  });

  it("writes status when it differs or its heartbeat is due", () => {
    const now = new Date("2025-01-01T00:00:00Z");
    const readiness = { ready: true, reason: "PeerReady", message: "ok" };
    const written = virtualNodeStatus(peering, readiness, undefined, now) as V1Node;
    assert.equal(nodeStatusStale(written, peering, readiness, new Date(now.getTime() + 1000), 30_000), false);
    assert.equal(
      nodeStatusStale(written, peering, readiness, new Date(now.getTime() + 30_000), 30_000),
      true,
    );
    assert.equal(
      nodeStatusStale(
        written,
        peering,
        { ...readiness, ready: false },
        new Date(now.getTime() + 1000),
        30_000,
      ),
      true,
    );
    const moreCpu = {
      ...peering,
      spec: { ...peering.spec, resources: { ...peering.spec.resources, cpu: "16" } },
    };
    assert.equal(nodeStatusStale(written, moreCpu, readiness, new Date(now.getTime() + 1000), 30_000), true);
  });

  it("renews its Lease with a MicroTime", () => {
    assert.equal(microTime(new Date("2025-01-01T00:00:00.123Z")), "2025-01-01T00:00:00.123000Z");
  });
});

describe("cluster identity", () => {
  it("reads the ConfigMap's data, labels as JSON", () => {
    assert.deepEqual(
      parseClusterIdentity({ data: { clusterId: "a", clusterName: "home", labels: '{"region":"eu"}' } }),
      { clusterId: "a", clusterName: "home", labels: { region: "eu" } },
    );
    assert.equal(parseClusterIdentity({ data: { clusterName: "home" } }), undefined);
    assert.equal(
      parseClusterIdentity({ data: { clusterId: "a", clusterName: "b", labels: "{" } }),
      undefined,
    );
  });
});
