/**
 * The Multi-Tenancy Benchmarks (kubernetes-sigs/multi-tenancy, kubectl-mtb) of profile levels 1
 * and 2, run against two tenants made by `tenantry tenant create` with nothing but an owner and a
 * namespace: tenantry's defaults alone must pass. Each check does what kubectl-mtb's does (access
 * reviews as the tenant owner, dry-run creations that must fail), and a refusal must be for the
 * reason checked: the compliant pod each pod check starts from is admitted first. Where tenantry
 * works differently the check is adapted and says how: the quota is tenant-wide (one
 * TenantResourceQuota, not a ResourceQuota per namespace). Network isolation is checked with
 * connections between pods of the home cluster's process node.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  RbacAuthorizationV1Api,
} from "@kubernetes/client-node";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl, patchTenant, tenantryCli } from "../support/kubectl.js";
import { reachable, serverPod } from "../support/netpol.js";
import { type TestUser, testUser } from "../support/users.js";

const env = testEnvironment();
const adminKubeconfig = env.clusters.find((c) => c.name === "home")!.kubeconfig;
const admin = testKubeConfig("home");
const custom = admin.makeApiClient(CustomObjectsApi);
const ALL_VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"];
/**
 * The verbs kubectl-mtb itself reviews for every resource of the cluster (its audit text names all
 * eight, its code asks these two): reading and changing.
 */
const MTB_VERBS = ["get", "update"];

interface ApiResource {
  group: string;
  resource: string;
}

/** Every resource the API server serves in its preferred version, as `kubectl api-resources` lists them. */
async function apiResources(namespaced: boolean): Promise<ApiResource[]> {
  const listed = await kubectl(adminKubeconfig, [
    "api-resources",
    `--namespaced=${namespaced}`,
    "-o",
    "name",
  ]);
  assert.equal(listed.code, 0, listed.stderr);
  return listed.stdout
    .split("\n")
    .filter(Boolean)
    .map((name) => {
      const dot = name.indexOf(".");
      return dot < 0
        ? { group: "", resource: name }
        : { group: name.slice(dot + 1), resource: name.slice(0, dot) };
    });
}

/** What a SelfSubjectAccessReview of `user` allows, among these resources and verbs. */
async function allowed(
  user: KubeConfig,
  namespace: string | undefined,
  resources: ApiResource[],
  verbs: string[],
  name?: string,
): Promise<string[]> {
  const api = user.makeApiClient(AuthorizationV1Api);
  const checks = resources.flatMap((r) => verbs.map((verb) => ({ ...r, verb })));
  const granted: string[] = [];
  // A few at a time: each review also asks tenantry's authorization webhook.
  for (let i = 0; i < checks.length; i += 32) {
    const batch = checks.slice(i, i + 32);
    const answers = await Promise.all(
      batch.map((c) =>
        api.createSelfSubjectAccessReview({
          body: {
            spec: {
              resourceAttributes: {
                group: c.group,
                resource: c.resource,
                verb: c.verb,
                ...(namespace ? { namespace } : {}),
                ...(name ? { name } : {}),
              },
            },
          },
        }),
      ),
    );
    answers.forEach((answer, j) => {
      const c = batch[j]!;
      if (answer.status?.allowed)
        granted.push(`${c.verb} ${c.group ? `${c.resource}.${c.group}` : c.resource}`);
    });
  }
  return granted.sort();
}

/** A pod that the restricted profile and the default tenant admit; each pod check breaks one thing in it. */
function compliantPod(namespace: string, name: string) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace },
    spec: {
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 1000,
        fsGroup: 1000,
        seccompProfile: { type: "RuntimeDefault" },
      },
      containers: [
        {
          name: "app",
          image: "busybox:1.36",
          imagePullPolicy: "Always",
          command: ["/bin/sh", "-c", "sleep 3600"],
          securityContext: {
            runAsNonRoot: true,
            privileged: false,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ["ALL"] },
          },
        },
      ],
    },
  };
}

type PodManifest = ReturnType<typeof compliantPod>;

/**
 * What every tenant user may do at cluster scope: creating namespaces is the tenant's self-service
 * (admission keeps them in the tenant and within its namespaceQuota); self-reviews are what every
 * user may ask about themselves.
 */
const SELF_SERVICE = [
  "create namespaces",
  "create selfsubjectaccessreviews.authorization.k8s.io",
  "create selfsubjectreviews.authentication.k8s.io",
  "create selfsubjectrulesreviews.authorization.k8s.io",
];

describe("Multi-Tenancy Benchmarks, profile levels 1 and 2, against tenants created with tenantry's defaults", () => {
  const [tenantA, tenantB] = [uniqueName("mtba"), uniqueName("mtbb")];
  const [nsA, nsB] = [`${tenantA}-a1`, `${tenantB}-b1`];
  let ownerA: TestUser;
  let ownerB: TestUser;

  /** Creates as tenant A's owner with `--dry-run=server`: what admission would do, without a trace. */
  const dryRunCreate = (object: object) =>
    kubectl(
      ownerA.kubeconfigPath,
      ["create", "--dry-run=server", "-o", "json", "-f", "-"],
      JSON.stringify(object),
    );

  async function refused(object: object, reason: RegExp): Promise<void> {
    const result = await dryRunCreate(object);
    assert.notEqual(result.code, 0, `admitted, but must be refused: ${JSON.stringify(object)}`);
    assert.match(result.stderr, reason);
  }

  async function podRefused(change: (pod: PodManifest) => void, reason: RegExp): Promise<void> {
    const pod = compliantPod(nsA, uniqueName("mtb"));
    change(pod);
    await refused(pod, reason);
  }

  before(async () => {
    [ownerA, ownerB] = await Promise.all([testUser(uniqueName("mtb-own")), testUser(uniqueName("mtb-own"))]);
    for (const [tenant, owner, namespace] of [
      [tenantA, ownerA, "a1"],
      [tenantB, ownerB, "b1"],
    ] as const) {
      const created = await tenantryCli([
        "tenant",
        "create",
        tenant,
        "--owner",
        `User:${owner.name}`,
        "--namespace",
        namespace,
        "--kubeconfig",
        adminKubeconfig,
      ]);
      assert.equal(created.code, 0, created.stderr);
    }
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await eventually(
      async () => {
        await rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: nsA });
        await rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: nsB });
        // The default container limits are in place before the first pod.
        await admin
          .makeApiClient(CoreV1Api)
          .readNamespacedLimitRange({ name: "tenantry-defaults", namespace: nsA });
      },
      { timeoutMs: 60_000 },
    );
  });

  after(async () => {
    for (const tenant of [tenantA, tenantB])
      await tenantryCli(["tenant", "delete", tenant, "--kubeconfig", adminKubeconfig]);
  });

  it("a plain `kubectl run` still works: defaults fill in what the checks below require", async () => {
    const result = await kubectl(ownerA.kubeconfigPath, [
      "-n",
      nsA,
      "run",
      "web",
      "--image=nginx:1.27",
      "--dry-run=server",
      "-o",
      "json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const pod = JSON.parse(result.stdout);
    const container = pod.spec.containers[0];
    assert.equal(container.imagePullPolicy, "Always");
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(container.securityContext.capabilities.drop, ["ALL"]);
    assert.equal(pod.spec.securityContext.runAsNonRoot, true);
    assert.equal(container.resources.limits["ephemeral-storage"], "1Gi");
    const compliant = await dryRunCreate(compliantPod(nsA, "compliant"));
    assert.equal(compliant.code, 0, `the compliant pod must pass: ${compliant.stderr}`);
  });

  describe("profile level 1", () => {
    it("MTB-PL1-CC-CPI-1 block access to cluster resources", async () => {
      const clusterScoped = await apiResources(false);
      const atClusterScope = await allowed(ownerA.kubeConfig, undefined, clusterScoped, [
        ...MTB_VERBS,
        "create",
      ]);
      assert.deepEqual(
        atClusterScope.filter((g) => !SELF_SERVICE.includes(g)),
        [],
      );
      // kubectl-mtb asks inside the tenant namespace: there an owner reads and deletes their own
      // Namespace object (a RoleBinding in a namespace covers that namespace), nothing else.
      const inNamespace = await allowed(ownerA.kubeConfig, nsA, clusterScoped, MTB_VERBS);
      assert.deepEqual(
        inNamespace.filter(
          (g) => !SELF_SERVICE.includes(g) && !/^(get|list|watch|delete) namespaces$/.test(g),
        ),
        [],
      );
    });

    it("MTB-PL1-CC-CPI-1 block access to cluster resources, every verb, for the owner and a member of a default tenant", async () => {
      // A default tenant has no spec.workerNodes: its users get nothing of WorkerNodes and
      // NodeProviders either (only their own WorkerNodes, in tenants that may have some).
      const member = await testUser(uniqueName("mtb-mem"));
      await patchTenant(adminKubeconfig, tenantA, { users: [{ name: member.name, role: "edit" }] });
      await eventually(
        async () =>
          assert.deepEqual(
            await allowed(member.kubeConfig, nsA, [{ group: "", resource: "pods" }], ["create"]),
            ["create pods"],
          ),
        { timeoutMs: 60_000 },
      );
      const clusterScoped = await apiResources(false);
      for (const [who, user] of [
        ["owner", ownerA],
        ["member", member],
      ] as const) {
        const granted = await allowed(user.kubeConfig, undefined, clusterScoped, ALL_VERBS);
        assert.deepEqual(
          granted.filter((g) => !SELF_SERVICE.includes(g)),
          [],
          `the ${who} of a default tenant at cluster scope`,
        );
        const named = await allowed(
          user.kubeConfig,
          undefined,
          [
            { group: "tenantry.dev", resource: "workernodes" },
            { group: "tenantry.dev", resource: "nodeproviders" },
          ],
          ALL_VERBS,
          "simulated",
        );
        assert.deepEqual(named, [], `the ${who}, naming an object`);
      }
    });

    it("MTB-PL1-BC-CPI-2 block multi-tenant resources: what tenantry set up cannot be changed or deleted", async () => {
      const managed = await kubectl(adminKubeconfig, [
        "-n",
        nsA,
        "get",
        "networkpolicies,limitranges,rolebindings,roles",
        "-l",
        "app.kubernetes.io/managed-by=tenantry",
        "-o",
        "name",
      ]);
      assert.equal(managed.code, 0, managed.stderr);
      const names = managed.stdout.split("\n").filter(Boolean);
      assert.ok(names.length >= 4, `tenantry's objects in ${nsA}: ${names.join(", ")}`);
      for (const name of names) {
        const deleted = await kubectl(ownerA.kubeconfigPath, ["-n", nsA, "delete", name, "--dry-run=server"]);
        assert.notEqual(deleted.code, 0, `the owner deleted ${name}`);
        const annotated = await kubectl(ownerA.kubeconfigPath, [
          "-n",
          nsA,
          "annotate",
          name,
          "key1=value1",
          "--dry-run=server",
        ]);
        assert.notEqual(annotated.code, 0, `the owner changed ${name}`);
      }
    });

    it("MTB-PL1-BC-CPI-3 block add capabilities", () =>
      podRefused((pod) => {
        pod.spec.containers[0]!.securityContext.capabilities = { drop: ["ALL"], add: ["SYS_TIME"] } as never;
      }, /capabilities|SYS_TIME/));

    it("MTB-PL1-BC-CPI-4 require run as non-root user", async () => {
      await podRefused((pod) => {
        pod.spec.securityContext.runAsNonRoot = false;
        pod.spec.containers[0]!.securityContext.runAsNonRoot = false;
      }, /runAsNonRoot/);
      await podRefused((pod) => {
        pod.spec.securityContext.runAsUser = 0;
      }, /runAsUser/);
    });

    it("MTB-PL1-BC-CPI-5 block privileged containers", () =>
      podRefused((pod) => {
        pod.spec.containers[0]!.securityContext.privileged = true;
        pod.spec.containers[0]!.securityContext.allowPrivilegeEscalation = true;
      }, /privileged/));

    it("MTB-PL1-BC-CPI-6 block privilege escalation", () =>
      podRefused((pod) => {
        pod.spec.containers[0]!.securityContext.allowPrivilegeEscalation = true;
      }, /allowPrivilegeEscalation/));

    it("MTB-PL1-BC-HI-1 block use of host path volumes and bind mounts", () =>
      podRefused((pod) => {
        Object.assign(pod.spec, { volumes: [{ name: "host", hostPath: { path: "/tmp/busybox" } }] });
        Object.assign(pod.spec.containers[0]!, { volumeMounts: [{ name: "host", mountPath: "/mnt/host" }] });
      }, /hostPath/));

    it("MTB-PL1-BC-HI-1 block use of NodePort services", () =>
      refused(
        {
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "nodeport", namespace: nsA },
          spec: { type: "NodePort", ports: [{ port: 80 }] },
        },
        /NodePort/,
      ));

    it("MTB-PL1-BC-HI-3 block use of host networking and ports", async () => {
      await podRefused((pod) => Object.assign(pod.spec, { hostNetwork: true }), /hostNetwork|host network/);
      await podRefused(
        (pod) => Object.assign(pod.spec.containers[0]!, { ports: [{ containerPort: 8080, hostPort: 8080 }] }),
        /hostPort/,
      );
    });

    it("MTB-PL1-BC-HI-4 block use of host PID", () =>
      podRefused((pod) => Object.assign(pod.spec, { hostPID: true }), /hostPID|host PID/));

    it("MTB-PL1-BC-HI-5 block use of host IPC", () =>
      podRefused((pod) => Object.assign(pod.spec, { hostIPC: true }), /hostIPC|host IPC/));

    it("MTB-PL1-CC-DI-1 require always imagePullPolicy", () =>
      podRefused((pod) => {
        pod.spec.containers[0]!.imagePullPolicy = "Never";
      }, /imagePullPolicy: "Never" is not allowed/));

    it("MTB-PL1-CC-TI-1 block modification of resource quotas", async () => {
      const quotas = [{ group: "", resource: "resourcequotas" }];
      assert.deepEqual(
        await allowed(ownerA.kubeConfig, nsA, quotas, [
          "create",
          "update",
          "patch",
          "delete",
          "deletecollection",
        ]),
        [],
      );
      // tenantry's tenant-wide quota is cluster-scoped: out of reach as well.
      const tenantQuotas = [{ group: "tenantry.dev", resource: "tenantresourcequotas" }];
      assert.deepEqual(await allowed(ownerA.kubeConfig, undefined, tenantQuotas, ALL_VERBS.slice(3)), []);
    });

    it("MTB-PL1-CC-FNS-1 configure resource quotas (tenant-wide): cpu, memory and ephemeral storage are limited", async () => {
      const quota = (await custom.getClusterCustomObject({
        group: "tenantry.dev",
        version: "v1alpha1",
        plural: "tenantresourcequotas",
        name: tenantA,
      })) as { spec: { hard: Record<string, string> } };
      const names = Object.keys(quota.spec.hard).join(" ");
      for (const resource of ["cpu", "memory", "ephemeral-storage"])
        assert.match(names, new RegExp(resource));
      // And it holds: a pod asking for more ephemeral storage than the tenant has is refused.
      await podRefused((pod) => {
        Object.assign(pod.spec.containers[0]!, {
          resources: { requests: { "ephemeral-storage": "100Ti" }, limits: { "ephemeral-storage": "100Ti" } },
        });
      }, /ephemeral-storage/);
    });

    it("MTB-PL1-CC-FNS-2 configure object quotas (tenant-wide)", async () => {
      const quota = (await custom.getClusterCustomObject({
        group: "tenantry.dev",
        version: "v1alpha1",
        plural: "tenantresourcequotas",
        name: tenantA,
      })) as { spec: { hard: Record<string, string> } };
      for (const resource of [
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
      ])
        assert.ok(quota.spec.hard[resource] !== undefined, `no quota on ${resource}`);
    });
  });

  describe("profile level 2", () => {
    it("MTB-PL1-CC-TI-2 (level 2) block access to other tenants' resources", async () => {
      const namespaced = await apiResources(true);
      assert.deepEqual(await allowed(ownerA.kubeConfig, nsB, namespaced, MTB_VERBS), []);
      assert.deepEqual(await allowed(ownerB.kubeConfig, nsA, namespaced, MTB_VERBS), []);
    });

    it("MTB-PL2-CC-TI-1 block role privilege escalation", async () => {
      const rbacGroup = "rbac.authorization.k8s.io";
      assert.deepEqual(
        await allowed(ownerA.kubeConfig, nsA, [{ group: rbacGroup, resource: "roles" }], ["escalate"]),
        [],
      );
      assert.deepEqual(
        await allowed(
          ownerA.kubeConfig,
          nsA,
          [{ group: rbacGroup, resource: "clusterroles" }],
          ["bind"],
          "cluster-admin",
        ),
        [],
      );
    });

    it("MTB-PL2-BC-OPS-3 create role bindings", async () => {
      const rbacGroup = "rbac.authorization.k8s.io";
      const resources = [
        { group: rbacGroup, resource: "roles" },
        { group: rbacGroup, resource: "rolebindings" },
      ];
      assert.equal((await allowed(ownerA.kubeConfig, nsA, resources, ALL_VERBS)).length, 16);
      const role = {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: "role-sample", namespace: nsA },
        rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get"] }],
      };
      const created = await kubectl(ownerA.kubeconfigPath, ["create", "-f", "-"], JSON.stringify(role));
      assert.equal(created.code, 0, created.stderr);
      const binding = await dryRunCreate({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "RoleBinding",
        metadata: { name: "rolebinding-sample", namespace: nsA },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "role-sample" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: ownerA.name }],
      });
      assert.equal(binding.code, 0, binding.stderr);
    });

    it("MTB-PL2-BC-OPS-4 create network policies", async () => {
      const policies = [{ group: "networking.k8s.io", resource: "networkpolicies" }];
      const verbs = ["get", "create", "update", "patch", "delete", "deletecollection"];
      assert.equal((await allowed(ownerA.kubeConfig, nsA, policies, verbs)).length, verbs.length);
    });

    it("MTB-PL1-BC-NI-1 (level 2) default deny network connections across tenants: checked with connections", async () => {
      const core = admin.makeApiClient(CoreV1Api);
      // The pods run on the process node (placed there by the cluster admin: a tenant may not tolerate
      // its taint), so their packets really cross the pod network and its policies.
      const server = await serverPod(core, nsA, "server", { app: "server" }, [8080]);
      const allowedNs = uniqueName("mtb-monitoring");
      const strangerNs = uniqueName("mtb-stranger");
      for (const name of [allowedNs, strangerNs])
        await core.createNamespace({ body: { metadata: { name, labels: { purpose: name } } } });
      try {
        await patchTenant(adminKubeconfig, tenantA, {
          networkIsolation: { allowFromNamespaces: [{ matchLabels: { purpose: allowedNs } }] },
        });
        const clients = {
          sameTenant: await serverPod(core, nsA, "neighbour", { app: "neighbour" }, [8080]),
          otherTenant: await serverPod(core, nsB, "intruder", { app: "intruder" }, [8080]),
          allowedSystem: await serverPod(core, allowedNs, "scraper", { app: "scraper" }, [8080]),
          stranger: await serverPod(core, strangerNs, "stranger", { app: "stranger" }, [8080]),
        };
        const target = [`${server.ip}:8080`];
        await eventually(
          async () => {
            const [same, other, system, stranger] = await Promise.all([
              reachable(clients.sameTenant, target),
              reachable(clients.otherTenant, target),
              reachable(clients.allowedSystem, target),
              reachable(clients.stranger, target),
            ]);
            assert.deepEqual(
              { same, other, system, stranger },
              { same: [true], other: [false], system: [true], stranger: [false] },
              "who connects to tenant A's pod",
            );
          },
          { timeoutMs: 60_000, intervalMs: 1000 },
        );
        // The machine (where the runtimes proxy runs) reaches the pod at its address, as a node reaches its pods.
        assert.equal((await fetch(`http://${server.ip}:8080/`)).status, 200);
      } finally {
        for (const name of [allowedNs, strangerNs]) await core.deleteNamespace({ name }).catch(() => {});
      }
    });
  });
});
