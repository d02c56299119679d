import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  NetworkingV1Api,
  RbacAuthorizationV1Api,
} from "@kubernetes/client-node";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";

const group = { group: "tenantry.dev", version: "v1alpha1" };
/** A NamespaceTemplate placeholder, `${name}`, as users write it. */
const param = (name: string) => `\${${name}}`;

interface TenantStatus {
  namespaces?: string[];
  namespaceCount?: number;
  observedGeneration?: number;
  conditions?: {
    type: string;
    status: string;
    reason: string;
    message: string;
    observedGeneration?: number;
  }[];
  usage?: { summary?: string };
}

describe("tenant controller", () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let rbac: RbacAuthorizationV1Api;
  let net: NetworkingV1Api;
  const tenant = uniqueName("tc");
  const template = uniqueName("tpl");

  const readStatus = async () =>
    (await custom.getClusterCustomObject({ ...group, plural: "tenants", name: tenant })) as {
      metadata: { generation: number };
      status?: TenantStatus;
    };

  before(async () => {
    kc = testKubeConfig("home");
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    net = kc.makeApiClient(NetworkingV1Api);
    await custom.createClusterCustomObject({
      ...group,
      plural: "namespacetemplates",
      body: {
        apiVersion: "tenantry.dev/v1alpha1",
        kind: "NamespaceTemplate",
        metadata: { name: template },
        spec: {
          parameters: [{ name: "team", default: "core" }],
          objects: [
            {
              apiVersion: "v1",
              kind: "ConfigMap",
              metadata: { name: "info" },
              data: { where: `${param("tenant")}/${param("namespace")}`, team: param("team") },
            },
          ],
        },
      },
    });
    await custom.createClusterCustomObject({
      ...group,
      plural: "tenants",
      body: {
        apiVersion: "tenantry.dev/v1alpha1",
        kind: "Tenant",
        metadata: { name: tenant },
        spec: {
          owners: [
            { kind: "User", name: "alice" },
            { kind: "Group", name: "acme-admins" },
          ],
          namespaces: [
            { name: "dev" },
            { name: "prod", templates: [{ name: template, parameters: { team: "payments" } }] },
          ],
          podSecurity: { level: "restricted" },
          limitRanges: [
            {
              name: "defaults",
              limits: [{ type: "Container", default: { cpu: "500m" }, defaultRequest: { cpu: "100m" } }],
            },
          ],
          users: [
            { name: "bob", permissions: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }] },
          ],
          quota: { hard: { pods: "10" } },
        },
      },
    });
  });

  after(async () => {
    await custom.deleteClusterCustomObject({ ...group, plural: "tenants", name: tenant }).catch(() => {});
    await custom
      .deleteClusterCustomObject({ ...group, plural: "namespacetemplates", name: template })
      .catch(() => {});
  });

  test("creates the declared namespaces with tenant and pod-security labels, owned by the tenant", async () => {
    for (const short of ["dev", "prod"]) {
      const ns = await eventually(() => core.readNamespace({ name: `${tenant}-${short}` }));
      assert.equal(ns.metadata?.labels?.["tenantry.dev/tenant"], tenant);
      assert.equal(ns.metadata?.labels?.["pod-security.kubernetes.io/enforce"], "restricted");
      assert.equal(ns.metadata?.ownerReferences?.[0]?.kind, "Tenant");
      assert.equal(ns.metadata?.ownerReferences?.[0]?.name, tenant);
    }
  });

  test("binds the owners to admin, gives each user their Role, isolates the network, sets limit ranges", async () => {
    const ns = `${tenant}-dev`;
    const owners = await eventually(() =>
      rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: ns }),
    );
    assert.equal(owners.roleRef.name, "admin");
    assert.deepEqual(
      owners.subjects?.map((s) => `${s.kind}/${s.name}`),
      ["User/alice", "Group/acme-admins"],
    );
    // The objects of a namespace are applied one after another: wait for the last of them.
    const limits = await eventually(() =>
      core.readNamespacedLimitRange({ name: "tenantry-defaults", namespace: ns }),
    );
    const roles = await rbac.listNamespacedRole({
      namespace: ns,
      labelSelector: `tenantry.dev/tenant=${tenant}`,
    });
    const userRoles = roles.items.filter((r) => r.metadata?.name?.startsWith("tenantry-user-"));
    assert.equal(userRoles.length, 1);
    assert.deepEqual(userRoles[0]?.rules?.[0]?.verbs, ["get", "list"]);
    // Owners may read and delete the namespace itself, through a Role inside it.
    const nsOwner = roles.items.find((r) => r.metadata?.name === "tenantry-namespace-owner");
    assert.deepEqual(nsOwner?.rules?.[0]?.resources, ["namespaces"]);
    const policy = await net.readNamespacedNetworkPolicy({ name: "tenantry-isolation", namespace: ns });
    assert.deepEqual(policy.spec?.ingress?.[0]?._from?.[0]?.namespaceSelector?.matchLabels, {
      "tenantry.dev/tenant": tenant,
    });
    assert.equal(limits.spec?.limits[0]?.defaultRequest?.cpu, "100m");
  });

  test("renders template objects with parameters, and a template change reaches every namespace using it", async () => {
    const ns = `${tenant}-prod`;
    const cm = await eventually(() => core.readNamespacedConfigMap({ name: "info", namespace: ns }));
    assert.deepEqual(cm.data, { where: `${tenant}/${ns}`, team: "payments" });
    await assert.rejects(
      core.readNamespacedConfigMap({ name: "info", namespace: `${tenant}-dev` }),
      (e: { code?: number }) => e.code === 404,
    );
    await custom.patchClusterCustomObject({
      ...group,
      plural: "namespacetemplates",
      name: template,
      body: [{ op: "replace", path: "/spec/objects/0/data/team", value: `${param("team")}-v2` }],
    });
    await eventually(async () => {
      const updated = await core.readNamespacedConfigMap({ name: "info", namespace: ns });
      assert.equal(updated.data?.team, "payments-v2");
    });
  });

  test("reports namespaces, usage and a Ready condition with observedGeneration", async () => {
    await eventually(async () => {
      const t = await readStatus();
      assert.deepEqual(t.status?.namespaces, [`${tenant}-dev`, `${tenant}-prod`]);
      assert.equal(t.status?.namespaceCount, 2);
      const ready = t.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "True");
      assert.equal(ready?.observedGeneration, t.metadata.generation);
      assert.match(t.status?.usage?.summary ?? "", /^none used of 1 limit$/);
    });
  });

  test("repairs a managed object deleted behind its back", async () => {
    const ns = `${tenant}-dev`;
    await net.deleteNamespacedNetworkPolicy({ name: "tenantry-isolation", namespace: ns });
    await eventually(() => net.readNamespacedNetworkPolicy({ name: "tenantry-isolation", namespace: ns }));
  });

  test("a missing template makes Ready False naming it; fixing the spec recovers", async () => {
    await custom.patchClusterCustomObject({
      ...group,
      plural: "tenants",
      name: tenant,
      body: [{ op: "add", path: "/spec/templates", value: [{ name: "no-such-template" }] }],
    });
    await eventually(async () => {
      const t = await readStatus();
      const ready = t.status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "False");
      assert.equal(ready?.reason, "TemplateInvalid");
      assert.match(ready?.message ?? "", /NamespaceTemplate no-such-template does not exist/);
      assert.equal(ready?.observedGeneration, t.metadata.generation);
    });
    await custom.patchClusterCustomObject({
      ...group,
      plural: "tenants",
      name: tenant,
      body: [{ op: "remove", path: "/spec/templates" }],
    });
    await eventually(async () => {
      const ready = (await readStatus()).status?.conditions?.find((c) => c.type === "Ready");
      assert.equal(ready?.status, "True");
    });
  });

  test("removing a declared namespace or a user removes what was created for them", async () => {
    await custom.patchClusterCustomObject({
      ...group,
      plural: "tenants",
      name: tenant,
      body: [
        { op: "remove", path: "/spec/users" },
        { op: "replace", path: "/spec/namespaces", value: [{ name: "dev" }] },
      ],
    });
    await eventually(async () => {
      const roles = await rbac.listNamespacedRole({
        namespace: `${tenant}-dev`,
        labelSelector: `tenantry.dev/tenant=${tenant}`,
      });
      assert.equal(roles.items.filter((r) => r.metadata?.name?.startsWith("tenantry-user-")).length, 0);
      const prod = await core
        .readNamespace({ name: `${tenant}-prod` })
        .catch((e: { code?: number }) => (e.code === 404 ? undefined : Promise.reject(e)));
      assert.ok(!prod || prod.status?.phase === "Terminating");
    });
  });

  test("deleting the tenant deletes its namespaces by garbage collection", async () => {
    await custom.deleteClusterCustomObject({ ...group, plural: "tenants", name: tenant });
    await eventually(
      async () => {
        const left = await core.listNamespace({ labelSelector: `tenantry.dev/tenant=${tenant}` });
        assert.ok(
          left.items.every((n) => n.status?.phase === "Terminating" || n.metadata?.deletionTimestamp),
        );
      },
      { timeoutMs: 60_000 },
    );
  });
});
