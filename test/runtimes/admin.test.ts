/**
 * The runtimes Admin API of the tenantry serving the home cluster, called as users, runtime agents
 * and delegating admins: Runtime objects are created, read, stopped and deleted for real, and the
 * runtimes controller acts on them. The main service's runtimes are placed on nodes that do not
 * exist, so they stay starting for as long as a test needs them to; another service's run.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { type KubernetesObject, PatchStrategy } from "@kubernetes/client-node";
import { Authenticator, type BuiltinIdentity } from "../../src/identity/index.js";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import {
  AGENT_SERVICE_ACCOUNT,
  RUNTIME_LABEL,
  RUNTIMES_AUDIENCE,
  RUNTIMES_DELEGATE_CLUSTER_ROLE,
  runtimePlacement,
  startRuntimesAdmin,
} from "../../src/runtimes/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { adminCall, clusterClient, removeObject } from "../support/runtimes.js";

const API = "tenantry.dev/v1alpha1";

const call = adminCall;
const home = () => clusterClient();
const remove = removeObject;

const HOLD = "test.tenantry.dev/hold";

/** Sets an object's finalizers from its current ones, again while someone else changes it meanwhile. */
async function setFinalizers(
  client: ClusterClient,
  ref: KubernetesObject & { metadata: { name: string; namespace: string } },
  change: (list: string[]) => string[],
): Promise<void> {
  await eventually(async () => {
    const current = await client.objects.read(ref);
    await client.objects.patchRaw(
      {
        ...ref,
        metadata: {
          ...ref.metadata,
          resourceVersion: current.metadata!.resourceVersion!,
          finalizers: change(current.metadata?.finalizers ?? []),
        },
      } as KubernetesObject,
      PatchStrategy.MergePatch,
    );
  });
}

describe("runtimes Admin API", () => {
  const client = home();
  const tenant = uniqueName("rta");
  const otherTenant = uniqueName("rtb");
  const service = uniqueName("svc");
  const alice = uniqueName("alice");
  const bob = uniqueName("bob");
  const carol = uniqueName("carol");
  const admin = uniqueName("admin");
  const dave = uniqueName("dave");
  const erin = uniqueName("erin");
  const runnable = uniqueName("run");
  const password = "runtime-secret-1";
  const tokens: Record<string, string> = {};
  let identity: BuiltinIdentity;
  const serviceObject = {
    apiVersion: API,
    kind: "RuntimeService",
    metadata: { name: service },
    spec: {
      plugin: { builtin: "generic" },
      defaults: { image: "example/app:1", port: 8888 },
      limits: { concurrentStartsPerUser: 2, concurrentStarts: 100, instancesPerUser: 3 },
      // No node carries this label: the runtimes' pods wait to be scheduled, their starts go on.
      pods: { nodeSelector: { "tenantry.dev/test-no-such-node": "none" } },
    },
  };
  const runnableObject = {
    apiVersion: API,
    kind: "RuntimeService",
    metadata: { name: runnable },
    spec: { plugin: { builtin: "generic" }, defaults: { image: "example/app:1", port: 8888 } },
  };

  before(async () => {
    assert.ok(testEnvironment().tenantry.runtimesAdminUrl, "the test tenantry serves the runtimes Admin API");
    identity = await sharedBuiltinIdentity();
    await client.objects.create(serviceObject);
    await client.objects.create(runnableObject);
    for (const [name, t] of [
      [alice, tenant],
      [bob, tenant],
      [dave, tenant],
      [erin, tenant],
      [carol, otherTenant],
      [admin, otherTenant],
    ] as const) {
      await identity.createUser({ name, password, tenant: t, tenantAdmin: false });
      tokens[name] = (await identity.login({ username: name, password })).token;
    }
    await client.objects.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `${admin}-delegate` },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: RUNTIMES_DELEGATE_CLUSTER_ROLE,
      },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: admin }],
    } as KubernetesObject);
    // The service reaches the Admin API's informer.
    await eventually(async () => {
      const r = await call("GET", `/services/${alice}/${service}/none`, tokens[alice]);
      assert.equal(r.status, 404);
      assert.match(String(r.body.detail), /no runtime/);
    });
  });

  after(async () => {
    await remove(client, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: `${admin}-delegate` },
    });
    await remove(client, serviceObject);
    await remove(client, runnableObject);
    for (const name of [alice, bob, carol, admin, dave]) await identity?.deleteUser(name).catch(() => {});
    for (const user of [alice, bob, dave]) {
      await remove(client, {
        apiVersion: "v1",
        kind: "Namespace",
        metadata: { name: runtimePlacement({ tenant, user, service, instance: "x" }).namespace },
      });
    }
    for (const t of [tenant, otherTenant])
      await remove(client, { apiVersion: API, kind: "Tenant", metadata: { name: t } });
    await stopSharedBuiltinIdentity();
  });

  test("a start creates one Runtime in the user's tenant namespace and answers 202 with where to watch", async () => {
    const r = await call("POST", `/services/${alice}/${service}/one`, tokens[alice], { cpu: "1" });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const placement = runtimePlacement({ tenant, user: alice, service, instance: "one" });
    assert.equal(r.body.namespace, placement.namespace);
    assert.equal(r.body.name, placement.name);
    assert.equal(r.headers.get("location"), r.body.progressUrl);
    assert.ok(Number(r.headers.get("retry-after")) > 0);
    const runtime = (await client.objects.read({
      apiVersion: API,
      kind: "Runtime",
      metadata: placement,
    })) as KubernetesObject & {
      spec: Record<string, unknown>;
    };
    assert.deepEqual(runtime.spec, {
      user: alice,
      tenant,
      service,
      instance: "one",
      desiredState: "Running",
      config: { image: "example/app:1", port: 8888, cpu: "1" },
    });
    const ns = await client.core.readNamespace({ name: placement.namespace });
    assert.equal(ns.metadata?.labels?.["tenantry.dev/tenant"], tenant);
  });

  test("the same start again answers the same runtime; a changed parameter is 409 naming it", async () => {
    const again = await call("POST", `/services/${alice}/${service}/one`, tokens[alice], { cpu: "1" });
    assert.equal(again.status, 202);
    assert.equal(again.body.name, runtimePlacement({ tenant, user: alice, service, instance: "one" }).name);
    const changed = await call("POST", `/services/${alice}/${service}/one`, tokens[alice], { cpu: "2" });
    assert.equal(changed.status, 409);
    assert.equal(changed.body.field, "cpu");
  });

  test("ten concurrent starts of one instance make one runtime", async () => {
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => call("POST", `/services/${bob}/${service}/same`, tokens[bob], {})),
    );
    assert.deepEqual(new Set(replies.map((r) => r.status)), new Set([202]));
    assert.equal(new Set(replies.map((r) => r.body.name)).size, 1);
    const list = await client.objects.list(
      API,
      "Runtime",
      runtimePlacement({ tenant, user: bob, service, instance: "x" }).namespace,
    );
    assert.equal(list.items.length, 1);
  });

  test("unknown service 404, bad names and bodies 400, a body over the limit 413, naming the field and the limit", async () => {
    const unknown = await call("POST", `/services/${alice}/no-such-service/one`, tokens[alice], {});
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.field, "service");
    const bad = await call("POST", `/services/${alice}/${service}/Not_A_Label`, tokens[alice], {});
    assert.equal(bad.status, 400);
    assert.equal(bad.body.field, "instance");
    assert.ok(bad.body.limit);
    const array = await call("POST", `/services/${alice}/${service}/one`, tokens[alice], [1]);
    assert.equal(array.status, 400);
    const big = await call("POST", `/services/${alice}/${service}/big`, tokens[alice], {
      blob: "x".repeat(70 * 1024),
    });
    assert.equal(big.status, 413);
    assert.equal(big.body.field, "body");
    assert.equal(big.body.limit, 64 * 1024);
  });

  test("over the per-user concurrent starts 429 with Retry-After naming the limit", async () => {
    // alice has `one` starting; a second start fits, a third does not.
    assert.equal((await call("POST", `/services/${alice}/${service}/two`, tokens[alice], {})).status, 202);
    const refused = await call("POST", `/services/${alice}/${service}/three`, tokens[alice], {});
    assert.equal(refused.status, 429);
    assert.equal(refused.body.field, "limits.concurrentStartsPerUser");
    assert.equal(refused.body.limit, 2);
    assert.ok(Number(refused.headers.get("retry-after")) > 0);
  });

  test("starts sent at once count exactly: concurrentStartsPerUser 2 accepts two of three, the third 429 naming 2", async () => {
    const answers = await Promise.all(
      ["b1", "b2", "b3"].map((instance) =>
        call("POST", `/services/${erin}/${service}/${instance}`, tokens[erin], {}),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(statuses, [202, 202, 429], JSON.stringify(answers.map((a) => a.body)));
    const refused = answers.find((a) => a.status === 429)!;
    assert.equal(refused.body.field, "limits.concurrentStartsPerUser");
    assert.equal(refused.body.limit, 2);
    assert.match(String(refused.body.detail), /has 2 starts/);
  });

  test("GET answers 503 with phase and Retry-After while starting, 200 with the proxy URL when running", async () => {
    const starting = await call("GET", `/services/${alice}/${service}/one`, tokens[alice]);
    assert.equal(starting.status, 503);
    assert.ok(["Pending", "Starting"].includes(String(starting.body.phase)), String(starting.body.phase));
    assert.ok(starting.headers.get("retry-after"));

    // A service whose runtimes run: the progress stream follows the controller to the runtime's URL.
    const path = `/services/${dave}/${runnable}/one`;
    assert.equal((await call("POST", path, tokens[dave], {})).status, 202);
    const res = await fetch(`${testEnvironment().tenantry.runtimesAdminUrl}${path}/progress`, {
      headers: { authorization: `Bearer ${tokens[dave]}` },
    });
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const events = (await res.text())
      .split("\n\n")
      .filter((e) => e.startsWith("data: "))
      .map((e) => JSON.parse(e.slice(6)) as { progress: number; ready: boolean; url?: string });
    const last = events.at(-1)!;
    assert.equal(last.ready, true, JSON.stringify(events));
    assert.equal(last.progress, 100);
    const placement = runtimePlacement({ tenant, user: dave, service: runnable, instance: "one" });
    const runtime = (await client.objects.read({
      apiVersion: API,
      kind: "Runtime",
      metadata: placement,
    })) as {
      status: { route: { token: string } };
    } & KubernetesObject;
    assert.match(String(last.url), new RegExp(`/r/${runtime.status.route.token}/$`));

    const running = await eventually(async () => {
      const r = await call("GET", path, tokens[dave]);
      assert.equal(r.status, 200);
      return r;
    });
    assert.equal(running.body.phase, "Running");
    assert.equal(running.body.ready, true);
    assert.equal(running.body.url, last.url);
    const answer = await call("POST", path, tokens[dave], {});
    assert.equal(answer.status, 201);
  });

  test("a user acts only on their own runtimes in their tenant", async () => {
    const other = await call("GET", `/services/${alice}/${service}/one`, tokens[bob]);
    assert.equal(other.status, 403);
    assert.match(String(other.body.detail), /own runtimes/);
    const start = await call("POST", `/services/${alice}/${service}/four`, tokens[bob], {});
    assert.equal(start.status, 403);
    const unauth = await call("GET", `/services/${alice}/${service}/one`, "not-a-token");
    assert.equal(unauth.status, 401);
    const none = await call("GET", `/services/${alice}/${service}/one`);
    assert.equal(none.status, 401);
  });

  test("lists a user's runtimes a page at a time; all users only with the delegation permission", async () => {
    const first = await call("GET", `/services/${alice}?limit=1`, tokens[alice]);
    assert.equal(first.status, 200);
    assert.equal((first.body.items as unknown[]).length, 1);
    assert.ok(first.body.continue);
    const second = await call(
      "GET",
      `/services/${alice}?limit=1&continue=${first.body.continue}`,
      tokens[alice],
    );
    assert.equal((second.body.items as unknown[]).length, 1);
    assert.equal(second.body.continue, undefined);
    const names = [
      ...(first.body.items as { instance: string }[]),
      ...(second.body.items as { instance: string }[]),
    ].map((i) => i.instance);
    assert.deepEqual(names.sort(), ["one", "two"]);

    assert.equal((await call("GET", "/services", tokens[alice])).status, 403);
    const all = await call("GET", "/services?limit=500", tokens[admin]);
    assert.equal(all.status, 200);
    const users = new Set((all.body.items as { user: string }[]).map((i) => i.user));
    assert.ok(users.has(alice) && users.has(bob));
  });

  test("delegation: refused without the permission, allowed with it, recorded as an Event", async () => {
    const path = `/services/${alice}/${service}/two/stop`;
    const noHeader = await call("DELETE", path, tokens[admin]);
    assert.equal(noHeader.status, 403);
    const noPermission = await call("DELETE", path, tokens[carol], undefined, {
      "tenantry-on-behalf-of": alice,
    });
    assert.equal(noPermission.status, 403);
    assert.match(String(noPermission.body.detail), /delegate/);
    const mismatch = await call("DELETE", path, tokens[admin], undefined, { "tenantry-on-behalf-of": bob });
    assert.equal(mismatch.status, 400);
    const stopped = await call("DELETE", path, tokens[admin], undefined, { "tenantry-on-behalf-of": alice });
    assert.equal(stopped.status, 202, JSON.stringify(stopped.body));
    assert.equal(stopped.body.desiredState, "Stopped");
    const placement = runtimePlacement({ tenant, user: alice, service, instance: "two" });
    await eventually(async () => {
      const events = await client.core.listNamespacedEvent({
        namespace: placement.namespace,
        fieldSelector: `involvedObject.name=${placement.name}`,
      });
      const event = events.items.find((e) => e.reason === "DelegatedAction");
      assert.ok(event, "an Event records the delegated stop");
      assert.match(event.message ?? "", new RegExp(`${admin}.*stop.*${alice}`));
    });
    await eventually(() => {
      const audit = readFileSync(testEnvironment().tenantry.logFile, "utf8")
        .split("\n")
        .filter((line) => line.includes('"audit":"runtime-delegation"'))
        .map((line) => JSON.parse(line) as Record<string, string>);
      assert.ok(
        audit.some((l) => l.actor === admin && l.onBehalfOf === alice && l.action === "stop"),
        "an audit line names the admin and the user",
      );
    });
    // A delegated start of another user's runtime names that user's tenant.
    const missingTenant = await call(
      "POST",
      `/services/${alice}/${service}/five`,
      tokens[admin],
      {},
      { "tenantry-on-behalf-of": alice },
    );
    assert.equal(missingTenant.status, 400);
    assert.equal(missingTenant.body.field, "tenant");
  });

  test("a runtime pod's agent may stop its own runtime and nothing else", async () => {
    const placement = runtimePlacement({ tenant, user: bob, service, instance: "same" });
    // The runtime's own pod, as the controller made it (waiting for its node), with its agent account.
    const pod = await eventually(async () => {
      const pods = await client.core.listNamespacedPod({
        namespace: placement.namespace,
        labelSelector: `${RUNTIME_LABEL}=${placement.name}`,
      });
      assert.equal(pods.items.length, 1);
      return pods.items[0]!;
    });
    assert.equal(pod.spec?.serviceAccountName, AGENT_SERVICE_ACCOUNT);
    const sa = AGENT_SERVICE_ACCOUNT;
    const issued = await client.core.createNamespacedServiceAccountToken({
      name: sa,
      namespace: placement.namespace,
      body: {
        spec: {
          audiences: [RUNTIMES_AUDIENCE],
          expirationSeconds: 600,
          boundObjectRef: {
            kind: "Pod",
            apiVersion: "v1",
            name: pod.metadata!.name!,
            uid: pod.metadata!.uid!,
          },
        },
      },
    });
    const agent = issued.status!.token;
    const base = `/services/${bob}/${service}/same`;
    assert.equal((await call("GET", base, agent)).status, 403);
    assert.equal((await call("DELETE", base, agent)).status, 403);
    assert.equal((await call("DELETE", `/services/${alice}/${service}/one/stop`, agent)).status, 403);
    // The same service-account token for the API server's audience is no agent's.
    const plain = await client.core.createNamespacedServiceAccountToken({
      name: sa,
      namespace: placement.namespace,
      body: {
        spec: {
          audiences: [],
          expirationSeconds: 600,
          boundObjectRef: {
            kind: "Pod",
            apiVersion: "v1",
            name: pod.metadata!.name!,
            uid: pod.metadata!.uid!,
          },
        },
      },
    });
    const refused = await call("DELETE", `${base}/stop`, plain.status!.token);
    assert.equal(refused.status, 403);
    // Its own stop is allowed (the pod then goes, and its tokens with it).
    const stopped = await call("DELETE", `${base}/stop`, agent);
    assert.equal(stopped.status, 202, JSON.stringify(stopped.body));
    assert.equal(stopped.body.desiredState, "Stopped");
  });

  test("the agent of a runtime in another runtimes cluster is reviewed there and may stop only its own", async () => {
    const env = testEnvironment();
    const edgeEntry = env.clusters.find((c) => c.name === "edge-1")!;
    const edge = loadClusterClient(edgeEntry.name, edgeEntry.kubeconfig);
    const remoteService = uniqueName("remote");
    const secret = uniqueName("edge-kubeconfig");
    const serviceRef = { apiVersion: API, kind: "RuntimeService", metadata: { name: remoteService } };
    const placement = runtimePlacement({ tenant, user: bob, service: remoteService, instance: "far" });
    try {
      await client.core.createNamespacedSecret({
        namespace: "tenantry-system",
        body: {
          metadata: { name: secret },
          stringData: { kubeconfig: readFileSync(edgeEntry.kubeconfig, "utf8") },
        },
      });
      await client.objects.create({
        ...serviceRef,
        spec: {
          plugin: { builtin: "generic" },
          defaults: { image: "example/app:1", port: 8888 },
          cluster: { name: "edge-1", kubeconfigSecretRef: { name: secret } },
        },
      } as KubernetesObject);
      const path = `/services/${bob}/${remoteService}/far`;
      await eventually(async () => assert.equal((await call("POST", path, tokens[bob], {})).status, 202));
      // The runtime's pod, as the controller deployed it in the runtimes cluster.
      const pod = await eventually(async () => {
        const pods = await edge.core.listNamespacedPod({
          namespace: placement.namespace,
          labelSelector: `${RUNTIME_LABEL}=${placement.name}`,
        });
        assert.equal(pods.items.length, 1);
        return pods.items[0]!;
      });
      const tokenFor = async (podName: string, uid: string) =>
        (
          await edge.core.createNamespacedServiceAccountToken({
            name: AGENT_SERVICE_ACCOUNT,
            namespace: placement.namespace,
            body: {
              spec: {
                audiences: [RUNTIMES_AUDIENCE],
                expirationSeconds: 600,
                boundObjectRef: { kind: "Pod", apiVersion: "v1", name: podName, uid },
              },
            },
          })
        ).status!.token;
      const token = await tokenFor(pod.metadata!.name!, pod.metadata!.uid!);
      // A pod in edge-1 labelled with the name of a runtime that runs in home is not that runtime's agent.
      const localName = runtimePlacement({ tenant, user: bob, service, instance: "same" }).name;
      const impostor = await edge.core.createNamespacedPod({
        namespace: placement.namespace,
        body: {
          metadata: { name: `${localName}-pod`, labels: { [RUNTIME_LABEL]: localName } },
          spec: {
            serviceAccountName: AGENT_SERVICE_ACCOUNT,
            containers: [{ name: "app", image: "example/app:1" }],
          },
        },
      });
      const impostorToken = await tokenFor(impostor.metadata!.name!, impostor.metadata!.uid!);
      const local = await call("DELETE", `/services/${bob}/${service}/same/stop`, impostorToken);
      assert.equal(local.status, 403, JSON.stringify(local.body));
      const stopped = await call("DELETE", `${path}/stop`, token);
      assert.equal(stopped.status, 202, JSON.stringify(stopped.body));
      assert.equal(stopped.body.desiredState, "Stopped");
      assert.equal((await call("DELETE", path, tokens[bob])).status, 202);
      await eventually(async () => assert.equal((await call("GET", path, tokens[bob])).status, 404));
    } finally {
      await remove(edge, { apiVersion: "v1", kind: "Namespace", metadata: { name: placement.namespace } });
      await remove(edge, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
      await remove(client, serviceRef);
      await remove(client, {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: secret, namespace: "tenantry-system" },
      });
    }
  });

  test("a stopped runtime resumes on POST; DELETE removes the object", async () => {
    const path = `/services/${bob}/${service}/same`;
    const resumed = await call("POST", path, tokens[bob], {});
    assert.equal(resumed.status, 202);
    assert.equal(resumed.body.desiredState, "Running");
    const deleted = await call("DELETE", path, tokens[bob]);
    assert.equal(deleted.status, 202);
    await eventually(async () => assert.equal((await call("GET", path, tokens[bob])).status, 404));
  });

  test("a start while the runtime is being deleted is 409 with Retry-After, not a second runtime", async () => {
    const path = `/services/${bob}/${service}/going`;
    assert.equal((await call("POST", path, tokens[bob], {})).status, 202);
    const placement = runtimePlacement({ tenant, user: bob, service, instance: "going" });
    const ref = { apiVersion: API, kind: "Runtime", metadata: placement };
    // Holds the object (as a slow clean-up would) until the test lets go.
    await setFinalizers(client, ref, (list) => {
      assert.ok(list.length, "the controller's finalizer is set");
      return [...list, HOLD];
    });
    assert.equal((await call("DELETE", path, tokens[bob])).status, 202);
    const refused = await eventually(async () => {
      const r = await call("POST", path, tokens[bob], {});
      assert.equal(r.status, 409);
      return r;
    });
    assert.equal(refused.body.phase, "Deleting");
    assert.ok(refused.headers.get("retry-after"));
    // Only the test's own finalizer goes: the controller's clean-up still runs.
    await setFinalizers(client, ref, (list) => list.filter((f) => f !== HOLD));
    await eventually(async () => assert.equal((await call("GET", path, tokens[bob])).status, 404));
  });

  test("two Admin API replicas answer concurrent starts of one instance with one runtime", async () => {
    const second = await startRuntimesAdmin({
      client,
      authenticator: new Authenticator({ providers: [identity] }),
    });
    try {
      const path = `/services/${bob}/${service}/twice`;
      const replies = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          if (i % 2 === 0) return call("POST", path, tokens[bob], {});
          const res = await fetch(`${second.url}${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${tokens[bob]}`, "content-type": "application/json" },
            body: "{}",
          });
          return { status: res.status, body: (await res.json()) as Record<string, unknown> };
        }),
      );
      assert.deepEqual(
        new Set(replies.map((r) => r.status)),
        new Set([202]),
        JSON.stringify(replies.map((r) => r.body)),
      );
      const uids = new Set<string>();
      const placement = runtimePlacement({ tenant, user: bob, service, instance: "twice" });
      const list = await client.objects.list(API, "Runtime", placement.namespace);
      for (const item of list.items) if (item.metadata?.name === placement.name) uids.add(item.metadata.uid!);
      assert.equal(uids.size, 1);
      assert.equal((await call("DELETE", path, tokens[bob])).status, 202);
    } finally {
      await second.stop();
    }
  });

  test("another tenant's user sees none of them", async () => {
    const r = await call("GET", `/services/${carol}`, tokens[carol]);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.items, []);
  });
});
