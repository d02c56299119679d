import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Node } from "@kubernetes/client-node";
import type { Tenant } from "../tenants/index.js";
import type { WorkerNode } from "./api/worker-node.js";
import {
  NODE_OWNER_LABEL,
  NODE_OWNER_TAINT,
  NODE_POLICY_LABEL,
  NODE_TENANT_LABEL,
  WORKER_NODE_LABEL,
} from "./labels.js";
import {
  isKubeletLabel,
  kubeletMaySet,
  nodeRegistration,
  nodeUpdateViolation,
  registrationViolation,
} from "./registration.js";

const workerNode = (policy: "private" | "shared"): WorkerNode =>
  ({
    metadata: { name: "gpu-1", uid: "u1" },
    spec: { provider: "simulated", flavor: "m1.small", policy, owner: "alice", tenant: "acme" },
  }) as WorkerNode;
const acme = {
  metadata: { name: "acme" },
  spec: { nodePool: { nodeSelector: { pool: "acme", "node-role.kubernetes.io/acme": "" } } },
} as unknown as Tenant;

const node = (labels: Record<string, string>, taints: V1Node["spec"] = {}): V1Node => ({
  metadata: { name: "gpu-1", labels },
  spec: taints,
});

describe("a worker node's registration", () => {
  const registration = nodeRegistration(workerNode("private"), acme);
  const ownerTaint = { key: NODE_OWNER_TAINT, value: "alice", effect: "NoSchedule" };

  test("the kubelet registers with what NodeRestriction lets it set; owner, tenant and policy are tenantry's to set", () => {
    assert.deepEqual(registration.kubeletLabels, { pool: "acme", [WORKER_NODE_LABEL]: "gpu-1" });
    assert.deepEqual(registration.tenantryLabels, {
      "node-role.kubernetes.io/acme": "",
      [NODE_POLICY_LABEL]: "private",
      [NODE_TENANT_LABEL]: "acme",
      [NODE_OWNER_LABEL]: "alice",
    });
    assert.deepEqual(registration.taints, [ownerTaint]);
    const shared = nodeRegistration(workerNode("shared"), undefined);
    assert.deepEqual(shared.taints, []);
    assert.equal(shared.tenantryLabels[NODE_OWNER_LABEL], undefined);
  });

  test("NodeRestriction's rule: no node-restriction.kubernetes.io labels, and of kubernetes.io only the kubelet's own", () => {
    assert.equal(kubeletMaySet(NODE_OWNER_LABEL), false);
    assert.equal(kubeletMaySet("team.node-restriction.kubernetes.io/x"), false);
    assert.equal(kubeletMaySet("node-role.kubernetes.io/worker"), false);
    assert.equal(kubeletMaySet("kubernetes.io/hostname"), true);
    assert.equal(kubeletMaySet("node.kubernetes.io/instance-type"), true);
    assert.equal(kubeletMaySet("tenantry.dev/worker-node"), true);
    assert.equal(isKubeletLabel("topology.kubernetes.io/zone"), true);
    assert.equal(isKubeletLabel("pool"), false);
  });

  test("registering as tenantry said, with the kubelet's own labels, is admitted", () => {
    const labels = {
      ...registration.kubeletLabels,
      "kubernetes.io/hostname": "gpu-1",
      "kubernetes.io/os": "linux",
      "topology.kubernetes.io/zone": "eu-1a",
    };
    assert.equal(registrationViolation(node(labels, { taints: [ownerTaint] }), registration), undefined);
    // Fewer labels than given is fine (tenantry adds what is missing), but never without its name.
    assert.equal(
      registrationViolation(node({ [WORKER_NODE_LABEL]: "gpu-1" }, { taints: [ownerTaint] }), registration),
      undefined,
    );
    assert.match(
      registrationViolation(node({}, { taints: [ownerTaint] }), registration) ?? "",
      /^metadata\.labels\[tenantry\.dev\/worker-node\]: worker node "gpu-1" registers with its own name there/,
    );
  });

  test("registering untainted, with another tenant's pool, another's hostname or a label of tenantry's is refused, naming it", () => {
    const base = { ...registration.kubeletLabels };
    assert.match(
      registrationViolation(node(base), registration) ?? "",
      /^spec\.taints: worker node "gpu-1" registers with the taint tenantry\.dev\/node-owner=alice:NoSchedule/,
    );
    const tainted = { taints: [ownerTaint] };
    assert.match(
      registrationViolation(node({ ...base, pool: "globex" }, tainted), registration) ?? "",
      /^metadata\.labels\[pool\]: worker node "gpu-1" registers only with the labels tenantry gave it \(pool=acme, tenantry\.dev\/worker-node=gpu-1\)/,
    );
    assert.match(
      registrationViolation(
        node({ ...base, "kubernetes.io/hostname": "other-node" }, tainted),
        registration,
      ) ?? "",
      /^metadata\.labels\[kubernetes\.io\/hostname\]: "other-node" is not the node's own name "gpu-1"/,
    );
    assert.match(
      registrationViolation(node({ ...base, [NODE_OWNER_LABEL]: "mallory" }, tainted), registration) ?? "",
      /^metadata\.labels\[node-restriction\.kubernetes\.io\/tenantry-node-owner\]/,
    );
  });

  test("afterwards the node changes only the kubelet's own labels, and never its taints", () => {
    const before = node(
      { ...registration.kubeletLabels, ...registration.tenantryLabels, "kubernetes.io/hostname": "gpu-1" },
      { taints: [ownerTaint] },
    );
    const changed = (labels: Record<string, string | undefined>, spec = before.spec) => {
      const next = { ...before.metadata!.labels };
      for (const [k, v] of Object.entries(labels)) {
        if (v === undefined) delete next[k];
        else next[k] = v;
      }
      return nodeUpdateViolation(before, { metadata: { name: "gpu-1", labels: next }, spec });
    };
    assert.equal(nodeUpdateViolation(before, before), undefined);
    assert.equal(changed({ "topology.kubernetes.io/zone": "eu-1b" }), undefined);
    assert.match(
      changed({ pool: "globex" }) ?? "",
      /^metadata\.labels\[pool\]: worker node "gpu-1" may not change it/,
    );
    assert.match(changed({ "team-b": "yes" }) ?? "", /^metadata\.labels\[team-b\]: .* may not add it/);
    assert.match(changed({ [WORKER_NODE_LABEL]: undefined }) ?? "", /may not remove it/);
    assert.match(changed({ "kubernetes.io/hostname": "x" }) ?? "", /kubernetes\.io\/hostname/);
    assert.match(
      changed({}, { taints: [] }) ?? "",
      /^spec\.taints: worker node "gpu-1" may not change its own taints/,
    );
  });
});
