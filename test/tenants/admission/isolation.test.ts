// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${tenant}` is the template placeholder syntax.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  NAMESPACE_TEMPLATE_CRD,
  type NamespaceTemplate,
  TENANTRY_GROUP,
  TENANTS_API_VERSION,
  TENANTS_VERSION,
} from "../../../src/tenants/index.js";
import { uniqueName } from "../../support/clusters.js";
import { eventually } from "../../support/eventually.js";
import { type TestUser, testUser } from "../../support/users.js";
import {
  as,
  core,
  createTenant,
  customObjects,
  deleteTenants,
  deniedBy,
  failedWith,
  manifest,
  rbac,
  succeeded,
  WEBHOOK,
} from "./support.js";

const templates = {
  group: TENANTRY_GROUP,
  version: TENANTS_VERSION,
  plural: NAMESPACE_TEMPLATE_CRD.spec.names.plural,
};

describe("isolation: services, what tenantry manages, and what RBAC keeps from owners", () => {
  const closed = uniqueName("closed");
  const open = uniqueName("open");
  const template = uniqueName("tpl");
  const closedNs = `${closed}-app`;
  const openNs = `${open}-app`;
  let owner: TestUser;

  const service = (namespace: string, name: string, spec: Record<string, unknown>) => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace },
    spec: { ports: [{ port: 80 }], selector: { app: "web" }, ...spec },
  });

  before(async () => {
    owner = await testUser(uniqueName("owner"));
    const body: NamespaceTemplate = {
      apiVersion: TENANTS_API_VERSION,
      kind: "NamespaceTemplate",
      metadata: { name: template },
      spec: {
        objects: [
          {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "tenant-info" },
            data: { tenant: "${tenant}" },
          },
        ],
      },
    } as NamespaceTemplate;
    await customObjects.createClusterCustomObject({ ...templates, body });
    await Promise.all([
      createTenant(closed, {
        owners: [{ kind: "User", name: owner.name }],
        namespaces: [{ name: "app" }],
        templates: [{ name: template }],
        limitRanges: [{ name: "defaults", limits: [{ type: "Container", default: { cpu: "500m" } }] }],
      }),
      createTenant(open, {
        owners: [{ kind: "User", name: owner.name }],
        namespaces: [{ name: "app" }],
        allowed: {
          serviceTypes: ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"],
          externalIPs: true,
        },
      }),
    ]);
    await eventually(async () => {
      await core.readNamespacedConfigMap({ name: "tenant-info", namespace: closedNs });
      await rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: openNs });
    });
  });

  after(async () => {
    await deleteTenants([closed, open]);
    await customObjects.deleteClusterCustomObject({ ...templates, name: template }).catch(() => {});
  });

  for (const type of ["NodePort", "LoadBalancer"]) {
    it(`${type} services are refused unless the tenant allows them`, async () => {
      const name = type.toLowerCase();
      deniedBy(
        await as(owner, ["create", "-f", "-"], manifest(service(closedNs, name, { type }))),
        WEBHOOK.services,
        `spec.type: ${type} services are not allowed in tenant "${closed}" (spec.allowed.serviceTypes: ClusterIP)`,
      );
      succeeded(await as(owner, ["create", "-f", "-"], manifest(service(openNs, name, { type }))));
    });
  }

  it("ExternalName services and external IPs are refused unless allowed; ClusterIP always passes", async () => {
    const external = { type: "ExternalName", externalName: "example.com", selector: undefined };
    deniedBy(
      await as(owner, ["create", "-f", "-"], manifest(service(closedNs, "external", external))),
      WEBHOOK.services,
      `spec.type: ExternalName services are not allowed in tenant "${closed}" (spec.allowed.serviceTypes: ClusterIP)`,
    );
    succeeded(await as(owner, ["create", "-f", "-"], manifest(service(openNs, "external", external))));
    deniedBy(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(service(closedNs, "ips", { externalIPs: ["192.0.2.10"] })),
      ),
      WEBHOOK.services,
      `spec.externalIPs: external IPs are not allowed in tenant "${closed}" (spec.allowed.externalIPs is false)`,
    );
    succeeded(
      await as(
        owner,
        ["create", "-f", "-"],
        manifest(service(openNs, "ips", { externalIPs: ["192.0.2.10"] })),
      ),
    );
    succeeded(await as(owner, ["create", "-f", "-"], manifest(service(closedNs, "web", {}))));
    deniedBy(
      await as(owner, ["patch", "service", "web", "-n", closedNs, "-p", '{"spec":{"type":"NodePort"}}']),
      WEBHOOK.services,
      `spec.type: NodePort services are not allowed in tenant "${closed}" (spec.allowed.serviceTypes: ClusterIP)`,
    );
  });

  it("an owner cannot delete or edit tenantry-isolation or tenantry-owners, nor unlabel them", async () => {
    const managed = (kind: string, name: string) =>
      `metadata.labels[app.kubernetes.io/managed-by]: ${kind} "${name}" in namespace "${closedNs}" is managed by tenantry`;
    deniedBy(
      await as(owner, ["delete", "networkpolicy", "tenantry-isolation", "-n", closedNs]),
      WEBHOOK.managedObjects,
      `${managed("NetworkPolicy", "tenantry-isolation")}; only tenantry may delete it`,
    );
    deniedBy(
      await as(owner, [
        "patch",
        "networkpolicy",
        "tenantry-isolation",
        "-n",
        closedNs,
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/ingress","value":[{}]}]',
      ]),
      WEBHOOK.managedObjects,
      `${managed("NetworkPolicy", "tenantry-isolation")}; only tenantry may change it`,
    );
    deniedBy(
      await as(owner, ["delete", "rolebinding", "tenantry-owners", "-n", closedNs]),
      WEBHOOK.managedObjects,
      `${managed("RoleBinding", "tenantry-owners")}; only tenantry may delete it`,
    );
    deniedBy(
      await as(owner, [
        "label",
        "rolebinding",
        "tenantry-owners",
        "-n",
        closedNs,
        "app.kubernetes.io/managed-by-",
      ]),
      WEBHOOK.managedObjects,
      `${managed("RoleBinding", "tenantry-owners")}; the label cannot be removed or changed`,
    );
    deniedBy(
      await as(owner, ["delete", "configmap", "tenant-info", "-n", closedNs]),
      WEBHOOK.managedObjects,
      `${managed("ConfigMap", "tenant-info")}; only tenantry may delete it`,
    );
    // Kubernetes' admin role lets owners read limit ranges, not change them.
    failedWith(
      await as(owner, ["delete", "limitrange", "tenantry-defaults", "-n", closedNs]),
      `Error from server (Forbidden): limitranges "tenantry-defaults" is forbidden: User "${owner.name}" cannot delete resource "limitranges" in API group "" in the namespace "${closedNs}"`,
    );
    // Their own objects of the same kinds are theirs to change.
    const own = {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: "own", namespace: closedNs },
      spec: { podSelector: {} },
    };
    succeeded(await as(owner, ["create", "-f", "-"], manifest(own)));
    succeeded(await as(owner, ["delete", "networkpolicy", "own", "-n", closedNs]));
  });

  it("an owner cannot create or edit ResourceQuotas (RBAC admin)", async () => {
    failedWith(
      await as(owner, ["create", "quota", "more", "--hard=pods=1000", "-n", closedNs]),
      `error: failed to create quota: resourcequotas is forbidden: User "${owner.name}" cannot create resource "resourcequotas" in API group "" in the namespace "${closedNs}"`,
    );
    await core.createNamespacedResourceQuota({
      namespace: closedNs,
      body: { metadata: { name: "set-by-admin" }, spec: { hard: { pods: "10" } } },
    });
    failedWith(
      await as(owner, [
        "patch",
        "resourcequota",
        "set-by-admin",
        "-n",
        closedNs,
        "-p",
        '{"spec":{"hard":{"pods":"1000"}}}',
      ]),
      `Error from server (Forbidden): resourcequotas "set-by-admin" is forbidden: User "${owner.name}" cannot patch resource "resourcequotas" in API group "" in the namespace "${closedNs}"`,
    );
    failedWith(
      await as(owner, ["delete", "resourcequota", "set-by-admin", "-n", closedNs]),
      `Error from server (Forbidden): resourcequotas "set-by-admin" is forbidden: User "${owner.name}" cannot delete resource "resourcequotas" in API group "" in the namespace "${closedNs}"`,
    );
  });

  it("an owner cannot bind cluster-admin (RBAC escalation check)", async () => {
    const result = await as(owner, [
      "create",
      "rolebinding",
      "escalate",
      "--clusterrole=cluster-admin",
      `--user=${owner.name}`,
      "-n",
      closedNs,
    ]);
    assert.notEqual(result.code, 0);
    assert.equal(
      result.stderr.trim(),
      `error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io "escalate" is forbidden: user "${owner.name}" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}`,
    );
    // Binding what they hold in their own namespace is fine.
    succeeded(
      await as(owner, [
        "create",
        "rolebinding",
        "viewers",
        "--clusterrole=view",
        `--user=${owner.name}`,
        "-n",
        closedNs,
      ]),
    );
  });

  it("an owner cannot list namespaces or nodes cluster-wide, nor read another tenant's namespace", async () => {
    failedWith(
      await as(owner, ["get", "namespaces"]),
      `Error from server (Forbidden): namespaces is forbidden: User "${owner.name}" cannot list resource "namespaces" in API group "" at the cluster scope`,
    );
    failedWith(
      await as(owner, ["get", "nodes"]),
      `Error from server (Forbidden): nodes is forbidden: User "${owner.name}" cannot list resource "nodes" in API group "" at the cluster scope`,
    );
    failedWith(
      await as(owner, ["get", "pods", "-n", "kube-system"]),
      `Error from server (Forbidden): pods is forbidden: User "${owner.name}" cannot list resource "pods" in API group "" in the namespace "kube-system"`,
    );
    succeeded(await as(owner, ["get", "pods", "-n", closedNs]));
  });
});
