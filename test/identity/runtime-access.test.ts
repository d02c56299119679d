/**
 * A user's runtimes namespace is theirs, probed from the side of the tenant's other people through
 * the real kube-apiserver (token and authorization webhooks wired to tenantry) and the real kubectl:
 * alice starts a runtime, which puts her runtimes namespace `<tenant>-rt-alice` in the tenant; bob,
 * a fellow member, reads nothing there (Secrets, ConfigMaps, logs) and reaches nothing (exec,
 * port-forward) until alice lets him in with an AccessGrant, and nothing once she deletes it; olga,
 * the tenant's admin, sees what runs there but not its Secrets or logs, unless the tenant's
 * spec.runtimeAccess.owners gives her Full access, whose every use is recorded as an Event.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { DynamicObjectApi } from "../../src/kube/index.js";
import { runtimePlacement } from "../../src/runtimes/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import {
  accessRequest,
  createTestUser,
  sharedBuiltinIdentity,
  stopSharedBuiltinIdentity,
  tokenKubeconfig,
} from "../support/identity.js";
import { kubectl, patchTenant } from "../support/kubectl.js";
import { adminCall, clusterClient, removeObject } from "../support/runtimes.js";

const API = "tenantry.dev/v1alpha1";
const tenant = uniqueName("rtx");
const olga = uniqueName("olga"); // the tenant's admin: an owner
const alice = uniqueName("alice");
const bob = uniqueName("bob");
const service = uniqueName("rtsvc");
const password = "runtime-access-1";
const namespace = runtimePlacement({ tenant, user: alice, service, instance: "lab" }).namespace;
const adminKubeconfig = () => testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig;

const serviceObject = {
  apiVersion: API,
  kind: "RuntimeService",
  metadata: { name: service },
  spec: {
    plugin: { builtin: "generic" },
    defaults: { image: "example/app:1", port: 8888 },
    // No node carries this label: the runtime's pod stays pending, its namespace and objects stay.
    pods: { nodeSelector: { "tenantry.dev/test-no-such-node": "none" } },
  },
};

const grant = {
  apiVersion: API,
  kind: "AccessGrant",
  metadata: { name: "let-bob-read", namespace },
  spec: {
    grantees: [{ kind: "User", name: bob }],
    rules: [{ apiGroups: [""], resources: ["secrets", "pods/log"], verbs: ["get", "list", "watch"] }],
  },
};

function forbidden(result: { code: number; stderr: string }, pattern: RegExp, what: string): void {
  assert.notEqual(result.code, 0, `${what} was allowed`);
  assert.match(result.stderr, /Forbidden|forbidden/, `${what}: ${result.stderr}`);
  assert.match(result.stderr, pattern, what);
}

describe("a user's runtimes namespace is theirs", () => {
  const kubeconfigs: Record<string, string> = {};
  let pod = "";

  const as = (user: string, args: string[], input?: string) =>
    kubectl(kubeconfigs[user]!, ["-n", namespace, ...args], input);
  /** kubectl's answer, yes or no (without the reason it prints after a refusal). */
  const canI = async (user: string, verb: string, resource: string) => {
    const [kind, subresource] = resource.split("/");
    const args = ["auth", "can-i", verb, kind!, ...(subresource ? [`--subresource=${subresource}`] : [])];
    return (await as(user, args)).stdout.trim().split(" ")[0];
  };

  before(async () => {
    await createTestUser({ name: olga, password, tenant, tenantAdmin: true });
    for (const user of [alice, bob]) await createTestUser({ name: user, password, tenant });
    const tokens: Record<string, string> = {};
    for (const user of [olga, alice, bob]) {
      // A login through the access server puts the user in the tenant (olga as its owner).
      const res = await accessRequest("POST", "/identity/v1/login", { body: { username: user, password } });
      assert.equal(res.status, 200, res.body);
      tokens[user] = res.json<{ token: string }>().token;
      kubeconfigs[user] = tokenKubeconfig(tokens[user]!);
    }
    await clusterClient().objects.create(serviceObject);
    await eventually(
      async () => {
        const started = await adminCall("POST", `/services/${alice}/${service}/lab`, tokens[alice], {});
        assert.ok([201, 202].includes(started.status), JSON.stringify(started.body));
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    // The namespace is alice's once the tenant controller has bound her there.
    await eventually(
      async () => {
        assert.equal(await canI(alice, "create", "secrets"), "yes");
        assert.equal(await canI(alice, "create", "accessgrants.tenantry.dev"), "yes");
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const created = await as(alice, [
      "create",
      "secret",
      "generic",
      "jupyter-lab-token",
      "--from-literal=token=s3cret",
    ]);
    assert.equal(created.code, 0, created.stderr);
    const config = await as(alice, ["create", "configmap", "lab-settings", "--from-literal=theme=dark"]);
    assert.equal(config.code, 0, config.stderr);
    pod = await eventually(
      async () => {
        const listed = await kubectl(adminKubeconfig(), ["-n", namespace, "get", "pods", "-o", "name"]);
        const name = listed.stdout.trim().split("\n")[0]?.replace("pod/", "");
        assert.ok(name, `the runtime's pod in ${namespace}`);
        return name;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
  });

  after(async () => {
    const client = clusterClient();
    await adminCall("DELETE", `/services/${alice}/${service}/lab`).catch(() => {});
    await removeObject(client, serviceObject);
    await removeObject(client, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    const identity = await sharedBuiltinIdentity();
    for (const user of [olga, alice, bob]) await identity.deleteUser(user).catch(() => {});
    await DynamicObjectApi.forKubeConfig(testKubeConfig())
      .delete({ apiVersion: API, kind: "Tenant", metadata: { name: tenant } })
      .catch(() => {});
    await stopSharedBuiltinIdentity();
  });

  it("a fellow member reads, execs, follows logs and port-forwards nothing there", async () => {
    const why = new RegExp(`runtimes namespace of user "${alice}"`);
    forbidden(await as(bob, ["get", "secret", "jupyter-lab-token"]), why, "get secret");
    forbidden(await as(bob, ["get", "secrets"]), why, "list secrets");
    forbidden(await as(bob, ["get", "configmap", "lab-settings"]), why, "get configmap");
    forbidden(await as(bob, ["get", "pod", pod, "-o", "yaml"]), why, "read the pod's args");
    forbidden(await as(bob, ["logs", pod]), why, "logs");
    forbidden(await as(bob, ["exec", pod, "--", "id"]), why, "exec");
    forbidden(await as(bob, ["port-forward", `pod/${pod}`, "18888:8888"]), /forbidden/i, "port-forward");
    for (const [verb, resource] of [
      ["get", "secrets"],
      ["list", "secrets"],
      ["watch", "secrets"],
      ["get", "configmaps"],
      ["create", "pods/exec"],
      ["get", "pods/log"],
      ["create", "pods/portforward"],
    ] as const) {
      assert.equal(await canI(bob, verb, resource), "no", `bob may ${verb} ${resource}`);
    }
    assert.equal(await canI(alice, "get", "secrets"), "yes", "alice reads her own");
    assert.equal(await canI(alice, "create", "pods/exec"), "yes", "alice execs into her own runtime");
  });

  it("an AccessGrant from alice lets him do exactly what it names, until she deletes it", async () => {
    const created = await as(alice, ["create", "-f", "-"], JSON.stringify(grant));
    assert.equal(created.code, 0, created.stderr);
    try {
      await eventually(
        async () => {
          const read = await as(bob, ["get", "secret", "jupyter-lab-token", "-o", "jsonpath={.data.token}"]);
          assert.equal(read.code, 0, read.stderr);
          assert.equal(Buffer.from(read.stdout, "base64").toString(), "s3cret");
          // kube-apiserver keeps a refusal for a few seconds (the webhook's unauthorizedTTL), and
          // the test before asked exactly this.
          assert.equal(await canI(bob, "get", "pods/log"), "yes");
        },
        { timeoutMs: 30_000, intervalMs: 1000 },
      );
      assert.equal(await canI(bob, "create", "pods/exec"), "no", "exec was not granted");
      forbidden(
        await as(bob, ["get", "configmap", "lab-settings"]),
        /runtimes namespace/,
        "configmaps were not granted",
      );
    } finally {
      const deleted = await as(alice, ["delete", "accessgrant", grant.metadata.name]);
      assert.equal(deleted.code, 0, deleted.stderr);
    }
    await eventually(
      async () =>
        forbidden(
          await as(bob, ["get", "secret", "jupyter-lab-token"]),
          /runtimes namespace/,
          "after revoking",
        ),
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
  });

  it("the tenant's owner sees what runs there (View, the default), not its Secrets, logs or insides", async () => {
    const listed = await as(olga, ["get", "pods", "-o", "name"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(pod));
    assert.equal(await canI(olga, "get", "runtimes.tenantry.dev"), "yes");
    const policy = /spec\.runtimeAccess\.owners of tenant ".*" is View/;
    forbidden(await as(olga, ["get", "secret", "jupyter-lab-token"]), policy, "owner get secret");
    forbidden(await as(olga, ["get", "configmap", "lab-settings"]), policy, "owner get configmap");
    forbidden(await as(olga, ["logs", pod]), policy, "owner logs");
    forbidden(await as(olga, ["exec", pod, "--", "id"]), policy, "owner exec");
    forbidden(await as(olga, ["delete", "pod", pod]), policy, "owner delete pod");
  });

  it("with spec.runtimeAccess.owners Full the owner reads Secrets too, and each such use is recorded", async () => {
    await patchTenant(adminKubeconfig(), tenant, { runtimeAccess: { owners: "Full" } });
    await eventually(
      async () => {
        const read = await as(olga, ["get", "secret", "jupyter-lab-token", "-o", "name"]);
        assert.equal(read.code, 0, read.stderr);
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    await eventually(
      async () => {
        const events = await kubectl(adminKubeconfig(), [
          "-n",
          namespace,
          "get",
          "events",
          "--field-selector",
          "reason=OwnerAccess",
          "-o",
          "jsonpath={.items[*].message}",
        ]);
        assert.match(
          events.stdout,
          new RegExp(
            `tenant owner "${olga}" was allowed get secrets "jupyter-lab-token" in the runtimes namespace of "${alice}"`,
          ),
        );
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    forbidden(
      await as(bob, ["get", "secret", "jupyter-lab-token"]),
      /runtimes namespace/,
      "members still get nothing",
    );
  });
});
