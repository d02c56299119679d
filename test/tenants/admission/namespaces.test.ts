import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { V1Namespace } from "@kubernetes/client-node";
import { uniqueName } from "../../support/clusters.js";
import { eventually } from "../../support/eventually.js";
import { type TestUser, testUser } from "../../support/users.js";
import {
  as,
  asAdmin,
  core,
  createTenant,
  deleteTenants,
  deniedBy,
  grantNamespaceSelfService,
  manifest,
  rbac,
  succeeded,
  WEBHOOK,
} from "./support.js";

const ADMINS = "tenantry and cluster administrators (system:masters)";

describe("namespaces: owners create their own, nobody moves or takes over one", () => {
  const acme = uniqueName("acme");
  const beta = uniqueName("beta");
  const cordoned = uniqueName("cordoned");
  const counted = uniqueName("counted");
  const tenants = [acme, beta, cordoned, counted];
  let alice: TestUser; // owns acme and beta
  let bob: TestUser; // owns beta (through a group)
  let carol: TestUser; // owns cordoned and counted
  let dave: TestUser; // owns nothing
  let revoke: () => Promise<void>;

  const labelsOf = async (name: string) => (await core.readNamespace({ name })).metadata?.labels ?? {};

  before(async () => {
    alice = await testUser(uniqueName("alice"));
    const betaTeam = uniqueName("beta-team");
    bob = await testUser(uniqueName("bob"), [betaTeam]);
    carol = await testUser(uniqueName("carol"));
    dave = await testUser(uniqueName("dave"));
    revoke = await grantNamespaceSelfService(uniqueName("ns-self-service"), [
      alice.name,
      bob.name,
      carol.name,
      dave.name,
    ]);
    await Promise.all([
      createTenant(acme, {
        owners: [{ kind: "User", name: alice.name }],
        namespaces: [{ name: "declared" }],
        namespacePrefix: `${acme}-`,
      }),
      createTenant(beta, {
        owners: [
          { kind: "User", name: alice.name },
          { kind: "Group", name: betaTeam },
        ],
        podSecurity: { level: "restricted" },
      }),
      createTenant(cordoned, { owners: [{ kind: "User", name: carol.name }], cordoned: true }),
      createTenant(counted, { owners: [{ kind: "User", name: carol.name }], namespaceQuota: 3 }),
    ]);
  });

  after(async () => {
    await deleteTenants(tenants);
    await revoke();
  });

  it("an owner creates a namespace with kubectl: it joins the tenant and the owner administers it", async () => {
    const name = `${beta}-web`;
    const created = JSON.parse(
      succeeded(await as(bob, ["create", "namespace", name, "-o", "json"])),
    ) as V1Namespace;
    const own = (labels: Record<string, string> = {}) =>
      Object.fromEntries(Object.entries(labels).filter(([key]) => key !== "kubernetes.io/metadata.name"));
    // As admitted:
    assert.deepEqual(own(created.metadata?.labels), {
      "tenantry.dev/tenant": beta,
      "tenantry.dev/namespace-origin": "owner",
      "pod-security.kubernetes.io/enforce": "restricted",
    });
    // The tenant controller adopts it.
    await eventually(async () =>
      assert.deepEqual(own(await labelsOf(name)), {
        "tenantry.dev/tenant": beta,
        "tenantry.dev/namespace-origin": "owner",
        "pod-security.kubernetes.io/enforce": "restricted",
        "app.kubernetes.io/managed-by": "tenantry",
      }),
    );
    await eventually(() => rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: name }));
    const role = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "pod-reader", namespace: name },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] }],
    };
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "pod-readers", namespace: name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "pod-reader" },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: dave.name }],
    };
    const policy = {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: "allow-web", namespace: name },
      spec: { podSelector: {}, ingress: [{ ports: [{ port: 8080 }] }] },
    };
    const out = succeeded(await as(bob, ["create", "-f", "-"], manifest(role, binding, policy)));
    assert.equal(
      out,
      "role.rbac.authorization.k8s.io/pod-reader created\nrolebinding.rbac.authorization.k8s.io/pod-readers created\nnetworkpolicy.networking.k8s.io/allow-web created\n",
    );
  });

  it("an owner of several tenants picks one with the tenant label, else is told which they own", async () => {
    deniedBy(
      await as(alice, ["create", "namespace", `${beta}-unsure`]),
      WEBHOOK.namespaceOwners,
      `metadata.labels[tenantry.dev/tenant]: you own tenants "${acme}", "${beta}": set this label to the one namespace "${beta}-unsure" joins`,
    );
    const chosen = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: `${beta}-chosen`, labels: { "tenantry.dev/tenant": beta } },
    };
    succeeded(await as(alice, ["create", "-f", "-"], manifest(chosen)));
    assert.equal((await labelsOf(`${beta}-chosen`))["tenantry.dev/tenant"], beta);
    const foreign = {
      ...chosen,
      metadata: { name: `${beta}-foreign`, labels: { "tenantry.dev/tenant": counted } },
    };
    deniedBy(
      await as(alice, ["create", "-f", "-"], manifest(foreign)),
      WEBHOOK.namespaceOwners,
      `metadata.labels[tenantry.dev/tenant]: "${counted}" is not a tenant you own (you own "${acme}", "${beta}")`,
    );
  });

  it("the name prefix, declared names and cordoning are enforced", async () => {
    const inAcme = (name: string) => ({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name, labels: { "tenantry.dev/tenant": acme } },
    });
    deniedBy(
      await as(alice, ["create", "-f", "-"], manifest(inAcme(`x-${acme}`))),
      WEBHOOK.namespaces,
      `metadata.name: "x-${acme}" must start with "${acme}-" (spec.namespacePrefix of tenant "${acme}")`,
    );
    // A name that is no DNS label gets the API server's own refusal, not a webhook error: the
    // webhooks see the request (named after the namespace) before the API server validates it.
    const invalid = await as(alice, ["create", "-f", "-"], manifest(inAcme(`${acme}-Not_A_Name`)));
    assert.notEqual(invalid.code, 0);
    assert.match(invalid.stderr, /metadata\.name: Invalid value: "[^"]*Not_A_Name"/);
    assert.doesNotMatch(invalid.stderr, /failed calling webhook/);
    succeeded(await as(alice, ["create", "-f", "-"], manifest(inAcme(`${acme}-mine`))));
    // The tenant controller creates `<tenant>-declared`; the name is not up for grabs meanwhile.
    await eventually(() => core.readNamespace({ name: `${acme}-declared` }));
    deniedBy(
      await as(dave, ["create", "namespace", `${acme}-declared`]),
      WEBHOOK.namespaces,
      `metadata.name: "${acme}-declared" is reserved for spec.namespaces of tenant "${acme}"`,
    );
    deniedBy(
      await as(
        carol,
        ["create", "-f", "-"],
        manifest({
          ...inAcme(`${cordoned}-x`),
          metadata: { name: `${cordoned}-x`, labels: { "tenantry.dev/tenant": cordoned } },
        }),
      ),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/tenant]: tenant "${cordoned}" is cordoned (spec.cordoned): no new namespaces`,
    );
  });

  it("namespaceQuota holds under 10 concurrent creates, and a deletion frees a slot", async () => {
    const names = Array.from({ length: 10 }, (_, i) => `${counted}-${i}`);
    const inCounted = (name: string) => ({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name, labels: { "tenantry.dev/tenant": counted } },
    });
    const results = await Promise.all(
      names.map((name) => as(carol, ["create", "-f", "-"], manifest(inCounted(name)))),
    );
    const admitted = results.filter((r) => r.code === 0);
    assert.equal(admitted.length, 3, results.map((r) => r.stderr || r.stdout).join(""));
    for (const result of results.filter((r) => r.code !== 0)) {
      deniedBy(
        result,
        WEBHOOK.namespaces,
        `metadata.labels[tenantry.dev/tenant]: tenant "${counted}" has no namespace quota left: its owners created 3 namespaces and spec.namespaceQuota is 3`,
      );
    }
    const existing = (await core.listNamespace({ labelSelector: `tenantry.dev/tenant=${counted}` })).items;
    assert.equal(existing.length, 3);

    const [first] = existing;
    // (Owners may get but not watch namespaces, so kubectl cannot wait for the deletion itself.)
    succeeded(await as(carol, ["delete", "namespace", first!.metadata!.name!, "--wait=false"]));
    // The slot frees once the namespace is gone, which under load can take the namespace controller a while.
    await eventually(
      async () => {
        succeeded(await as(carol, ["create", "-f", "-"], manifest(inCounted(`${counted}-after`))));
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    deniedBy(
      await as(carol, ["create", "-f", "-"], manifest(inCounted(`${counted}-over`))),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/tenant]: tenant "${counted}" has no namespace quota left: its owners created 3 namespaces and spec.namespaceQuota is 3`,
    );
  });

  it("an owner cannot label another tenant's namespace, or default, into their tenant", async () => {
    const other = `${beta}-web`;
    deniedBy(
      await as(carol, ["label", "namespace", other, `tenantry.dev/tenant=${counted}`, "--overwrite"]),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/tenant]: namespace "${other}" belongs to tenant "${beta}"; only ${ADMINS} may move it`,
    );
    deniedBy(
      await as(carol, ["label", "namespace", "default", `tenantry.dev/tenant=${counted}`]),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/tenant]: namespace "default" belongs to no tenant; only ${ADMINS} may put it into one`,
    );
    assert.equal((await labelsOf("default"))["tenantry.dev/tenant"], undefined);
    deniedBy(
      await as(carol, ["label", "namespace", other, "team=carol"]),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/tenant]: namespace "${other}" belongs to tenant "${beta}"; only its owners, ${ADMINS} may change it`,
    );
    // Its own owner may label it, but not loosen what tenantry set.
    succeeded(await as(bob, ["label", "namespace", other, "team=web"]));
    deniedBy(
      await as(bob, [
        "label",
        "namespace",
        other,
        "pod-security.kubernetes.io/enforce=privileged",
        "--overwrite",
      ]),
      WEBHOOK.namespaces,
      `metadata.labels[pod-security.kubernetes.io/enforce]: set by tenantry on the namespaces of tenant "${beta}"; only ${ADMINS} may change it`,
    );
  });

  it("owners delete the namespaces they created, not declared ones nor other tenants'", async () => {
    deniedBy(
      await as(carol, ["delete", "namespace", `${beta}-chosen`]),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/tenant]: namespace "${beta}-chosen" belongs to tenant "${beta}"; only its owners, ${ADMINS} may delete it`,
    );
    deniedBy(
      await as(alice, ["delete", "namespace", `${acme}-declared`]),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/namespace-origin]: namespace "${acme}-declared" is declared in spec.namespaces of tenant "${acme}"; remove it there to delete it`,
    );
    succeeded(await as(alice, ["delete", "namespace", `${beta}-chosen`, "--wait=false"]));
  });

  it("users who own no tenant are left to RBAC, but cannot put a namespace into a tenant", async () => {
    const plain = uniqueName("plain");
    succeeded(await as(dave, ["create", "namespace", plain]));
    assert.equal((await labelsOf(plain))["tenantry.dev/tenant"], undefined);
    deniedBy(
      await as(dave, ["label", "namespace", plain, `tenantry.dev/tenant=${beta}`]),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/tenant]: namespace "${plain}" belongs to no tenant; only ${ADMINS} may put it into one`,
    );
    const sneaky = {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: uniqueName("sneaky"), labels: { "tenantry.dev/tenant": beta } },
    };
    deniedBy(
      await as(dave, ["create", "-f", "-"], manifest(sneaky)),
      WEBHOOK.namespaces,
      `metadata.labels[tenantry.dev/tenant]: only owners of tenant "${beta}", ${ADMINS} may put a namespace into it`,
    );
    succeeded(await as(dave, ["delete", "namespace", plain, "--wait=false"]));
  });

  it("a cluster administrator may put an existing namespace into a tenant", async () => {
    const adopted = uniqueName("adopted");
    succeeded(await asAdmin(["create", "namespace", adopted]));
    succeeded(
      await asAdmin([
        "label",
        "namespace",
        adopted,
        `tenantry.dev/tenant=${counted}`,
        "tenantry.dev/namespace-origin=owner",
      ]),
    );
    await eventually(() => rbac.readNamespacedRoleBinding({ name: "tenantry-owners", namespace: adopted }));
    const namespace: V1Namespace = await core.readNamespace({ name: adopted });
    assert.equal(namespace.metadata?.labels?.["tenantry.dev/tenant"], counted);
  });
});
