import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { userLabelValue } from "../../../src/tenants/admission/identity.js";
import { uniqueName } from "../../support/clusters.js";
import { eventually } from "../../support/eventually.js";
import { type TestUser, testUser } from "../../support/users.js";
import {
  as,
  core,
  createTenant,
  deleteTenants,
  deniedBy,
  manifest,
  rbac,
  succeeded,
  WEBHOOK,
} from "./support.js";

describe("owner labels: every object a tenant user creates carries the tenant and the user", () => {
  const tenant = uniqueName("labels");
  const frozen = uniqueName("frozen");
  const namespace = `${tenant}-app`;
  let alice: TestUser; // owner
  let erin: TestUser; // a tenant user whose name is no label value
  let frozenNamespace: string;

  const configMap = (name: string, labels: Record<string, string> = {}) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace, labels },
    data: { greeting: "hello" },
  });
  const labelsOf = async (name: string) =>
    (await core.readNamespacedConfigMap({ name, namespace })).metadata?.labels ?? {};

  before(async () => {
    alice = await testUser(uniqueName("alice"));
    erin = await testUser(`${uniqueName("erin")}@example.com`);
    frozenNamespace = `${frozen}-app`;
    await Promise.all([
      createTenant(tenant, {
        owners: [{ kind: "User", name: alice.name }],
        namespaces: [{ name: "app" }],
        users: [
          {
            name: erin.name,
            permissions: [
              { apiGroups: [""], resources: ["configmaps"], verbs: ["create", "get", "update", "patch"] },
            ],
          },
        ],
      }),
      createTenant(frozen, {
        owners: [{ kind: "User", name: alice.name }],
        namespaces: [{ name: "app" }],
        cordoned: true,
      }),
    ]);
  });

  after(async () => {
    await deleteTenants([tenant, frozen]);
  });

  it("an owner's and a tenant user's objects get tenant and user labels, whatever user label they wrote", async () => {
    succeeded(await as(alice, ["create", "-f", "-"], manifest(configMap("by-alice"))));
    assert.deepEqual(await labelsOf("by-alice"), {
      "tenantry.dev/tenant": tenant,
      "tenantry.dev/user": alice.name,
    });
    succeeded(
      await as(
        alice,
        ["create", "-f", "-"],
        manifest(configMap("spoofed", { "tenantry.dev/user": "someone-else" })),
      ),
    );
    assert.deepEqual(await labelsOf("spoofed"), {
      "tenantry.dev/tenant": tenant,
      "tenantry.dev/user": alice.name,
    });

    succeeded(await as(erin, ["create", "-f", "-"], manifest(configMap("by-erin"))));
    const erinLabel = userLabelValue(erin.name);
    assert.match(erinLabel, /^erin-.*-at-example\.com-[0-9a-f]{10}$/);
    assert.deepEqual(await labelsOf("by-erin"), {
      "tenantry.dev/tenant": tenant,
      "tenantry.dev/user": erinLabel,
    });
  });

  it("relabelling cannot hand an object to someone else: the owner labels are kept", async () => {
    succeeded(
      await as(erin, [
        "label",
        "configmap",
        "by-erin",
        "-n",
        namespace,
        "tenantry.dev/user=bob",
        "--overwrite",
      ]),
    );
    succeeded(
      await as(erin, ["label", "configmap", "by-erin", "-n", namespace, "tenantry.dev/tenant-", "team=x"]),
    );
    assert.deepEqual(await labelsOf("by-erin"), {
      "tenantry.dev/tenant": tenant,
      "tenantry.dev/user": userLabelValue(erin.name),
      team: "x",
    });
  });

  it("pods a controller creates from the user's Deployment carry the user's labels", async () => {
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web", namespace },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web", "tenantry.dev/user": "someone-else" } },
          spec: { containers: [{ name: "web", image: "nginx" }] },
        },
      },
    };
    succeeded(await as(alice, ["create", "-f", "-"], manifest(deployment)));
    const pods = await eventually(async () => {
      const list = (await core.listNamespacedPod({ namespace, labelSelector: "app=web" })).items;
      assert.equal(list.length, 2);
      return list;
    });
    for (const pod of pods) {
      assert.equal(pod.metadata?.labels?.["tenantry.dev/tenant"], tenant);
      assert.equal(pod.metadata?.labels?.["tenantry.dev/user"], alice.name);
    }
  });

  it("objects tenantry creates carry no user label", async () => {
    const binding = await eventually(() =>
      rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace }),
    );
    assert.equal(binding.metadata?.labels?.["tenantry.dev/user"], undefined);
    assert.equal(binding.metadata?.labels?.["tenantry.dev/tenant"], tenant);
  });

  it("a cordoned tenant refuses new objects and pods", async () => {
    await eventually(() =>
      rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: frozenNamespace }),
    );
    const message = `metadata.namespace: tenant "${frozen}" is cordoned (spec.cordoned): nothing new may be created in its namespaces`;
    deniedBy(
      await as(alice, ["create", "configmap", "c", "-n", frozenNamespace, "--from-literal=a=b"]),
      WEBHOOK.ownerLabels,
      message,
    );
    deniedBy(
      await as(alice, ["run", "p", "-n", frozenNamespace, "--image=nginx", "--restart=Never"]),
      WEBHOOK.ownerLabels,
      message,
    );
  });
});
