// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${namespace}` is the template placeholder syntax.
import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { TENANTS_API_VERSION } from "../../../src/tenants/index.js";
import { refusalPattern } from "../../support/admission.js";
import { uniqueName } from "../../support/clusters.js";
import { asAdmin, createTenant, deleteTenants, deniedBy, manifest, succeeded, WEBHOOK } from "./support.js";

describe("validation of Tenants, NamespaceTemplates and TenantResourceQuotas beyond their schema", () => {
  const created: string[] = [];
  const tenants: string[] = [];

  const tenant = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: TENANTS_API_VERSION,
    kind: "Tenant",
    metadata: { name },
    spec: { owners: [{ kind: "User", name: "alice" }], ...spec },
  });
  const quota = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: TENANTS_API_VERSION,
    kind: "TenantResourceQuota",
    metadata: { name },
    spec,
  });
  const template = (name: string, objects: unknown[]) => ({
    apiVersion: TENANTS_API_VERSION,
    kind: "NamespaceTemplate",
    metadata: { name },
    spec: { objects },
  });

  async function create(object: { kind: string; metadata: { name: string } }) {
    const result = await asAdmin(["create", "-f", "-"], manifest(object));
    if (result.code === 0) {
      if (object.kind === "Tenant") tenants.push(object.metadata.name);
      else created.push(`${object.kind.toLowerCase()}/${object.metadata.name}`);
    }
    return result;
  }

  after(async () => {
    for (const name of created) await asAdmin(["delete", name, "--ignore-not-found"]);
    await deleteTenants(tenants);
  });

  it("class regexes must compile", async () => {
    const name = uniqueName("regex");
    const bad = await create(tenant(name, { allowed: { ingressClasses: { regex: "public-(" } } }));
    assert.notEqual(bad.code, 0);
    assert.match(
      bad.stderr,
      new RegExp(
        `${refusalPattern(WEBHOOK.tenancy, "cluster")}spec\\.allowed\\.ingressClasses\\.regex: "public-\\(" is not a valid regular expression \\(.+\\)`,
      ),
    );
    succeeded(await create(tenant(name, { allowed: { ingressClasses: { regex: "^public-" } } })));
  });

  it("owners: no group of every user, no service account posing as a User", async () => {
    deniedBy(
      await create(
        tenant(uniqueName("everyone"), { owners: [{ kind: "Group", name: "system:authenticated" }] }),
      ),
      WEBHOOK.tenancy,
      'spec.owners[0].name: group "system:authenticated" contains every user; name a narrower group',
    );
    deniedBy(
      await create(
        tenant(uniqueName("sa"), { owners: [{ kind: "User", name: "system:serviceaccount:ci:bot" }] }),
      ),
      WEBHOOK.tenancy,
      `spec.owners[0].kind: "system:serviceaccount:ci:bot" is a service account's username; use kind ServiceAccount`,
    );
    succeeded(
      await create(
        tenant(uniqueName("sa"), {
          owners: [{ kind: "ServiceAccount", name: "system:serviceaccount:ci:bot" }],
        }),
      ),
    );
  });

  it("a tenant's quotaRef names a TenantResourceQuota of that tenant", async () => {
    const mine = uniqueName("mine");
    const theirs = uniqueName("theirs");
    const theirQuota = uniqueName("their-quota");
    const myQuota = uniqueName("my-quota");
    const early = await create(quota(theirQuota, { tenant: theirs, hard: { pods: 10 } }));
    succeeded(early);
    assert.match(early.stderr, new RegExp(`Warning: spec\\.tenant: tenant "${theirs}" does not exist yet`));
    succeeded(await create(quota(myQuota, { tenant: mine, hard: { pods: 10 } })));
    deniedBy(
      await create(tenant(mine, { quota: { quotaRef: { name: theirQuota } } })),
      WEBHOOK.tenancy,
      `spec.quota.quotaRef.name: TenantResourceQuota "${theirQuota}" belongs to tenant "${theirs}", not "${mine}"`,
    );
    succeeded(await create(tenant(mine, { quota: { quotaRef: { name: myQuota } } })));
  });

  it("a tenant cannot declare a system namespace or another tenant's namespace", async () => {
    deniedBy(
      await create(tenant("kube", { namespaces: [{ name: "system" }] })),
      WEBHOOK.tenancy,
      'spec.namespaces[0].name: "kube-system" is a system namespace and cannot belong to a tenant',
    );
    const first = uniqueName("first");
    await createTenant(first, { owners: [{ kind: "User", name: "alice" }], namespaces: [{ name: "b-c" }] });
    tenants.push(first);
    // `<first>-b` declaring `c` would be the same namespace.
    deniedBy(
      await create(tenant(`${first}-b`, { namespaces: [{ name: "c" }] })),
      WEBHOOK.tenancy,
      `spec.namespaces[0].name: namespace "${first}-b-c" already belongs to tenant "${first}"`,
    );
    succeeded(await create(tenant(`${first}-b`, { namespaces: [{ name: "d" }] })));
  });

  it("template objects are namespaced and land in the tenant namespace", async () => {
    const name = uniqueName("tpl");
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "${tenant}-admins" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
      subjects: [{ kind: "Group", name: "${tenant}-admins" }],
    };
    const misplaced = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "x", namespace: "kube-system" },
    };
    deniedBy(
      await create(template(name, [binding, misplaced])),
      WEBHOOK.tenancy,
      'spec.objects[0].kind: ClusterRoleBinding is cluster-scoped; a template holds namespaced objects only; spec.objects[1].metadata.namespace: leave it out: objects are created in each tenant namespace, not "kube-system"',
    );
    const fine = {
      apiVersion: "v1",
      kind: "ConfigMap",
      // The API server checks an embedded object's namespace as a name, so `${namespace}` cannot be
      // written there; left out, it is the tenant namespace.
      metadata: { name: "x" },
      data: { tenant: "${tenant}" },
    };
    succeeded(await create(template(name, [fine])));
  });

  it("a TenantResourceQuota's per-namespace quotas add up within hard", async () => {
    const name = uniqueName("trq");
    const owner = uniqueName("owner");
    const spec = (second: string) => ({
      tenant: owner,
      hard: { pods: 10 },
      namespaceQuotas: [
        { namespace: `${owner}-a`, hard: { pods: 6 } },
        { namespace: `${owner}-b`, hard: { pods: second } },
      ],
    });
    const over = await create(quota(name, spec("5")));
    deniedBy(
      over,
      WEBHOOK.tenancy,
      `spec.namespaceQuotas: pods adds up to more than spec.hard[pods] (10) over 2 namespaces (${owner}-a: 6, ${owner}-b: 5)`,
    );
    succeeded(await create(quota(name, spec("4"))));
  });
});
