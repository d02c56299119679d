import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Identity } from "../../src/identity/index.js";
import { TenantProvisioner } from "../../src/identity/index.js";
import { ClusterClient } from "../../src/kube/index.js";
import { TENANTS_API_VERSION, type Tenant, TenantInformers } from "../../src/tenants/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";

/**
 * First login joins only tenants an identity provider may speak for: those its own first logins
 * created, or those whose spec.firstLoginGroups admit one of the user's groups. A Keystone project
 * or OIDC claim that happens to name an administrator's tenant takes nothing over.
 */
describe("first-login provisioning joins only tenants the provider may speak for", () => {
  const client = new ClusterClient("home", testKubeConfig());
  const informers = new TenantInformers(client);
  const provisioner = new TenantProvisioner({ client, informers, createTenants: true });
  const adminMade = uniqueName("adm");
  const admitting = uniqueName("opn");
  const created = uniqueName("kst");
  const identity = (tenant: string, username: string): Identity => ({
    username,
    uid: username,
    groups: ["keystone:project:shared", "keystone:role:admin"],
    tenant,
    tenantAdmin: true,
    provider: "keystone",
  });
  const read = async (name: string) =>
    (await client.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name },
    })) as Tenant;

  before(async () => {
    await informers.start();
    for (const [name, extra] of [
      [adminMade, {}],
      [admitting, { firstLoginGroups: ["keystone:project:shared"] }],
    ] as const) {
      await client.objects.create({
        apiVersion: TENANTS_API_VERSION,
        kind: "Tenant",
        metadata: { name },
        spec: { owners: [{ kind: "User", name: "the-administrator" }], ...extra },
      } as Tenant);
    }
    await eventually(() => assert.ok(informers.tenants.get(undefined, admitting)));
  });

  after(async () => {
    await informers.stop();
    for (const name of [adminMade, admitting, created]) {
      await client.objects
        .delete({ apiVersion: TENANTS_API_VERSION, kind: "Tenant", metadata: { name } })
        .catch(() => {});
    }
  });

  it("an administrator's tenant is not taken over by a provider's admin who names it", async () => {
    await provisioner.ensure(identity(adminMade, "keystone:mallory"));
    assert.deepEqual((await read(adminMade)).spec.owners, [{ kind: "User", name: "the-administrator" }]);
  });

  it("a tenant whose spec admits one of the user's groups is joined", async () => {
    await provisioner.ensure(identity(admitting, "keystone:ann"));
    assert.deepEqual(
      (await read(admitting)).spec.owners.map((o) => o.name),
      ["the-administrator", "keystone:ann"],
    );
  });

  it("a tenant the provider's first login created is joined by the next of its users", async () => {
    await provisioner.ensure(identity(created, "keystone:first"));
    await eventually(() => assert.ok(informers.tenants.get(undefined, created)));
    await provisioner.ensure({ ...identity(created, "keystone:second"), tenantAdmin: false });
    const users = ((await read(created)).spec.users ?? []).map((u) => u.name);
    assert.deepEqual(users, ["keystone:second"]);
  });
});
