import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Namespace,
  type V1Pod,
} from "@kubernetes/client-node";
import { ClusterClient, Informer } from "../../src/kube/index.js";
import { QuotaAdmission, QuotaStore, type TenantResourceQuota } from "../../src/tenants/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { type TestUser, testUser } from "../support/users.js";

const group = { group: "tenantry.dev", version: "v1alpha1" };

function pod(name: string, requests: Record<string, string> = {}): V1Pod {
  return {
    metadata: { name },
    spec: { containers: [{ name: "c", image: "nginx", resources: { requests, limits: requests } }] },
  };
}

async function outcome(p: Promise<unknown>): Promise<{ ok: boolean; message: string }> {
  try {
    await p;
    return { ok: true, message: "" };
  } catch (err) {
    const body = String((err as { body?: unknown }).body ?? err);
    return { ok: false, message: body };
  }
}

describe("tenant-wide quota (TenantResourceQuota)", () => {
  let admin: KubeConfig;
  let owner: TestUser;
  let custom: CustomObjectsApi;
  const tenant = uniqueName("q");
  const namespaces = ["a", "b", "c", "d", "e"].map((n) => `${tenant}-${n}`);

  const readQuota = async (name: string) =>
    (await custom.getClusterCustomObject({ ...group, plural: "tenantresourcequotas", name })) as {
      status?: { used?: Record<string, string>; reservations?: unknown[] };
    };

  before(async () => {
    admin = testKubeConfig("home");
    custom = admin.makeApiClient(CustomObjectsApi);
    owner = await testUser(`owner-${tenant}`);
    await custom.createClusterCustomObject({
      ...group,
      plural: "tenants",
      body: {
        apiVersion: "tenantry.dev/v1alpha1",
        kind: "Tenant",
        metadata: { name: tenant },
        spec: {
          owners: [{ kind: "User", name: owner.name }],
          namespaces: ["a", "b", "c", "d", "e"].map((name) => ({ name })),
          quota: {
            hard: {
              pods: "20",
              "requests.cpu": "100",
              "requests.dummy/dummyResource": "3",
              "count/deployments.apps": "1",
            },
          },
        },
      },
    });
    const core = admin.makeApiClient(CoreV1Api);
    // The owner can act once the controller bound them to admin in every namespace.
    await eventually(async () => {
      for (const ns of namespaces) await core.readNamespace({ name: ns });
      await owner.kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: namespaces[4]! });
    });
    await eventually(async () => {
      const q = await readQuota(tenant);
      assert.equal(q.status?.used?.pods, "0");
    });
  });

  after(async () => {
    await custom.deleteClusterCustomObject({ ...group, plural: "tenants", name: tenant }).catch(() => {});
  });

  test("50 concurrent pod creates over 5 namespaces against a limit of 20 admit exactly 20", async () => {
    const core = owner.kubeConfig.makeApiClient(CoreV1Api);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        outcome(
          core.createNamespacedPod({ namespace: namespaces[i % 5]!, body: pod(`p${i}`, { cpu: "100m" }) }),
        ),
      ),
    );
    for (const denied of results.filter((r) => !r.ok)) {
      assert.match(
        denied.message,
        new RegExp(
          `exceeded quota of tenant \\\\?"${tenant}\\\\?" \\(TenantResourceQuota ${tenant}\\): pods: requested 1, used \\d+, reserved \\d+, limited to 20`,
        ),
      );
    }
    // Counted after the messages, so a refusal for any other reason (a timeout, an error) shows itself.
    const admitted = results.filter((r) => r.ok).length;
    assert.equal(admitted, 20);
    await eventually(async () => {
      const q = await readQuota(tenant);
      assert.equal(q.status?.used?.pods, "20");
      assert.equal(q.status?.used?.["requests.cpu"], "2");
      assert.deepEqual(q.status?.reservations, []);
    });
  });

  test("deleting 5 pods lets exactly 5 more in", async () => {
    const core = owner.kubeConfig.makeApiClient(CoreV1Api);
    const existing = (
      await admin
        .makeApiClient(CoreV1Api)
        .listPodForAllNamespaces({ labelSelector: `tenantry.dev/tenant=${tenant}` })
    ).items;
    const all =
      existing.length > 0
        ? existing
        : (await Promise.all(namespaces.map((namespace) => core.listNamespacedPod({ namespace })))).flatMap(
            (l) => l.items,
          );
    const victims = all.slice(0, 5);
    await Promise.all(
      victims.map((p) =>
        core.deleteNamespacedPod({
          name: p.metadata!.name!,
          namespace: p.metadata!.namespace!,
          gracePeriodSeconds: 0,
        }),
      ),
    );
    await eventually(async () => {
      const q = await readQuota(tenant);
      assert.equal(q.status?.used?.pods, "15");
    });
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        outcome(core.createNamespacedPod({ namespace: namespaces[i % 5]!, body: pod(`again${i}`) })),
      ),
    );
    assert.equal(results.filter((r) => r.ok).length, 5);
  });

  test("extended resources and object counts are limited too", async () => {
    const core = owner.kubeConfig.makeApiClient(CoreV1Api);
    // Make room: the pods test filled the pod quota.
    const pods = (
      await Promise.all(namespaces.map((namespace) => core.listNamespacedPod({ namespace })))
    ).flatMap((l) => l.items);
    await Promise.all(
      pods.map((p) =>
        core.deleteNamespacedPod({
          name: p.metadata!.name!,
          namespace: p.metadata!.namespace!,
          gracePeriodSeconds: 0,
        }),
      ),
    );
    await eventually(async () => {
      const q = await readQuota(tenant);
      assert.equal(q.status?.used?.pods, "0");
    });
    const first = await outcome(
      core.createNamespacedPod({
        namespace: namespaces[0]!,
        body: pod("gpu1", { "dummy/dummyResource": "2" }),
      }),
    );
    assert.ok(first.ok, first.message);
    const second = await outcome(
      core.createNamespacedPod({
        namespace: namespaces[1]!,
        body: pod("gpu2", { "dummy/dummyResource": "2" }),
      }),
    );
    assert.ok(!second.ok);
    assert.match(
      second.message,
      /requests.dummy\/dummyResource: requested 2, used [02], reserved [02], limited to 3/,
    );

    const apps = owner.kubeConfig.makeApiClient(AppsV1Api);
    const deployment = (name: string) => ({
      metadata: { name },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: { containers: [{ name: "c", image: "nginx" }] },
        },
      },
    });
    assert.ok(
      (await outcome(apps.createNamespacedDeployment({ namespace: namespaces[2]!, body: deployment("one") })))
        .ok,
    );
    const over = await outcome(
      apps.createNamespacedDeployment({ namespace: namespaces[3]!, body: deployment("two") }),
    );
    assert.ok(!over.ok);
    assert.match(
      over.message,
      /count\/deployments.apps: requested 1, used [01], reserved [01], limited to 1/,
    );
  });
});

describe("tenant-wide quota on dry runs and growing updates", () => {
  const tenant = uniqueName("qg");
  const namespace = `${tenant}-a`;
  let admin: KubeConfig;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;

  before(async () => {
    admin = testKubeConfig("home");
    core = admin.makeApiClient(CoreV1Api);
    custom = admin.makeApiClient(CustomObjectsApi);
    await custom.createClusterCustomObject({
      ...group,
      plural: "tenants",
      body: {
        apiVersion: "tenantry.dev/v1alpha1",
        kind: "Tenant",
        metadata: { name: tenant },
        spec: {
          owners: [{ kind: "User", name: `owner-${tenant}` }],
          namespaces: [{ name: "a" }],
          quota: { hard: { pods: "2", "requests.cpu": "1", "services.nodeports": "1" } },
          allowed: { serviceTypes: ["ClusterIP", "NodePort"] },
        },
      },
    });
    await eventually(async () => {
      await core.readNamespace({ name: namespace });
      const q = (await custom.getClusterCustomObject({
        ...group,
        plural: "tenantresourcequotas",
        name: tenant,
      })) as {
        status?: { used?: Record<string, string> };
      };
      assert.equal(q.status?.used?.pods, "0");
    });
  });

  after(async () => {
    await custom.deleteClusterCustomObject({ ...group, plural: "tenants", name: tenant }).catch(() => {});
  });

  test("a dry run is refused exactly where the real request would be, and reserves nothing", async () => {
    const dry = await outcome(
      core.createNamespacedPod({ namespace, body: pod("dry", { cpu: "2" }), dryRun: "All" }),
    );
    assert.equal(dry.ok, false, "a dry run over the quota was admitted");
    assert.match(dry.message, /requests\.cpu/);
    const fits = await outcome(
      core.createNamespacedPod({ namespace, body: pod("dry-ok", { cpu: "500m" }), dryRun: "All" }),
    );
    assert.equal(fits.ok, true, fits.message);
    const q = (await custom.getClusterCustomObject({
      ...group,
      plural: "tenantresourcequotas",
      name: tenant,
    })) as {
      status?: { reservations?: unknown[] };
    };
    assert.deepEqual(q.status?.reservations ?? [], [], "a dry run left a reservation");
  });

  test("an in-place resize that grows a pod's requests past the quota is refused; one that fits passes", async () => {
    // Pending on purpose: kube-apiserver refuses to resize a pod bound to a simulated node ("node
    // without support for resize"), while an unscheduled pod's resize is admitted like any.
    const pending = pod("grow", { cpu: "200m" });
    pending.spec!.nodeSelector = { "tenantry.dev/no-such-node": "anywhere" };
    const created = await outcome(core.createNamespacedPod({ namespace, body: pending }));
    assert.equal(created.ok, true, created.message);
    await eventually(async () => {
      const q = (await custom.getClusterCustomObject({
        ...group,
        plural: "tenantresourcequotas",
        name: tenant,
      })) as {
        status?: { used?: Record<string, string> };
      };
      assert.equal(q.status?.used?.["requests.cpu"], "200m");
    });
    const resize = (cpu: string) =>
      outcome(
        core.patchNamespacedPodResize(
          {
            name: "grow",
            namespace,
            body: {
              spec: { containers: [{ name: "c", resources: { requests: { cpu }, limits: { cpu } } }] },
            },
          },
          setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
        ),
      );
    const tooMuch = await resize("2");
    assert.equal(tooMuch.ok, false, "a resize past the quota was admitted");
    assert.match(tooMuch.message, /requests\.cpu/);
    const fits = await resize("400m");
    assert.equal(fits.ok, true, fits.message);
  });
  test("a Service update that turns ports into node ports reserves them like a creation would", async () => {
    const service = (name: string, ports: number[]) => ({
      metadata: { name },
      spec: { type: "ClusterIP", ports: ports.map((port) => ({ name: `p${port}`, port })) },
    });
    assert.equal(
      (await outcome(core.createNamespacedService({ namespace, body: service("two", [80, 81]) }))).ok,
      true,
    );
    assert.equal(
      (await outcome(core.createNamespacedService({ namespace, body: service("one", [80]) }))).ok,
      true,
    );
    const toNodePort = (name: string) =>
      outcome(
        core.patchNamespacedService(
          { name, namespace, body: { spec: { type: "NodePort" } } },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        ),
      );
    const tooMany = await toNodePort("two");
    assert.equal(tooMany.ok, false, "two node ports against a limit of one were admitted");
    assert.match(tooMany.message, /services\.nodeports: requested 2/);
    const fits = await toNodePort("one");
    assert.equal(fits.ok, true, fits.message);
  });

  test("a namespace the cache has not seen yet is read, not taken for one outside every tenant", async () => {
    // Admission with caches that never started: everything it knows comes from reading.
    const client = new ClusterClient("home", admin);
    const quotas = (await custom.listClusterCustomObject({ ...group, plural: "tenantresourcequotas" })) as {
      items: TenantResourceQuota[];
    };
    const cold = new QuotaAdmission({
      store: new QuotaStore(client),
      namespaces: Informer.forResource<V1Namespace>(client, { apiVersion: "v1", kind: "Namespace" }),
      quotasOf: (name) => quotas.items.filter((q) => q.spec.tenant === name),
      readNamespace: (name) => core.readNamespace({ name }),
    });
    const decision = await cold.handle({
      uid: "cold-cache",
      kind: { group: "", version: "v1", kind: "Pod" },
      resource: { group: "", version: "v1", resource: "pods" },
      namespace,
      name: "cold",
      operation: "CREATE",
      userInfo: { username: `owner-${tenant}` },
      object: pod("cold", { cpu: "5" }) as Record<string, unknown>,
      dryRun: true,
    });
    assert.equal(decision.allowed, false, "a pod over the quota passed because the cache was cold");
    assert.match(decision.allowed ? "" : decision.message, /requests\.cpu/);
  });
});
