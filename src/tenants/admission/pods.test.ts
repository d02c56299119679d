import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AdmissionRequest } from "../../webhooks/index.js";
import type { Tenant } from "../api/tenant.js";
import {
  checkPod,
  ephemeralContainerViolations,
  mutatePod,
  nodePoolPatch,
  type Pod,
  podViolations,
} from "./pods.js";

function tenant(spec: Partial<Tenant["spec"]> = {}): Tenant {
  return {
    apiVersion: "tenantry.dev/v1alpha1",
    kind: "Tenant",
    metadata: { name: "acme" },
    spec: { owners: [{ kind: "User", name: "alice" }], ...spec },
  } as Tenant;
}

const pod = (spec: Pod["spec"]): Pod => ({ apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec });
const plain = { containers: [{ name: "app", image: "nginx" }] };

describe("node pool", () => {
  const pooled = tenant({
    nodePool: {
      nodeSelector: { "topology.kubernetes.io/zone": "eu-west-a", pool: "acme" },
      tolerations: [{ key: "dedicated", operator: "Equal", value: "acme", effect: "NoSchedule" }],
    },
  });

  test("the pool's selector and tolerations are added to a pod that has none", () => {
    assert.deepEqual(nodePoolPatch(pod(plain), pooled), {
      allowed: true,
      patch: [
        {
          op: "add",
          path: "/spec/nodeSelector",
          value: { "topology.kubernetes.io/zone": "eu-west-a", pool: "acme" },
        },
        {
          op: "add",
          path: "/spec/tolerations",
          value: [{ key: "dedicated", operator: "Equal", value: "acme", effect: "NoSchedule" }],
        },
      ],
    });
  });

  test("a pod's own selector keys and tolerations are kept, and only what is missing added", () => {
    const own = pod({
      ...plain,
      nodeSelector: { disk: "ssd", pool: "acme" },
      tolerations: [
        { key: "dedicated", value: "acme", effect: "NoSchedule" },
        { key: "gpu", operator: "Exists" },
      ],
    });
    assert.deepEqual(nodePoolPatch(own, pooled), {
      allowed: true,
      patch: [{ op: "add", path: "/spec/nodeSelector/topology.kubernetes.io~1zone", value: "eu-west-a" }],
    });
  });

  test("a selector that contradicts the pool is refused, not overwritten", () => {
    assert.deepEqual(
      nodePoolPatch(pod({ ...plain, nodeSelector: { "topology.kubernetes.io/zone": "eu-west-b" } }), pooled),
      {
        allowed: false,
        code: 403,
        message:
          'spec.nodeSelector[topology.kubernetes.io/zone]: "eu-west-b" conflicts with the node pool of tenant "acme" (spec.nodePool.nodeSelector[topology.kubernetes.io/zone]: "eu-west-a")',
      },
    );
  });

  test("no pool, no change; with a pool, nodeName cannot bypass the scheduler", () => {
    assert.deepEqual(nodePoolPatch(pod(plain), tenant()), { allowed: true });
    assert.deepEqual(podViolations(pod({ ...plain, nodeName: "node-1" }), pooled), [
      'spec.nodeName: pods of tenant "acme" are placed by the scheduler within spec.nodePool; nodeName cannot be set',
    ]);
    assert.deepEqual(podViolations(pod({ ...plain, nodeName: "node-1" }), tenant()), []);
  });
});

describe("workload safety", () => {
  const risky: Pod["spec"] = {
    hostNetwork: true,
    hostPID: true,
    hostIPC: true,
    volumes: [{ hostPath: { path: "/etc" } }],
    initContainers: [{ name: "init", securityContext: { privileged: true } }],
    containers: [
      {
        name: "app",
        ports: [{ hostPort: 80 }],
        securityContext: {
          allowPrivilegeEscalation: true,
          capabilities: { add: ["NET_ADMIN", "CAP_NET_BIND_SERVICE"] },
        },
      },
    ],
    ephemeralContainers: [{ name: "debug", securityContext: { capabilities: { add: ["SYS_PTRACE"] } } }],
  };

  test("by default every host and privilege feature is refused, each naming its field", () => {
    assert.deepEqual(podViolations(pod(risky), tenant()), [
      'spec.hostNetwork: the host network is not allowed in tenant "acme"',
      'spec.hostPID: the host PID namespace is not allowed in tenant "acme"',
      'spec.hostIPC: the host IPC namespace is not allowed in tenant "acme"',
      'spec.volumes[0].hostPath: hostPath volumes are not allowed in tenant "acme"',
      'spec.containers[0].securityContext.allowPrivilegeEscalation: privilege escalation is not allowed in tenant "acme"',
      'spec.containers[0].securityContext.capabilities.add[0]: capability "NET_ADMIN" is not allowed in tenant "acme" (spec.allowed.addedCapabilities: none)',
      'spec.containers[0].securityContext.capabilities.add[1]: capability "CAP_NET_BIND_SERVICE" is not allowed in tenant "acme" (spec.allowed.addedCapabilities: none)',
      'spec.containers[0].ports[0].hostPort: host ports are not allowed in tenant "acme"',
      'spec.initContainers[0].securityContext.privileged: privileged containers are not allowed in tenant "acme"',
      'spec.ephemeralContainers[0].securityContext.capabilities.add[0]: capability "SYS_PTRACE" is not allowed in tenant "acme" (spec.allowed.addedCapabilities: none)',
    ]);
  });

  test("what spec.allowed switches on passes", () => {
    const permissive = tenant({
      allowed: {
        hostNetwork: true,
        hostPID: true,
        hostIPC: true,
        hostPath: true,
        hostPorts: true,
        privileged: true,
        allowPrivilegeEscalation: true,
        addedCapabilities: ["NET_ADMIN", "NET_BIND_SERVICE", "SYS_PTRACE"],
      },
    });
    assert.deepEqual(podViolations(pod(risky), permissive), []);
    const some = tenant({ allowed: { addedCapabilities: ["NET_BIND_SERVICE"] } });
    assert.deepEqual(
      podViolations(
        pod({
          containers: [{ securityContext: { capabilities: { add: ["NET_BIND_SERVICE", "NET_RAW"] } } }],
        }),
        some,
      ),
      [
        'spec.containers[0].securityContext.capabilities.add[1]: capability "NET_RAW" is not allowed in tenant "acme" (spec.allowed.addedCapabilities: NET_BIND_SERVICE)',
      ],
    );
  });

  test("requireRunAsNonRoot wants runAsNonRoot on the container or the pod, and no UID 0", () => {
    const strict = tenant({ allowed: { requireRunAsNonRoot: true } });
    assert.deepEqual(podViolations(pod(plain), strict), [
      'spec.containers[0].securityContext.runAsNonRoot: must be true in tenant "acme" (spec.allowed.requireRunAsNonRoot)',
    ]);
    assert.deepEqual(podViolations(pod({ ...plain, securityContext: { runAsNonRoot: true } }), strict), []);
    assert.deepEqual(
      podViolations(
        pod({ securityContext: { runAsNonRoot: true }, containers: [{ securityContext: { runAsUser: 0 } }] }),
        strict,
      ),
      [
        'spec.containers[0].securityContext.runAsUser: 0 (root) is not allowed in tenant "acme" (spec.allowed.requireRunAsNonRoot)',
      ],
    );
  });

  test("priority classes and ephemeral volumes' storage classes must be allowed", () => {
    const classes = tenant({
      allowed: {
        priorityClasses: { names: ["low"], regex: "^gold-" },
        storageClasses: { names: ["standard"] },
      },
    });
    assert.deepEqual(podViolations(pod({ ...plain, priorityClassName: "gold-1" }), classes), []);
    assert.deepEqual(
      podViolations(pod({ ...plain, priorityClassName: "system-cluster-critical" }), classes),
      [
        'spec.priorityClassName: priority class "system-cluster-critical" is not allowed in tenant "acme" (spec.allowed.priorityClasses: names "low" or names matching ^gold-)',
      ],
    );
    const scratch = { ephemeral: { volumeClaimTemplate: { spec: { storageClassName: "fast" } } } };
    assert.deepEqual(podViolations(pod({ ...plain, volumes: [scratch] }), classes), [
      'spec.volumes[0].ephemeral.volumeClaimTemplate.spec.storageClassName: storage class "fast" is not allowed in tenant "acme" (spec.allowed.storageClasses: names "standard")',
    ]);
  });

  test("ephemeral containers added later are judged; those already there are not", () => {
    const before = pod({
      ...plain,
      ephemeralContainers: [{ name: "old", securityContext: { privileged: true } }],
    });
    const after = pod({
      ...plain,
      ephemeralContainers: [
        { name: "old", securityContext: { privileged: true } },
        { name: "new", securityContext: { privileged: true } },
      ],
    });
    assert.deepEqual(ephemeralContainerViolations(before, after, tenant()), [
      'spec.ephemeralContainers[1].securityContext.privileged: privileged containers are not allowed in tenant "acme"',
    ]);
  });

  test("a cordoned tenant refuses every new pod, whoever creates it", () => {
    const request: AdmissionRequest = {
      uid: "1",
      kind: { group: "", version: "v1", kind: "Pod" },
      resource: { group: "", version: "v1", resource: "pods" },
      namespace: "acme-dev",
      operation: "CREATE",
      userInfo: { username: "system:serviceaccount:kube-system:replicaset-controller" },
      object: pod(plain),
    };
    assert.equal(
      checkPod(request, tenant({ cordoned: true })),
      'metadata.namespace: tenant "acme" is cordoned (spec.cordoned): nothing new may be created in its namespaces',
    );
    assert.equal(checkPod(request, tenant()), undefined);
  });
});

function podRequest(
  operation: "CREATE" | "UPDATE",
  object: Pod,
  oldObject?: Pod,
  subResource?: string,
): AdmissionRequest {
  return {
    uid: "1",
    kind: { group: "", version: "v1", kind: "Pod" },
    resource: { group: "", version: "v1", resource: "pods" },
    namespace: "acme-dev",
    operation,
    userInfo: { username: "alice" },
    object,
    ...(oldObject ? { oldObject } : {}),
    ...(subResource ? { subResource } : {}),
  };
}

describe("images, pull policies and runtime classes", () => {
  const guarded = tenant({
    allowed: {
      containerRegistries: { names: ["docker.io/library", "quay.io/acme"] },
      imagePullPolicies: ["Always"],
      runtimeClasses: { names: ["gvisor"] },
    },
  });

  test("images from other registries, pull policies and runtime classes the tenant does not allow are refused", () => {
    const bad = pod({
      runtimeClassName: "kata",
      initContainers: [{ name: "init", image: "ghcr.io/x/init:1", imagePullPolicy: "Always" }],
      containers: [{ name: "app", image: "nginx:1.27", imagePullPolicy: "Never" }],
    });
    assert.deepEqual(podViolations(bad, guarded), [
      'spec.containers[0].imagePullPolicy: "Never" is not allowed in tenant "acme" (spec.allowed.imagePullPolicies: Always)',
      'spec.initContainers[0].image: image "ghcr.io/x/init:1" (ghcr.io/x/init, registry "ghcr.io") is not allowed in tenant "acme" (spec.allowed.containerRegistries: names "docker.io/library", "quay.io/acme")',
      'spec.runtimeClassName: runtime class "kata" is not allowed in tenant "acme" (spec.allowed.runtimeClasses: names "gvisor")',
    ]);
    const good = pod({
      runtimeClassName: "gvisor",
      containers: [{ name: "app", image: "quay.io/acme/app:2", imagePullPolicy: "Always" }],
    });
    assert.deepEqual(podViolations(good, guarded), []);
    assert.deepEqual(
      podViolations(
        pod({ containers: [{ name: "app", image: "nginx", imagePullPolicy: "Always" }] }),
        guarded,
      ),
      [],
      "no runtime class: the cluster's default handler",
    );
  });

  test("a pull policy the API server filled in is changed to an allowed one; one the author chose is not", () => {
    const created = pod({
      containers: [
        { name: "tagged", image: "nginx:1.27", imagePullPolicy: "IfNotPresent" },
        { name: "latest", image: "nginx", imagePullPolicy: "Always" },
        { name: "chosen", image: "nginx:1.27", imagePullPolicy: "Never" },
      ],
    });
    assert.deepEqual(mutatePod(podRequest("CREATE", created), guarded), {
      allowed: true,
      patch: [{ op: "add", path: "/spec/containers/0/imagePullPolicy", value: "Always" }],
    });
  });

  test("an image changed on a running pod must come from an allowed registry", () => {
    const before = pod({ containers: [{ name: "app", image: "quay.io/acme/app:1" }] });
    const after = pod({ containers: [{ name: "app", image: "evil.example/app:1" }] });
    assert.equal(
      checkPod(podRequest("UPDATE", after, before), guarded),
      'spec.containers[0].image: image "evil.example/app:1" (evil.example/app, registry "evil.example") is not allowed in tenant "acme" (spec.allowed.containerRegistries: names "docker.io/library", "quay.io/acme")',
    );
    assert.equal(checkPod(podRequest("UPDATE", before, before), guarded), undefined);
  });
});

describe("restricted pod security defaults", () => {
  const restricted = tenant({ podSecurity: { level: "restricted" } });

  test("what the restricted profile requires and the pod leaves unset is filled in", () => {
    const bare = pod({
      containers: [{ name: "app", image: "nginx" }],
      initContainers: [
        { name: "init", image: "nginx", securityContext: { capabilities: { add: ["NET_BIND_SERVICE"] } } },
      ],
    });
    assert.deepEqual(mutatePod(podRequest("CREATE", bare), restricted), {
      allowed: true,
      patch: [
        {
          op: "add",
          path: "/spec/securityContext",
          value: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
        },
        {
          op: "add",
          path: "/spec/containers/0/securityContext",
          value: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
        },
        { op: "add", path: "/spec/initContainers/0/securityContext/allowPrivilegeEscalation", value: false },
        { op: "add", path: "/spec/initContainers/0/securityContext/capabilities/drop", value: ["ALL"] },
      ],
    });
  });

  test("what the pod sets is kept for Pod Security to judge; other levels and Windows pods are left alone", () => {
    const explicit = pod({
      securityContext: { runAsNonRoot: false, seccompProfile: { type: "Unconfined" } },
      containers: [
        {
          name: "app",
          securityContext: { privileged: true, capabilities: { drop: [] } },
        },
      ],
    });
    assert.deepEqual(mutatePod(podRequest("CREATE", explicit), restricted), { allowed: true });
    const bare = pod({ containers: [{ name: "app", image: "nginx" }] });
    assert.deepEqual(mutatePod(podRequest("CREATE", bare), tenant({ podSecurity: { level: "baseline" } })), {
      allowed: true,
    });
    assert.deepEqual(
      mutatePod(
        podRequest("CREATE", { ...bare, spec: { ...bare.spec, os: { name: "windows" } } }),
        restricted,
      ),
      {
        allowed: true,
      },
    );
  });

  test("a debug container added later gets the container defaults and an allowed pull policy", () => {
    const before = pod({ containers: [{ name: "app" }] });
    const after = pod({
      containers: [{ name: "app" }],
      ephemeralContainers: [{ name: "debug", image: "busybox:1.36", imagePullPolicy: "IfNotPresent" }],
    });
    const both = tenant({ podSecurity: { level: "restricted" }, allowed: { imagePullPolicies: ["Always"] } });
    assert.deepEqual(mutatePod(podRequest("UPDATE", after, before, "ephemeralcontainers"), both), {
      allowed: true,
      patch: [
        { op: "add", path: "/spec/ephemeralContainers/0/imagePullPolicy", value: "Always" },
        {
          op: "add",
          path: "/spec/ephemeralContainers/0/securityContext",
          value: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
        },
      ],
    });
  });
});
