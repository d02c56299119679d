/**
 * The tenant gateway with the real kubectl: each tenant owner's own kubeconfig (their client
 * certificate), pointed at the gateway, sees and changes only their tenant.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import { type TestUser, testUser } from "../support/users.js";
import {
  core,
  createTenant,
  createTenantNamespace,
  deleteTenants,
  gatewayKubeconfig,
  names,
  spawnKubectl,
  startTestGateway,
  type TestGateway,
  waitForNamespaces,
} from "./support.js";

describe("tenant gateway with kubectl", () => {
  const a = uniqueName("gwa");
  const b = uniqueName("gwb");
  const aNamespaces = [`${a}-dev`, `${a}-prod`, `${a}-test`];
  const bNamespaces = [`${b}-dev`, `${b}-prod`];
  const extra: string[] = [];
  let alice: TestUser;
  let bob: TestUser;
  let gw: TestGateway;
  let aliceConfig: string;
  let bobConfig: string;

  before(async () => {
    [alice, bob] = await Promise.all([testUser(uniqueName("alice")), testUser(uniqueName("bob"))]);
    await Promise.all([
      createTenant(a, {
        owners: [{ kind: "User", name: alice.name }],
        namespaces: [{ name: "dev" }, { name: "prod" }, { name: "test" }],
      }),
      createTenant(b, {
        owners: [{ kind: "User", name: bob.name }],
        namespaces: [{ name: "dev" }, { name: "prod" }],
      }),
    ]);
    gw = await startTestGateway();
    await waitForNamespaces(gw.informers, [...aNamespaces, ...bNamespaces]);
    aliceConfig = gatewayKubeconfig(gw.gateway, alice);
    bobConfig = gatewayKubeconfig(gw.gateway, bob);
  });

  after(async () => {
    await gw?.stop();
    await deleteTenants([a, b]);
    for (const ns of extra) await core.deleteNamespace({ name: ns }).catch(() => {});
  });

  test("kubectl get ns lists exactly the tenant's own namespaces", async () => {
    const table = await kubectl(aliceConfig, ["get", "ns"]);
    assert.equal(table.code, 0, table.stderr);
    assert.deepEqual(names(table.stdout), aNamespaces);
    const byName = await kubectl(aliceConfig, ["get", "ns", "-o", "name"]);
    assert.deepEqual(
      byName.stdout.trim().split("\n").sort(),
      aNamespaces.map((n) => `namespace/${n}`),
    );
    const bobs = await kubectl(bobConfig, ["get", "ns", "-o", "json"]);
    const items = (JSON.parse(bobs.stdout) as { items: { metadata: { name: string } }[] }).items;
    assert.deepEqual(items.map((i) => i.metadata.name).sort(), bNamespaces);
  });

  test("kubectl get ns -w shows the tenant's namespaces only, including one created meanwhile", async () => {
    const newA = `${a}-late`;
    const newB = `${b}-late`;
    extra.push(newA, newB);
    const watch = spawnKubectl(aliceConfig, ["get", "ns", "-w"]);
    try {
      await eventually(() => assert.deepEqual(names(watch.output()), aNamespaces), { timeoutMs: 15_000 });
      await createTenantNamespace(b, newB);
      await createTenantNamespace(a, newA);
      await eventually(() => assert.ok(names(watch.output()).includes(newA), watch.output()), {
        timeoutMs: 15_000,
      });
      // Give a leaked event for B's namespace time to arrive.
      await sleep(2000);
    } finally {
      watch.child.kill();
    }
    const seen = new Set(names(watch.output()));
    assert.deepEqual([...seen].sort(), [...aNamespaces, newA].sort(), watch.output());
  });

  test("another tenant's namespace is not found; its objects are forbidden", async () => {
    const get = await kubectl(aliceConfig, ["get", "ns", bNamespaces[0]!]);
    assert.notEqual(get.code, 0);
    assert.match(get.stderr, new RegExp(`\\(NotFound\\): namespaces "${bNamespaces[0]}" not found`));
    const nonexistent = await kubectl(aliceConfig, ["get", "ns", `${b}-nothing`]);
    assert.match(nonexistent.stderr, /\(NotFound\): namespaces ".*" not found/);

    const pods = await kubectl(aliceConfig, ["-n", bNamespaces[0]!, "get", "pods"]);
    assert.notEqual(pods.code, 0);
    assert.match(pods.stderr, /\(Forbidden\)/);
    assert.match(pods.stderr, new RegExp(`User "${alice.name}" cannot list resource "pods"`));
  });

  test("tenant A's owner cannot change tenant B's objects", async () => {
    const create = await kubectl(aliceConfig, [
      "-n",
      bNamespaces[0]!,
      "create",
      "configmap",
      "intruder",
      "--from-literal=a=b",
    ]);
    assert.notEqual(create.code, 0);
    assert.match(create.stderr, /configmaps is forbidden: User ".*" cannot create resource "configmaps"/);
    const label = await kubectl(aliceConfig, ["label", "ns", bNamespaces[0]!, "owned=alice"]);
    assert.notEqual(label.code, 0);
    assert.match(label.stderr, /\(NotFound\)/);
    const remove = await kubectl(aliceConfig, ["delete", "ns", bNamespaces[0]!, "--wait=false"]);
    assert.notEqual(remove.code, 0);
    assert.match(remove.stderr, /\(NotFound\)/);
    await core.readNamespace({ name: bNamespaces[0]! });
  });

  test("the owner creates and deletes a ConfigMap in the tenant's namespace", async () => {
    const ns = aNamespaces[0]!;
    const create = await kubectl(aliceConfig, [
      "-n",
      ns,
      "create",
      "configmap",
      "settings",
      "--from-literal=k=v",
    ]);
    assert.equal(create.code, 0, create.stderr);
    const read = await core.readNamespacedConfigMap({ name: "settings", namespace: ns });
    assert.equal(read.data?.k, "v");
    const get = await kubectl(aliceConfig, [
      "-n",
      ns,
      "get",
      "configmap",
      "settings",
      "-o",
      "jsonpath={.data.k}",
    ]);
    assert.equal(get.stdout, "v");
    const remove = await kubectl(aliceConfig, ["-n", ns, "delete", "configmap", "settings"]);
    assert.equal(remove.code, 0, remove.stderr);
    await assert.rejects(core.readNamespacedConfigMap({ name: "settings", namespace: ns }));
  });

  test("with the server at /tenants/{tenant}, kubectl discovers the API and works in that tenant", async () => {
    const scoped = gatewayKubeconfig(gw.gateway, alice, `/tenants/${a}`);
    const resources = await kubectl(scoped, ["api-resources", "-o", "name"]);
    assert.equal(resources.code, 0, resources.stderr);
    assert.ok(resources.stdout.split("\n").includes("namespaces"));
    assert.ok(resources.stdout.split("\n").includes("deployments.apps"));
    const version = await kubectl(scoped, ["version", "-o", "json"]);
    assert.equal(version.code, 0, version.stderr);
    const ns = await kubectl(scoped, ["get", "ns"]);
    assert.equal(ns.code, 0, ns.stderr);
    assert.deepEqual(
      names(ns.stdout).filter((n) => !extra.includes(n)),
      aNamespaces,
    );
    const cms = await kubectl(scoped, ["-n", aNamespaces[1]!, "get", "configmaps", "-o", "name"]);
    assert.equal(cms.code, 0, cms.stderr);
    assert.match(cms.stdout, /configmap\/kube-root-ca\.crt/);

    // B's namespace does not exist under A's path, even for reading objects in it.
    const other = await kubectl(scoped, ["-n", bNamespaces[0]!, "get", "configmaps"]);
    assert.match(other.stderr, new RegExp(`\\(NotFound\\): .*namespaces "${bNamespaces[0]}" not found`));
  });

  test("a tenant the caller does not belong to does not exist under /tenants/", async () => {
    const intruding = gatewayKubeconfig(gw.gateway, alice, `/tenants/${b}`);
    const ns = await kubectl(intruding, ["get", "ns"]);
    assert.notEqual(ns.code, 0);
    assert.doesNotMatch(ns.stdout + ns.stderr, new RegExp(bNamespaces.join("|")));
    const nonexistent = gatewayKubeconfig(gw.gateway, alice, `/tenants/${b}-none`);
    const missing = await kubectl(nonexistent, ["-n", "default", "get", "configmaps"]);
    assert.notEqual(missing.code, 0);
    // Same answer for a tenant that exists but is not theirs and one that does not exist.
    const theirs = await kubectl(intruding, ["-n", "default", "get", "configmaps"]);
    const lastLine = (stderr: string) => stderr.trim().split("\n").at(-1);
    assert.match(lastLine(theirs.stderr) ?? "", /\(NotFound\)/);
    assert.equal(lastLine(theirs.stderr), lastLine(missing.stderr));
  });
});
