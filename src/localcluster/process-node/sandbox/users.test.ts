import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { containerRunAs, POD_USER_BASE, POD_USER_RANGE, podUser } from "./users.js";

const pod = (spec: Partial<NonNullable<V1Pod["spec"]>> = {}): V1Pod => ({
  metadata: { name: "p", namespace: "ns", uid: "5f1c0d2e-aaaa-bbbb-cccc-000000000001" },
  spec: { containers: [], ...spec },
});
const container = (securityContext?: V1Container["securityContext"]): V1Container => ({
  name: "c",
  ...(securityContext ? { securityContext } : {}),
});

describe("whom a container runs as on the process node", () => {
  const own = podUser("5f1c0d2e-aaaa-bbbb-cccc-000000000001");

  test("an image that would run as root runs as the pod's own user, never root", () => {
    assert.ok(own >= POD_USER_BASE && own < POD_USER_BASE + POD_USER_RANGE);
    const runAs = containerRunAs(pod(), container(), "echo", "spec.containers[0]");
    assert.deepEqual(runAs, {
      uid: own,
      gid: own,
      groups: [],
      userNamespace: false,
      capabilities: [],
      containerUid: own,
      containerGid: own,
    });
    assert.notEqual(podUser("another-pod"), own, "another pod, another user");
  });

  test("the container's runAsUser wins over the pod's, which wins over the image's user", () => {
    assert.equal(containerRunAs(pod(), container(), "jupyter", "c").uid, 1000);
    assert.equal(containerRunAs(pod(), container(), "jupyter", "c").gid, 100);
    const podLevel = pod({ securityContext: { runAsUser: 1500, runAsGroup: 1600, fsGroup: 1700 } });
    assert.deepEqual(
      [containerRunAs(podLevel, container(), "jupyter", "c")].map((r) => [r.uid, r.gid, r.groups]),
      [[1500, 1600, [1700]]],
    );
    assert.equal(containerRunAs(podLevel, container({ runAsUser: 1800 }), "jupyter", "c").uid, 1800);
  });

  test("a helper pod without a user works on a claim as the claim's owner", () => {
    const runAs = containerRunAs(pod(), container(), "backupAgent", "c", { uid: 1000, gid: 100 });
    assert.deepEqual([runAs.uid, runAs.gid], [1000, 100]);
  });

  test("root is root only in a user namespace of its own, mapped to the pod's user", () => {
    const runAs = containerRunAs(pod(), container({ runAsUser: 0 }), "busybox", "c");
    assert.deepEqual([runAs.userNamespace, runAs.uid, runAs.containerUid], [true, own, 0]);
    assert.throws(
      () =>
        containerRunAs(
          pod({ securityContext: { runAsNonRoot: true } }),
          container({ runAsUser: 0 }),
          "busybox",
          "c",
        ),
      /container has runAsNonRoot and image will run as root/,
    );
  });

  test("capabilities: only NET_BIND_SERVICE and NET_ADMIN are granted, privileged and others are refused naming the field", () => {
    const bind = container({ capabilities: { add: ["NET_BIND_SERVICE"], drop: ["CHOWN"] } });
    assert.deepEqual(containerRunAs(pod(), bind, "echo", "c").capabilities, ["net_bind_service"]);
    const restricted = container({ capabilities: { add: ["CAP_NET_BIND_SERVICE"], drop: ["ALL"] } });
    assert.deepEqual(containerRunAs(pod(), restricted, "echo", "c").capabilities, ["net_bind_service"]);
    const dropped = container({ capabilities: { add: ["NET_BIND_SERVICE"], drop: ["NET_BIND_SERVICE"] } });
    assert.deepEqual(containerRunAs(pod(), dropped, "echo", "c").capabilities, []);
    const gateway = container({ capabilities: { add: ["NET_ADMIN"], drop: ["ALL"] } });
    assert.deepEqual(containerRunAs(pod(), gateway, "networkGateway", "c").capabilities, ["net_admin"]);
    assert.throws(
      () =>
        containerRunAs(
          pod(),
          container({ capabilities: { add: ["SYS_ADMIN"] } }),
          "echo",
          "spec.containers[1]",
        ),
      /spec\.containers\[1\]\.securityContext\.capabilities\.add\[0\]: capability SYS_ADMIN is not granted/,
    );
    assert.throws(
      () => containerRunAs(pod(), container({ privileged: true }), "echo", "spec.containers[0]"),
      /spec\.containers\[0\]\.securityContext\.privileged: the process node runs no privileged containers/,
    );
  });
});
