import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { AppsV1Api, SchedulingV1Api, type V1Pod } from "@kubernetes/client-node";
import { uniqueName } from "../../support/clusters.js";
import { eventually } from "../../support/eventually.js";
import { type TestUser, testUser } from "../../support/users.js";
import {
  adminKubeConfig,
  as,
  asAdmin,
  core,
  createTenant,
  deleteTenants,
  deniedBy,
  failedWith,
  manifest,
  patchTenant,
  rbac,
  refusedBy,
  succeeded,
  WEBHOOK,
} from "./support.js";

const scheduling = adminKubeConfig.makeApiClient(SchedulingV1Api);
const apps = adminKubeConfig.makeApiClient(AppsV1Api);

describe("pods: node pool and workload safety, as the tenant says", () => {
  const strict = uniqueName("strict");
  const lenient = uniqueName("lenient");
  const strictNs = `${strict}-run`;
  const lenientNs = `${lenient}-run`;
  const lowPriority = uniqueName("tenant-low");
  const highPriority = uniqueName("tenant-high");
  let owner: TestUser;

  const pod = (
    namespace: string,
    name: string,
    spec: Record<string, unknown> = {},
    container: Record<string, unknown> = {},
  ) => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: { containers: [{ name: "app", image: "nginx", ...container }], ...spec },
  });

  before(async () => {
    owner = await testUser(uniqueName("owner"));
    for (const [name, value] of [
      [lowPriority, 100],
      [highPriority, 1000],
    ] as const) {
      await scheduling.createPriorityClass({ body: { metadata: { name }, value } });
    }
    await Promise.all([
      createTenant(strict, {
        owners: [{ kind: "User", name: owner.name }],
        namespaces: [{ name: "run" }],
        // The cluster's Pod Security admission steps aside, so that tenantry's own rules are what is tested.
        podSecurity: { level: "privileged" },
        nodePool: {
          nodeSelector: { "topology.kubernetes.io/zone": "eu-west-a" },
          tolerations: [{ key: "tenantry.dev/pool", operator: "Equal", value: strict, effect: "NoSchedule" }],
        },
        allowed: {
          priorityClasses: { names: [lowPriority] },
          storageClasses: { names: ["standard"] },
          ingressClasses: { regex: "^public-" },
        },
      }),
      createTenant(lenient, {
        owners: [{ kind: "User", name: owner.name }],
        namespaces: [{ name: "run" }],
        podSecurity: { level: "privileged" },
        allowed: {
          privileged: true,
          hostNetwork: true,
          hostPID: true,
          hostIPC: true,
          hostPath: true,
          hostPorts: true,
          allowPrivilegeEscalation: true,
          addedCapabilities: ["NET_ADMIN", "SYS_PTRACE"],
        },
      }),
    ]);
    await eventually(async () => {
      await rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: strictNs });
      await rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: lenientNs });
    });
  });

  after(async () => {
    await deleteTenants([strict, lenient]);
    for (const name of [lowPriority, highPriority])
      await scheduling.deletePriorityClass({ name }).catch(() => {});
  });

  it("a pod gets the node pool's selector and tolerations and is scheduled onto a node of the pool", async () => {
    const created = JSON.parse(
      succeeded(await as(owner, ["create", "-f", "-", "-o", "json"], manifest(pod(strictNs, "pooled")))),
    ) as V1Pod;
    assert.deepEqual(created.spec?.nodeSelector, { "topology.kubernetes.io/zone": "eu-west-a" });
    assert.deepEqual(
      created.spec?.tolerations?.find((t) => t.key === "tenantry.dev/pool"),
      { key: "tenantry.dev/pool", operator: "Equal", value: strict, effect: "NoSchedule" },
    );
    const nodeName = await eventually(async () => {
      const scheduled = await core.readNamespacedPod({ name: "pooled", namespace: strictNs });
      assert.ok(scheduled.spec?.nodeName, "not scheduled yet");
      return scheduled.spec.nodeName;
    });
    const node = await core.readNode({ name: nodeName });
    assert.equal(node.metadata?.labels?.["topology.kubernetes.io/zone"], "eu-west-a");
  });

  it("a node selector that contradicts the pool, or a node name, is refused", async () => {
    deniedBy(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(
          pod(strictNs, "elsewhere", { nodeSelector: { "topology.kubernetes.io/zone": "eu-west-b" } }),
        ),
      ),
      WEBHOOK.podDefaults,
      `spec.nodeSelector[topology.kubernetes.io/zone]: "eu-west-b" conflicts with the node pool of tenant "${strict}" (spec.nodePool.nodeSelector[topology.kubernetes.io/zone]: "eu-west-a")`,
    );
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(pod(strictNs, "pinned", { nodeName: "anything" }))),
      WEBHOOK.podSafety,
      `spec.nodeName: pods of tenant "${strict}" are placed by the scheduler within spec.nodePool; nodeName cannot be set`,
    );
  });

  const cases: {
    what: string;
    spec?: Record<string, unknown>;
    container?: Record<string, unknown>;
    message: (t: string) => string;
  }[] = [
    {
      what: "privileged",
      container: { securityContext: { privileged: true } },
      message: (t) =>
        `spec.containers[0].securityContext.privileged: privileged containers are not allowed in tenant "${t}"`,
    },
    {
      what: "hostPath",
      spec: { volumes: [{ name: "etc", hostPath: { path: "/etc" } }] },
      message: (t) => `spec.volumes[0].hostPath: hostPath volumes are not allowed in tenant "${t}"`,
    },
    {
      what: "hostNetwork",
      spec: { hostNetwork: true },
      message: (t) => `spec.hostNetwork: the host network is not allowed in tenant "${t}"`,
    },
    {
      what: "hostPID",
      spec: { hostPID: true },
      message: (t) => `spec.hostPID: the host PID namespace is not allowed in tenant "${t}"`,
    },
    {
      what: "hostIPC",
      spec: { hostIPC: true },
      message: (t) => `spec.hostIPC: the host IPC namespace is not allowed in tenant "${t}"`,
    },
    {
      what: "hostPort",
      container: { ports: [{ containerPort: 80, hostPort: 8080 }] },
      message: (t) => `spec.containers[0].ports[0].hostPort: host ports are not allowed in tenant "${t}"`,
    },
    {
      what: "added capabilities",
      container: { securityContext: { capabilities: { add: ["NET_ADMIN"] } } },
      message: (t) =>
        `spec.containers[0].securityContext.capabilities.add[0]: capability "NET_ADMIN" is not allowed in tenant "${t}" (spec.allowed.addedCapabilities: none)`,
    },
    {
      what: "allowPrivilegeEscalation",
      container: { securityContext: { allowPrivilegeEscalation: true } },
      message: (t) =>
        `spec.containers[0].securityContext.allowPrivilegeEscalation: privilege escalation is not allowed in tenant "${t}"`,
    },
  ];

  for (const c of cases) {
    it(`${c.what} is refused unless the tenant allows it`, async () => {
      const name = c.what.toLowerCase().replace(/[^a-z]+/g, "-");
      deniedBy(
        await as(owner, ["create", "-f", "-"], manifest(pod(strictNs, name, c.spec, c.container))),
        WEBHOOK.podSafety,
        c.message(strict),
      );
      succeeded(await as(owner, ["create", "-f", "-"], manifest(pod(lenientNs, name, c.spec, c.container))));
    });
  }

  it("an init container is held to the same rules", async () => {
    const spec = {
      initContainers: [{ name: "init", image: "busybox", securityContext: { privileged: true } }],
    };
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(pod(strictNs, "init", spec))),
      WEBHOOK.podSafety,
      `spec.initContainers[0].securityContext.privileged: privileged containers are not allowed in tenant "${strict}"`,
    );
  });

  it("requireRunAsNonRoot refuses containers that may run as root", async () => {
    await patchTenant(lenient, {
      allowed: {
        privileged: true,
        hostNetwork: true,
        hostPID: true,
        hostIPC: true,
        hostPath: true,
        hostPorts: true,
        allowPrivilegeEscalation: true,
        addedCapabilities: ["NET_ADMIN", "SYS_PTRACE"],
        requireRunAsNonRoot: true,
      },
    });
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(pod(lenientNs, "rooted"))),
      WEBHOOK.podSafety,
      `spec.containers[0].securityContext.runAsNonRoot: must be true in tenant "${lenient}" (spec.allowed.requireRunAsNonRoot)`,
    );
    succeeded(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(pod(lenientNs, "rootless", { securityContext: { runAsNonRoot: true, runAsUser: 1000 } })),
      ),
    );
  });

  it("ephemeral containers added with kubectl debug follow the rules", async () => {
    await eventually(async () => {
      const p = await core.readNamespacedPod({ name: "pooled", namespace: strictNs });
      assert.equal(p.status?.phase, "Running");
    });
    const debug = (profile: string) =>
      as(owner, [
        "debug",
        "pooled",
        "-n",
        strictNs,
        "--image=busybox",
        `--profile=${profile}`,
        "--container=dbg",
      ]);
    // Kubernetes' admin role does not include debugging; the cluster administrator grants it here.
    failedWith(
      await debug("general"),
      `Error from server (Forbidden): pods "pooled" is forbidden: User "${owner.name}" cannot patch resource "pods/ephemeralcontainers" in API group "" in the namespace "${strictNs}"`,
    );
    await rbac.createNamespacedRole({
      namespace: strictNs,
      body: {
        metadata: { name: "debuggers" },
        rules: [{ apiGroups: [""], resources: ["pods/ephemeralcontainers"], verbs: ["patch", "update"] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: strictNs,
      body: {
        metadata: { name: "debuggers" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "debuggers" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: owner.name }],
      },
    });
    await eventually(async () => {
      const result = await debug("sysadmin");
      assert.ok(!result.stderr.includes("cannot patch"), result.stderr);
      deniedBy(
        result,
        WEBHOOK.podSafety,
        `spec.ephemeralContainers[0].securityContext.privileged: privileged containers are not allowed in tenant "${strict}"`,
      );
    });
    succeeded(await debug("restricted"));
  });

  it("priority classes, storage classes and ingress classes are limited to the allowed ones", async () => {
    succeeded(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(pod(strictNs, "low", { priorityClassName: lowPriority })),
      ),
    );
    deniedBy(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(pod(strictNs, "high", { priorityClassName: highPriority })),
      ),
      WEBHOOK.podSafety,
      `spec.priorityClassName: priority class "${highPriority}" is not allowed in tenant "${strict}" (spec.allowed.priorityClasses: names "${lowPriority}")`,
    );
    const claim = (name: string, storageClassName: string) => ({
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: { name, namespace: strictNs },
      spec: { storageClassName, accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
    });
    succeeded(await as(owner, ["create", "-f", "-"], manifest(claim("standard", "standard"))));
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(claim("fast", "fast"))),
      WEBHOOK.classes,
      `spec.storageClassName: storage class "fast" is not allowed in tenant "${strict}" (spec.allowed.storageClasses: names "standard")`,
    );
    const ingress = (name: string, ingressClassName: string) => ({
      apiVersion: "networking.k8s.io/v1",
      kind: "Ingress",
      metadata: { name, namespace: strictNs },
      spec: { ingressClassName, defaultBackend: { service: { name: "web", port: { number: 80 } } } },
    });
    succeeded(await as(owner, ["create", "-f", "-"], manifest(ingress("public", "public-nginx"))));
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(ingress("internal", "internal"))),
      WEBHOOK.classes,
      `spec.ingressClassName: ingress class "internal" is not allowed in tenant "${strict}" (spec.allowed.ingressClasses: names matching ^public-)`,
    );
  });

  it("a cordoned tenant refuses new pods, also those its controllers create", async () => {
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace: strictNs },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "web", image: "nginx" }] },
        },
      },
    };
    succeeded(await as(owner, ["create", "-f", "-"], manifest(deployment)));
    await eventually(async () => {
      const d = await apps.readNamespacedDeployment({ name: "web", namespace: strictNs });
      assert.equal(d.status?.replicas, 1);
    });
    await patchTenant(strict, { cordoned: true });
    // A cordon freezes the owner's changes too; an administrator may still scale, and the pods the
    // ReplicaSet controller then creates are refused.
    succeeded(await asAdmin(["scale", "deployment", "web", "-n", strictNs, "--replicas=2"]));
    const message = `${refusedBy(WEBHOOK.podSafety)}metadata.namespace: tenant "${strict}" is cordoned (spec.cordoned): nothing new may be created in its namespaces`;
    await eventually(async () => {
      const sets = (await apps.listNamespacedReplicaSet({ namespace: strictNs, labelSelector: "app=web" }))
        .items;
      const failure = sets
        .flatMap((s) => s.status?.conditions ?? [])
        .find((c) => c.type === "ReplicaFailure");
      assert.ok(failure?.message?.endsWith(message), `ReplicaFailure: ${failure?.message}`);
    });
    assert.equal(
      (await core.listNamespacedPod({ namespace: strictNs, labelSelector: "app=web" })).items.length,
      1,
    );
  });
});
