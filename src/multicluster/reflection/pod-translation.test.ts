import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Node, V1Pod } from "@kubernetes/client-node";
import {
  pendingStatus,
  reflectedStatus,
  remoteNodeAffinity,
  remotePod,
  remotePodDrift,
  statusShows,
  unreachableStatus,
  wasReflected,
} from "./pod-translation.js";

const virtualNode: V1Node = {
  metadata: {
    name: "tenantry-edge-1",
    labels: {
      "topology.kubernetes.io/region": "eu-south",
      "tenantry.dev/security-policy": "strict",
      "kubernetes.io/hostname": "tenantry-edge-1",
      "kubernetes.io/os": "linux",
      "tenantry.dev/type": "virtual-node",
      "tenantry.dev/peering": "edge-1",
      "tenantry.dev/remote-cluster-id": "edge-1-id",
    },
  },
};

const virtualNodeRequirement = { key: "tenantry.dev/type", operator: "In", values: ["virtual-node"] };
const localNodesRequirement = { key: "tenantry.dev/type", operator: "NotIn", values: ["virtual-node"] };

function localPod(spec: Partial<V1Pod["spec"]> = {}, status?: V1Pod["status"]): V1Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: "web-1",
      namespace: "shop",
      uid: "local-uid",
      labels: { app: "web" },
      annotations: { note: "kept", "kubectl.kubernetes.io/last-applied-configuration": "{}" },
      ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "web", uid: "rs" }],
    },
    spec: {
      nodeName: "tenantry-edge-1",
      priority: 0,
      serviceAccountName: "default",
      serviceAccount: "default",
      containers: [
        {
          name: "web",
          image: "nginx",
          volumeMounts: [
            { name: "data", mountPath: "/data" },
            { name: "kube-api-access-x7k2p", mountPath: "/var/run/secrets/kubernetes.io/serviceaccount" },
          ],
        },
      ],
      volumes: [
        { name: "data", emptyDir: {} },
        { name: "kube-api-access-x7k2p", projected: { sources: [] } },
      ],
      tolerations: [
        {
          key: "virtual-node.tenantry.dev/not-allowed",
          operator: "Equal",
          value: "true",
          effect: "NoExecute",
        },
        {
          key: "node.kubernetes.io/not-ready",
          operator: "Exists",
          effect: "NoExecute",
          tolerationSeconds: 300,
        },
      ],
      ...spec,
    },
    ...(status ? { status } : {}),
  };
}

const target = {
  node: virtualNode,
  remoteNamespace: "shop-home",
  originClusterId: "home-id",
  serviceAccountExists: true,
};

describe("remotePod", () => {
  test("keeps name, labels and annotations, adds the origin, and drops what ties the pod to the consumer", () => {
    const remote = remotePod(localPod(), target);
    assert.deepEqual(remote.metadata, {
      name: "web-1",
      namespace: "shop-home",
      labels: {
        app: "web",
        "offloading.tenantry.dev/origin-cluster-id": "home-id",
        "offloading.tenantry.dev/origin-namespace": "shop",
      },
      annotations: { note: "kept", "offloading.tenantry.dev/origin-uid": "local-uid" },
    });
    assert.deepEqual(remote.spec, {
      serviceAccountName: "default",
      containers: [{ name: "web", image: "nginx", volumeMounts: [{ name: "data", mountPath: "/data" }] }],
      volumes: [{ name: "data", emptyDir: {} }],
      tolerations: [
        {
          key: "node.kubernetes.io/not-ready",
          operator: "Exists",
          effect: "NoExecute",
          tolerationSeconds: 300,
        },
      ],
    });
  });

  test("drops a service account the provider lacks, keeps one it has", () => {
    const pod = localPod({ serviceAccountName: "builder" });
    assert.equal(
      remotePod(pod, { ...target, serviceAccountExists: false }).spec?.serviceAccountName,
      undefined,
    );
    assert.equal(remotePod(pod, target).spec?.serviceAccountName, "builder");
  });

  test("node selector entries on the virtual node's labels go, others and kubernetes.io/os stay", () => {
    const pod = localPod({
      nodeSelector: {
        "tenantry.dev/type": "virtual-node",
        "topology.kubernetes.io/region": "eu-south",
        "kubernetes.io/os": "linux",
        disk: "ssd",
      },
    });
    assert.deepEqual(remotePod(pod, target).spec?.nodeSelector, { "kubernetes.io/os": "linux", disk: "ssd" });
    const onlyVirtual = localPod({ nodeSelector: { "tenantry.dev/peering": "edge-1" } });
    assert.equal(remotePod(onlyVirtual, target).spec?.nodeSelector, undefined);
  });

  test("init containers lose the token mount too; ephemeral containers are not created", () => {
    const pod = localPod({
      initContainers: [
        {
          name: "init",
          image: "busybox",
          volumeMounts: [{ name: "kube-api-access-x7k2p", mountPath: "/t" }],
        },
      ],
      ephemeralContainers: [{ name: "debug", image: "busybox" }],
    });
    const spec = remotePod(pod, target).spec!;
    assert.deepEqual(spec.initContainers, [{ name: "init", image: "busybox" }]);
    assert.equal(spec.ephemeralContainers, undefined);
  });

  test("a pod with no volume left and no toleration left has neither field", () => {
    const pod = localPod({
      containers: [{ name: "web", image: "nginx" }],
      volumes: [{ name: "kube-api-access-1", projected: { sources: [] } }],
      tolerations: [{ key: "virtual-node.tenantry.dev/not-allowed", operator: "Exists" }],
    });
    const spec = remotePod(pod, target).spec!;
    assert.equal(spec.volumes, undefined);
    assert.equal(spec.tolerations, undefined);
  });

  test("pod anti-affinity is kept while the node affinity that chose the virtual node goes", () => {
    const podAntiAffinity = {
      preferredDuringSchedulingIgnoredDuringExecution: [
        {
          weight: 10,
          podAffinityTerm: {
            topologyKey: "kubernetes.io/hostname",
            labelSelector: { matchLabels: { app: "web" } },
          },
        },
      ],
    };
    const pod = localPod({
      affinity: {
        podAntiAffinity,
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [virtualNodeRequirement] }],
          },
        },
      },
    });
    assert.deepEqual(remotePod(pod, target).spec?.affinity, { podAntiAffinity });
    const onlyNode = localPod({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [virtualNodeRequirement] }],
          },
        },
      },
    });
    assert.equal(remotePod(onlyNode, target).spec?.affinity, undefined);
  });
});

describe("remoteNodeAffinity", () => {
  test("LocalAndRemote terms: the local-nodes term did not bring the pod here and goes with the virtual-node requirements", () => {
    const affinity = remoteNodeAffinity(
      {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                { key: "topology.kubernetes.io/region", operator: "In", values: ["eu-south"] },
              ],
            },
            { matchExpressions: [localNodesRequirement, { key: "disk", operator: "In", values: ["ssd"] }] },
          ],
        },
      },
      virtualNode,
    );
    assert.equal(
      affinity,
      undefined,
      "the matching term only named the virtual node: anywhere in the provider",
    );
  });

  test("requirements on other labels in the matching term still hold in the provider", () => {
    const affinity = remoteNodeAffinity(
      {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchExpressions: [
                virtualNodeRequirement,
                { key: "gpu", operator: "DoesNotExist" },
                { key: "kubernetes.io/os", operator: "In", values: ["linux"] },
              ],
              matchFields: [{ key: "metadata.name", operator: "In", values: ["tenantry-edge-1"] }],
            },
          ],
        },
      },
      virtualNode,
    );
    assert.deepEqual(affinity, {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              { key: "gpu", operator: "DoesNotExist" },
              { key: "kubernetes.io/os", operator: "In", values: ["linux"] },
            ],
          },
        ],
      },
    });
  });

  test("preferences lose their virtual-node requirements; empty ones go", () => {
    const affinity = remoteNodeAffinity(
      {
        preferredDuringSchedulingIgnoredDuringExecution: [
          { weight: 5, preference: { matchExpressions: [virtualNodeRequirement] } },
          {
            weight: 7,
            preference: {
              matchExpressions: [virtualNodeRequirement, { key: "zone", operator: "In", values: ["a"] }],
            },
          },
        ],
      },
      virtualNode,
    );
    assert.deepEqual(affinity, {
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 7, preference: { matchExpressions: [{ key: "zone", operator: "In", values: ["a"] }] } },
      ],
    });
  });

  test("terms the virtual node does not match (its labels changed since) leave no required part", () => {
    const affinity = remoteNodeAffinity(
      {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: "gpu", operator: "In", values: ["a100"] }] }],
        },
      },
      virtualNode,
    );
    assert.equal(affinity, undefined);
  });
});

const remoteRunning: V1Pod = {
  metadata: { name: "web-1", namespace: "shop-home" },
  status: {
    phase: "Running",
    hostIP: "127.0.0.1",
    hostIPs: [{ ip: "127.0.0.1" }],
    podIP: "10.244.3.7",
    podIPs: [{ ip: "10.244.3.7" }],
    startTime: "2026-01-01T10:00:05Z" as unknown as Date,
    qosClass: "BestEffort",
    conditions: [
      {
        type: "Ready",
        status: "True",
        lastTransitionTime: "2026-01-01T10:00:05Z" as unknown as Date,
        lastProbeTime: null as unknown as Date,
      },
    ],
    containerStatuses: [
      {
        name: "web",
        image: "nginx",
        imageID: "",
        ready: true,
        restartCount: 2,
        started: true,
        state: { running: { startedAt: "2026-01-01T10:00:05Z" as unknown as Date } },
      },
    ],
  },
};
const where = { peering: "edge-1", remoteNamespace: "shop-home" };
const now = new Date("2026-01-01T10:00:06.123Z");

describe("reflectedStatus", () => {
  test("phase, IPs, start time, container statuses and conditions come from the provider; nulls do not", () => {
    const status = reflectedStatus(remoteRunning, localPod(), where, now);
    assert.equal(status.phase, "Running");
    assert.equal(status.podIP, "10.244.3.7");
    assert.deepEqual(status.podIPs, [{ ip: "10.244.3.7" }]);
    assert.equal(status.hostIP, "127.0.0.1");
    assert.equal(status.startTime as unknown as string, "2026-01-01T10:00:05Z");
    assert.equal(status.containerStatuses?.[0]?.restartCount, 2);
    assert.equal(status.containerStatuses?.[0]?.ready, true);
    assert.equal((status as Record<string, unknown>).qosClass, undefined, "the consumer computed its own");
    assert.deepEqual(status.conditions, [
      { type: "Ready", status: "True", lastTransitionTime: "2026-01-01T10:00:05Z" },
      {
        type: "tenantry.dev/Reflected",
        status: "True",
        reason: "RemotePodCreated",
        message: "runs in cluster edge-1 as shop-home/web-1",
        lastTransitionTime: "2026-01-01T10:00:06Z",
      },
    ]);
  });

  test("a remote pod without status yet shows Pending", () => {
    const status = reflectedStatus({ metadata: { name: "web-1" } }, localPod(), where, now);
    assert.equal(status.phase, "Pending");
    assert.equal(status.podIP, undefined);
  });

  test("once written, the same remote status changes nothing (no write), a new one does", () => {
    const status = reflectedStatus(remoteRunning, localPod(), where, now);
    const written = localPod({}, { ...status, qosClass: "BestEffort" });
    assert.equal(wasReflected(written), true);
    const again = reflectedStatus(remoteRunning, written, where, new Date("2026-01-01T11:00:00Z"));
    assert.equal(statusShows(written, again), true, "transition time kept: nothing to write");
    const restarted = structuredClone(remoteRunning);
    restarted.status!.containerStatuses![0]!.restartCount = 3;
    assert.equal(statusShows(written, reflectedStatus(restarted, written, where, now)), false);
    const gone = structuredClone(remoteRunning);
    delete gone.status!.podIP;
    assert.equal(
      statusShows(written, reflectedStatus(gone, written, where, now)),
      false,
      "a field that went away",
    );
  });
});

describe("pendingStatus", () => {
  test("the provider's refusal shows on the pod, which stays Pending", () => {
    const status = pendingStatus(
      localPod(),
      "ProviderRefused",
      "cluster edge-1 refused the pod: HTTP 403: privileged",
      now,
    );
    assert.equal(status.phase, "Pending");
    assert.equal(status.reason, "ProviderRefused");
    const ready = status.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.message, "cluster edge-1 refused the pod: HTTP 403: privileged");
    assert.equal(wasReflected(localPod({}, status)), false);
    assert.equal(
      statusShows(
        localPod({}, status),
        pendingStatus(localPod({}, status), "ProviderRefused", ready!.message!, now),
      ),
      true,
    );
    assert.equal(
      statusShows(localPod({}, status), pendingStatus(localPod(), "ProviderUnavailable", "down", now)),
      false,
    );
  });
});

describe("unreachableStatus", () => {
  test("a reflected pod keeps what was last reflected but is not Ready while its provider does not answer", () => {
    const running = localPod({}, reflectedStatus(remoteRunning, localPod(), where, now));
    const later = new Date("2026-01-01T10:05:00Z");
    const status = unreachableStatus(running, "virtual node tenantry-edge-1 is not ready: no answer", later);
    assert.equal(status.phase, "Running");
    assert.equal(status.podIP, "10.244.3.7");
    assert.deepEqual(status.containerStatuses, running.status?.containerStatuses);
    const ready = status.conditions?.find((c) => c.type === "Ready");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, "NodeNotReady");
    assert.equal(String(ready?.lastTransitionTime), "2026-01-01T10:05:00Z");
    assert.ok(wasReflected(localPod({}, status)), "still known to run in the provider");
    assert.equal(statusShows(running, status), false);
    // Written once: the same outage a minute later changes nothing.
    const written = localPod({}, status);
    const again = unreachableStatus(written, ready!.message!, new Date("2026-01-01T10:06:00Z"));
    assert.equal(statusShows(written, again), true);
    // Back: the provider's own status replaces it.
    assert.equal(statusShows(written, reflectedStatus(remoteRunning, written, where, later)), false);
  });
});

describe("remotePodDrift", () => {
  test("new or changed labels and images, nothing else", () => {
    const desired = remotePod(localPod(), target);
    const remote = structuredClone(desired);
    assert.equal(remotePodDrift(remote, desired), undefined);
    remote.metadata!.labels = { ...remote.metadata!.labels, extra: "provider" };
    assert.equal(remotePodDrift(remote, desired), undefined, "labels the provider added stay");
    desired.metadata!.labels!.app = "web2";
    desired.spec!.containers[0]!.image = "nginx:2";
    assert.deepEqual(remotePodDrift(remote, desired), {
      metadata: { labels: { app: "web2" } },
      spec: { containers: [{ name: "web", image: "nginx:2" }] },
    });
  });
});
