/** `tenantry runtime …` against the runtimes Admin API of the tenantry serving the home cluster. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { parse } from "yaml";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { isNotFound, loadClusterClient } from "../../src/kube/index.js";
import { runtimePlacement } from "../../src/runtimes/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { tenantryCli } from "../support/kubectl.js";

const API = "tenantry.dev/v1alpha1";

describe("tenantry runtime", () => {
  const env = testEnvironment();
  const entry = env.clusters.find((c) => c.name === env.tenantry.cluster)!;
  const client = loadClusterClient(entry.name, entry.kubeconfig);
  const tenant = uniqueName("rtc");
  const service = uniqueName("cli");
  const user = uniqueName("erin");
  let identity: BuiltinIdentity;
  let connection: string[];
  const serviceObject = {
    apiVersion: API,
    kind: "RuntimeService",
    metadata: { name: service },
    spec: { plugin: { builtin: "generic" }, defaults: { image: "example/app:1" } },
  };
  // Its runtimes' pods wait for a node that does not exist: they stay starting.
  const waiting = uniqueName("cli-wait");
  const waitingObject = {
    apiVersion: API,
    kind: "RuntimeService",
    metadata: { name: waiting },
    spec: {
      plugin: { builtin: "generic" },
      defaults: { image: "example/app:1" },
      pods: { nodeSelector: { "tenantry.dev/test-no-such-node": "none" } },
    },
  };
  const cli = (...args: string[]) => tenantryCli(["runtime", ...args, ...connection]);
  const remove = async (obj: KubernetesObject) => {
    try {
      await client.objects.delete(obj);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  };

  before(async () => {
    identity = await sharedBuiltinIdentity();
    await client.objects.create(serviceObject);
    await client.objects.create(waitingObject);
    await identity.createUser({ name: user, password: "erin-secret-1", tenant, tenantAdmin: false });
    const token = (await identity.login({ username: user, password: "erin-secret-1" })).token;
    connection = ["--url", env.tenantry.runtimesAdminUrl!, "--token", token];
    await eventually(async () => assert.equal((await cli("status", service, "none")).code, 3));
  });

  after(async () => {
    await remove(serviceObject);
    await remove(waitingObject);
    await identity?.deleteUser(user).catch(() => {});
    const ns = runtimePlacement({ tenant, user, service, instance: "x" }).namespace;
    await remove({ apiVersion: "v1", kind: "Namespace", metadata: { name: ns } });
    await remove({ apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await stopSharedBuiltinIdentity();
  });

  test("start follows the progress stream until the runtime answers, then prints its URL", async () => {
    const placement = runtimePlacement({ tenant, user, service, instance: "one" });
    const result = await cli("start", service, "one", "--set", "cpu=1");
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /starting/);
    const runtime = (await client.objects.read({
      apiVersion: API,
      kind: "Runtime",
      metadata: placement,
    })) as {
      status: { route: { token: string } };
    } & KubernetesObject;
    assert.match(result.stdout, new RegExp(`url: .*/r/${runtime.status.route.token}/`));
    assert.match(result.stdout, /Running \(Ready\), ready/);
  });

  test("status, list and the output formats", async () => {
    const json = await cli("status", service, "one", "-o", "json");
    assert.equal(json.code, 0, json.stderr);
    assert.equal(JSON.parse(json.stdout).phase, "Running");
    assert.equal((await cli("start", waiting, "two", "--no-wait")).code, 0);
    const pending = await cli("status", waiting, "two", "-o", "yaml");
    assert.equal(pending.code, 0, pending.stderr);
    assert.ok(["Pending", "Starting"].includes(parse(pending.stdout).phase), pending.stdout);
    assert.equal(parse(pending.stdout).ready, false);
    const list = await cli("list", "--limit", "1");
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /INSTANCE/);
    assert.match(list.stdout, /one/);
    assert.match(list.stdout, /two/);
  });

  test("share shows and replaces whom the runtime is shared with; over the limit is bad input naming it", async () => {
    const shown = await cli("share", service, "one");
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /shared with nobody/);
    const shared = await cli(
      "share",
      service,
      "one",
      "--with",
      "frank",
      "--with",
      "gina",
      "--with-group",
      "team",
    );
    assert.equal(shared.code, 0, shared.stderr);
    assert.match(shared.stdout, /shared with users frank, gina; groups team/);
    const runtime = (await client.objects.read({
      apiVersion: API,
      kind: "Runtime",
      metadata: runtimePlacement({ tenant, user, service, instance: "one" }),
    })) as { spec: { access?: { users?: string[]; groups?: string[] } } } & KubernetesObject;
    assert.deepEqual(runtime.spec.access, { users: ["frank", "gina"], groups: ["team"] });
    const many = Array.from({ length: 65 }, (_, i) => ["--with", `u${i}`]).flat();
    const tooMany = await cli("share", service, "one", ...many);
    assert.equal(tooMany.code, 2);
    assert.match(tooMany.stderr, /field users, limit 64/);
    const json = await cli("share", service, "one", "--none", "-o", "json");
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), { users: [], groups: [] });
  });

  test("exit codes: 2 bad input, 3 not found, 4 conflicting parameters", async () => {
    const bad = await cli("start", service, "Bad_Name", "--no-wait");
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /instance/);
    const unknown = await cli("start", "no-such-service", "one", "--no-wait");
    assert.equal(unknown.code, 3);
    const conflict = await cli("start", service, "one", "--set", "cpu=2", "--no-wait");
    assert.equal(conflict.code, 4);
    assert.match(conflict.stderr, /field cpu/);
    const noToken = await tenantryCli([
      "runtime",
      "list",
      "--url",
      env.tenantry.runtimesAdminUrl!,
      "--token",
      "nope",
      "--user",
      user,
    ]);
    assert.equal(noToken.code, 2);
  });

  test("stop, resume and delete", async () => {
    const stopped = await cli("stop", waiting, "two", "-o", "json");
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal(JSON.parse(stopped.stdout).desiredState, "Stopped");
    const deleted = await cli("delete", waiting, "two");
    assert.equal(deleted.code, 0, deleted.stderr);
    await eventually(async () => assert.equal((await cli("status", waiting, "two")).code, 3));
    assert.equal((await cli("delete", service, "one")).code, 0);
  });
});
