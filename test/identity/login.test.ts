/**
 * `tenantry login` as a person uses it, against the tenantry running for the tests: a built-in
 * user and a Keystone user (a real Keystone configured into tenantry at run time) log in, get a
 * kubeconfig, and kubectl lands them in their tenant's namespace.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { tenantNameFor } from "../../src/identity/index.js";
import { DynamicObjectApi } from "../../src/kube/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { createTestUser, sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { setProviderSection } from "../support/identity-providers.js";
import { type RunningKeystone, startKeystone } from "../support/keystone.js";
import { kubectl, tenantryCli } from "../support/kubectl.js";

function endpointsFile(): string {
  const env = testEnvironment();
  const home = env.clusters.find((c) => c.name === "home")!;
  return join(home.kubeconfig, "..", "tenantry.json");
}

const tenantsToDelete: string[] = [];

after(async () => {
  const api = DynamicObjectApi.forKubeConfig(testKubeConfig());
  for (const name of tenantsToDelete) {
    await api
      .delete({ apiVersion: "tenantry.dev/v1alpha1", kind: "Tenant", metadata: { name } })
      .catch(() => {});
  }
  await stopSharedBuiltinIdentity();
});

describe("tenantry login with a built-in user", () => {
  const tenant = uniqueName("lgn");
  const user = uniqueName("lou");
  before(async () => {
    tenantsToDelete.push(tenant);
    await createTestUser({ name: user, password: "lou-password-1", tenant });
  });
  after(async () => {
    await (await sharedBuiltinIdentity()).deleteUser(user);
  });

  it("writes a kubeconfig whose context is the tenant's namespace, and kubectl works in it", async () => {
    const out = join(testEnvironment().dir, `${user}.kubeconfig`);
    const r = await tenantryCli(
      ["login", "-u", user, "--password-stdin", "--endpoints", endpointsFile(), "-o", out],
      "lou-password-1\n",
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      new RegExp(
        `logged in as ${user} \\(builtin\\): tenant "${tenant}" as member, namespaces ${tenant}-default`,
      ),
    );
    await eventually(async () => {
      const created = await kubectl(out, ["create", "configmap", "hello"]);
      assert.equal(created.code, 0, created.stderr);
    });
    const ns = await kubectl(out, [
      "config",
      "view",
      "--minify",
      "-o",
      "jsonpath={.contexts[0].context.namespace}",
    ]);
    assert.equal(ns.stdout, `${tenant}-default`);
    // The kubeconfig points at the tenant gateway: the namespace list is the tenant's own.
    const namespaces = await kubectl(out, ["get", "namespaces", "-o", "name"]);
    assert.equal(namespaces.code, 0, namespaces.stderr);
    assert.equal(namespaces.stdout.trim(), `namespace/${tenant}-default`);

    const logout = await tenantryCli(["logout", out, "--endpoints", endpointsFile()], "");
    assert.equal(logout.code, 0, logout.stderr);
    await eventually(
      async () => {
        const denied = await kubectl(out, ["get", "configmaps"]);
        assert.notEqual(denied.code, 0);
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });

  it("refuses a wrong password with exit code 3 and writes nothing", async () => {
    const out = join(testEnvironment().dir, `${user}-wrong.kubeconfig`);
    const r = await tenantryCli(
      ["login", "-u", user, "--password-stdin", "--endpoints", endpointsFile(), "-o", out],
      "not-the-password\n",
    );
    assert.equal(r.code, 3);
    assert.match(r.stderr, /login refused: unknown user name or wrong password/);
    const { existsSync } = await import("node:fs");
    assert.equal(existsSync(out), false);
  });
});

describe("tenantry login with a Keystone user", () => {
  let keystone: RunningKeystone;
  const project = `Blue Team ${uniqueName("p")}`;
  const tenant = tenantNameFor(project);

  before(async () => {
    tenantsToDelete.push(tenant);
    keystone = await startKeystone();
    const blue = await keystone.createProject(project);
    const admin = await keystone.createUser({
      name: "kadmin",
      password: "kadmin-pw-1",
      defaultProject: blue,
    });
    const member = await keystone.createUser({
      name: "kmember",
      password: "kmember-pw-1",
      defaultProject: blue,
    });
    await keystone.assignRole(admin, blue, "admin");
    await keystone.assignRole(member, blue, "member");
    // Configure tenantry (running for the whole test run) to accept this Keystone, beside any
    // provider another test file configures meanwhile.
    await setProviderSection("keystone", { url: keystone.url, service: { ...keystone.service } });
  });

  after(async () => {
    await setProviderSection("keystone", undefined).catch(() => {});
    await keystone?.stop();
  });

  it("the project's admin logs in first: the tenant is created and they land in its namespace as owner", async () => {
    const out = join(testEnvironment().dir, "kadmin.kubeconfig");
    const r = await eventually(
      async () => {
        const res = await tenantryCli(
          [
            "login",
            "--provider",
            "keystone",
            "-u",
            "kadmin",
            "--password-stdin",
            "--endpoints",
            endpointsFile(),
            "-o",
            out,
          ],
          "kadmin-pw-1\n",
        );
        assert.equal(res.code, 0, res.stderr);
        return res;
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    assert.match(r.stdout, new RegExp(`tenant "${tenant}" as admin, namespaces ${tenant}-default`));
    await eventually(async () => {
      const whoami = await kubectl(out, ["auth", "whoami", "-o", "json"]);
      assert.deepEqual(JSON.parse(whoami.stdout).status.userInfo.extra["tenantry.dev/tenant"], [tenant]);
      const canI = await kubectl(out, ["auth", "can-i", "create", "rolebindings"]);
      assert.equal(canI.stdout.trim(), "yes", canI.stderr);
    });
    const pods = await kubectl(out, ["run", "web", "--image=nginx"]);
    assert.equal(pods.code, 0, pods.stderr);
    const other = await kubectl(out, ["-n", "default", "get", "pods"]);
    assert.notEqual(other.code, 0, "a Keystone user sees nothing outside their tenant");
  });

  it("a member logs in next, joins the same tenant, and cannot delete the admin's pod", async () => {
    const out = join(testEnvironment().dir, "kmember.kubeconfig");
    const r = await tenantryCli(
      [
        "login",
        "--provider",
        "keystone",
        "-u",
        "kmember",
        "--password-stdin",
        "--endpoints",
        endpointsFile(),
        "-o",
        out,
      ],
      "kmember-pw-1\n",
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`tenant "${tenant}" as member`));
    await eventually(async () => {
      const list = await kubectl(out, ["get", "pods", "-o", "name"]);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /pod\/web/);
    });
    const denied = await kubectl(out, ["delete", "pod", "web", "--wait=false"]);
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /belongs to user "keystone_kadmin-[0-9a-f]{10}"/);
  });

  it("a wrong Keystone password is refused", async () => {
    const r = await tenantryCli(
      [
        "login",
        "--provider",
        "keystone",
        "-u",
        "kmember",
        "--password-stdin",
        "--endpoints",
        endpointsFile(),
        "-o",
        "/dev/null",
      ],
      "wrong\n",
    );
    assert.equal(r.code, 3, r.stderr);
  });
});
