/**
 * The runtimes controllers of the tenantry serving the home cluster, driven through the Admin API:
 * runtimes start on the simulated nodes (whose pods turn Ready at once), stop, resume, fail and go;
 * one service runs its runtimes in edge-1. The plugins are real: a plugin served over HTTP by this
 * test process (test/support/runtime-plugin.ts) and executables.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import {
  type KubernetesObject,
  PatchStrategy,
  type V1DaemonSet,
  type V1Deployment,
  type V1Namespace,
} from "@kubernetes/client-node";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import type { ClusterClient } from "../../src/kube/index.js";
import {
  AGENT_ENV,
  AGENT_SERVICE_ACCOUNT,
  MIRROR_LABEL,
  prePullName,
  RUNTIME_LABEL,
  RUNTIMES_NETWORK_POLICY,
  type Runtime,
  type RuntimeService,
  runtimePlacement,
} from "../../src/runtimes/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { startTestPlugin, type TestPlugin } from "../support/runtime-plugin.js";
import {
  RUNTIMES_API as API,
  adminCall as call,
  clusterClient,
  removeObject,
  removeStorageClass,
  staticStorageClass,
  staticVolume,
} from "../support/runtimes.js";

const NO_NODE = { nodeSelector: { "tenantry.dev/test-no-such-node": "none" } };
/** An executable plugin: node running a script, the callout name as its last argument. */
const execPlugin = (script: string, timeoutSeconds = 10) => ({
  exec: { command: [process.execPath, "-e", script], timeoutSeconds },
});
const ANSWER_INIT = `const callout = process.argv.at(-1);
if (callout === "init") { process.stdout.write(JSON.stringify({ capabilities: ["deploy-service"] })); process.exit(0); }`;

describe("runtimes controllers", () => {
  const home = clusterClient();
  const edge = clusterClient("edge-1");
  const tenant = uniqueName("rtk");
  const user = uniqueName("ann");
  const password = "runtime-secret-1";
  const names = {
    http: uniqueName("http"),
    slowPlugin: uniqueName("slowplug"),
    crashExec: uniqueName("crashexec"),
    hangExec: uniqueName("hangexec"),
    waiting: uniqueName("waiting"),
    remote: uniqueName("remote"),
  };
  const secret = uniqueName("edge-kubeconfig");
  let plugin: TestPlugin;
  let identity: BuiltinIdentity;
  let token: string;
  let storageClass: string;
  let edgeStorageClass: string;
  const services: KubernetesObject[] = [];

  const placed = (service: string, instance: string) => runtimePlacement({ tenant, user, service, instance });
  const path = (service: string, instance: string) => `/services/${user}/${service}/${instance}`;
  const readRuntime = (service: string, instance: string) =>
    home.objects.read({
      apiVersion: API,
      kind: "Runtime",
      metadata: placed(service, instance),
    }) as Promise<Runtime>;
  const runtimeObjects = async (client: ClusterClient, service: string, instance: string) => {
    const { namespace, name } = placed(service, instance);
    const found: string[] = [];
    for (const [apiVersion, kind] of [
      ["apps/v1", "Deployment"],
      ["v1", "Service"],
      ["v1", "PersistentVolumeClaim"],
      ["v1", "Secret"],
      ["v1", "ConfigMap"],
    ] as const) {
      const list = await client.objects.list(
        apiVersion,
        kind,
        namespace,
        undefined,
        undefined,
        undefined,
        undefined,
        `${RUNTIME_LABEL}=${name}`,
      );
      for (const item of list.items)
        if (!item.metadata?.deletionTimestamp) found.push(`${kind}/${item.metadata?.name}`);
    }
    return found.sort();
  };
  const phaseOf = async (service: string, instance: string, phase: string) =>
    eventually(
      async () => {
        const runtime = await readRuntime(service, instance);
        assert.equal(runtime.status?.phase, phase, JSON.stringify(runtime.status));
        return runtime;
      },
      { timeoutMs: 60_000 },
    );
  const createService = async (name: string, spec: Record<string, unknown>) => {
    const object = { apiVersion: API, kind: "RuntimeService", metadata: { name }, spec } as KubernetesObject;
    await home.objects.create(object);
    services.push(object);
    await eventually(async () => {
      const service = (await home.objects.read(object as never)) as RuntimeService;
      assert.equal(service.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
    });
  };

  before(async () => {
    plugin = await startTestPlugin();
    identity = await sharedBuiltinIdentity();
    await identity.createUser({ name: user, password, tenant, tenantAdmin: false });
    token = (await identity.login({ username: user, password })).token;
    storageClass = await staticStorageClass(home);
    edgeStorageClass = await staticStorageClass(edge);
    await home.core.createNamespacedSecret({
      namespace: "tenantry-system",
      body: {
        metadata: { name: secret },
        stringData: {
          kubeconfig: readFileSync(
            testEnvironment().clusters.find((c) => c.name === "edge-1")!.kubeconfig,
            "utf8",
          ),
        },
      },
    });
    const http = { http: { url: plugin.url, timeoutSeconds: 10 } };
    await createService(names.http, { plugin: http, defaults: { storageClassName: storageClass } });
    await createService(names.slowPlugin, { plugin: { http: { url: plugin.url, timeoutSeconds: 1 } } });
    await createService(names.crashExec, {
      plugin: execPlugin(`${ANSWER_INIT}
process.stderr.write("the plugin fell over: no template for " + callout); process.exit(3);`),
    });
    await createService(names.hangExec, {
      plugin: execPlugin(
        `${ANSWER_INIT}
setTimeout(() => {}, 60000);`,
        1,
      ),
    });
    await createService(names.waiting, {
      plugin: http,
      defaults: { storageClassName: storageClass },
      pods: NO_NODE,
      startTimeoutSeconds: 10,
    });
    await createService(names.remote, {
      plugin: http,
      defaults: { storageClassName: edgeStorageClass },
      cluster: { name: "edge-1", kubeconfigSecretRef: { name: secret } },
    });
  });

  after(async () => {
    for (const service of [...services].reverse()) {
      for (const runtime of (await home.objects.list(API, "Runtime")).items as Runtime[]) {
        if (runtime.spec.service === service.metadata?.name) await removeObject(home, runtime);
      }
      await removeObject(home, service);
    }
    const namespace = placed("x", "x").namespace;
    await removeObject(edge, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    await removeObject(edge, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await removeObject(home, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    await removeObject(home, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await removeObject(home, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: secret, namespace: "tenantry-system" },
    });
    await removeStorageClass(home, storageClass);
    await removeStorageClass(edge, edgeStorageClass);
    await identity?.deleteUser(user).catch(() => {});
    await stopSharedBuiltinIdentity();
    await plugin?.close();
  });

  test("a start runs: endpoint, route token, agent, placement and isolation; GET answers 200", async () => {
    const { namespace, name } = placed(names.http, "one");
    await staticVolume(home, storageClass, namespace, `${name}-data`);
    assert.equal((await call("POST", path(names.http, "one"), token, {})).status, 202);
    const answered = await eventually(
      async () => {
        const r = await call("GET", path(names.http, "one"), token);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        return r;
      },
      { timeoutMs: 60_000 },
    );
    const runtime = await readRuntime(names.http, "one");
    const status = runtime.status!;
    assert.equal(status.phase, "Running");
    assert.equal(status.cluster, "home");
    assert.match(status.route!.token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(
      answered.body.url,
      `${testEnvironment().tenantry.runtimesProxyUrl}/r/${status.route!.token}/`,
    );
    const pod = await home.core.readNamespacedPod({ name: status.endpoint!.pod!, namespace });
    assert.equal(status.endpoint!.url, `http://${pod.status!.podIP}:8080`);
    assert.deepEqual(
      status.steps!.map((s) => `${s.name}=${s.state}`),
      ["Namespace=Done", "Volumes=Done", "Scheduled=Done", "Pulling=Done", "Ready=Done"],
    );
    for (const type of ["Ready", "Deployed"]) {
      const condition = status.conditions!.find((c) => c.type === type)!;
      assert.equal(condition.status, "True");
      assert.equal(condition.observedGeneration, runtime.metadata!.generation);
    }
    assert.equal(status.observedGeneration, runtime.metadata!.generation);
    assert.deepEqual(await runtimeObjects(home, names.http, "one"), [
      `Deployment/${name}`,
      `PersistentVolumeClaim/${name}-data`,
      `Secret/${name}-secret`,
      `Service/${name}`,
    ]);
    // The plugin was told the route's base path: the token was set before deploy-service.
    const deploy = plugin.calls.find(
      (c) => c.callout === "deploy-service" && (c.body.registration as { name: string }).name === name,
    )!;
    assert.equal((deploy.body.registration as { basePath: string }).basePath, `/r/${status.route!.token}/`);
    // Objects in the Runtime's cluster are owned by it; its pod carries the agent.
    const deployment = (await home.apps.readNamespacedDeployment({ name, namespace })) as V1Deployment;
    assert.equal(deployment.metadata?.ownerReferences?.[0]?.uid, runtime.metadata!.uid);
    const template = deployment.spec!.template;
    assert.equal(template.metadata?.labels?.[RUNTIME_LABEL], name);
    assert.equal(template.spec?.serviceAccountName, AGENT_SERVICE_ACCOUNT);
    const projected = template.spec?.volumes?.find((v) => v.projected)?.projected?.sources?.[0];
    assert.equal(projected?.serviceAccountToken?.audience, "tenantry-runtimes");
    assert.equal(
      template.spec?.containers[0]?.env?.find((e) => e.name === AGENT_ENV.stopUrl)?.value,
      `${testEnvironment().tenantry.runtimesAdminUrl}${path(names.http, "one")}/stop`,
    );
    // The user's runtimes namespace: in the tenant, reached only from itself and tenantry's namespace.
    const ns = (await home.core.readNamespace({ name: namespace })) as V1Namespace;
    assert.equal(ns.metadata?.labels?.["tenantry.dev/tenant"], tenant);
    const peers = async (policy: string) => {
      // client-node's model names the field `_from`.
      const read = (await home.objects.read({
        apiVersion: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: { name: policy, namespace },
      })) as unknown as { spec: { ingress: { _from?: unknown[]; from?: unknown[] }[] } };
      const rule = read.spec.ingress[0]!;
      return rule._from ?? rule.from;
    };
    assert.deepEqual(JSON.parse(JSON.stringify(await peers(RUNTIMES_NETWORK_POLICY))), [
      { podSelector: {} },
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "tenantry-system" } } },
    ]);
    await eventually(async () => {
      const from = JSON.parse(JSON.stringify(await peers("tenantry-isolation")));
      assert.deepEqual(from[0], { podSelector: {} });
    });
  });

  test("stop keeps the claim and the Secret; resume gets a new token and the same claim", async () => {
    const { namespace, name } = placed(names.http, "one");
    const before = await readRuntime(names.http, "one");
    const claim = await home.core.readNamespacedPersistentVolumeClaim({ name: `${name}-data`, namespace });
    const oldToken = before.status!.route!.token;
    assert.equal((await call("DELETE", `${path(names.http, "one")}/stop`, token)).status, 202);
    const stopped = await phaseOf(names.http, "one", "Stopped");
    assert.equal(stopped.status?.route, undefined, "the session's route is gone");
    assert.equal(stopped.status?.endpoint, undefined);
    assert.deepEqual(await runtimeObjects(home, names.http, "one"), [
      `PersistentVolumeClaim/${name}-data`,
      `Secret/${name}-secret`,
    ]);
    assert.ok(
      plugin.deregistered(name).some((r) => r.basePath === `/r/${oldToken}/`),
      "deregister-service was told the stopped session",
    );
    assert.equal((await call("GET", path(names.http, "one"), token)).status, 503);

    assert.equal((await call("POST", path(names.http, "one"), token, {})).status, 202);
    await eventually(
      async () => assert.equal((await call("GET", path(names.http, "one"), token)).status, 200),
      {
        timeoutMs: 60_000,
      },
    );
    const resumed = await readRuntime(names.http, "one");
    assert.notEqual(resumed.status!.route!.token, oldToken);
    const same = await home.core.readNamespacedPersistentVolumeClaim({ name: `${name}-data`, namespace });
    assert.equal(same.metadata?.uid, claim.metadata?.uid, "the data is kept");
  });

  test("delete removes everything the runtime made and calls deregister-service", async () => {
    const { name } = placed(names.http, "one");
    const calls = plugin.deregistered(name).length;
    assert.equal((await call("DELETE", path(names.http, "one"), token)).status, 202);
    await eventually(async () =>
      assert.equal((await call("GET", path(names.http, "one"), token)).status, 404),
    );
    assert.deepEqual(await runtimeObjects(home, names.http, "one"), []);
    assert.equal(plugin.deregistered(name).length, calls + 1);
  });

  test("YAML with a forbidden kind or another namespace is refused, named, and nothing is applied", async () => {
    for (const [instance, field, what] of [
      ["kind", "objects[4].kind", /RoleBinding is not allowed/],
      ["elsewhere", "objects[4].metadata.namespace", /names namespace kube-system/],
    ] as const) {
      assert.equal(
        (
          await call("POST", path(names.http, instance), token, {
            mode: instance === "kind" ? "forbidden-kind" : "other-namespace",
          })
        ).status,
        202,
      );
      const failed = await phaseOf(names.http, instance, "Failed");
      assert.equal(failed.status?.reason, "InvalidManifest");
      assert.ok(failed.status?.message?.includes(field), failed.status?.message);
      assert.match(failed.status!.message!, what);
      assert.deepEqual(await runtimeObjects(home, names.http, instance), []);
      const answer = await call("GET", path(names.http, instance), token);
      assert.equal(answer.status, 503);
      assert.equal(answer.body.reason, "InvalidManifest");
    }
  });

  test("a plugin that fails, crashes or does not answer fails the start with its message; nothing is left", async () => {
    const cases = [
      [names.http, "refuses", { mode: "fail" }, /no capacity left/],
      [names.http, "drops", { mode: "crash" }, /socket hang up|ECONNRESET/],
      [names.slowPlugin, "slow", { mode: "slow" }, /did not answer within 1 s/],
      [names.crashExec, "crash", {}, /exited with 3: the plugin fell over: no template for deploy-service/],
      [names.hangExec, "hang", {}, /did not answer within 1 s \(timeoutSeconds\) and was killed/],
    ] as const;
    for (const [service, instance, body] of cases) {
      assert.equal((await call("POST", path(service, instance), token, body)).status, 202);
    }
    for (const [service, instance, , message] of cases) {
      const failed = await phaseOf(service, instance, "Failed");
      assert.equal(failed.status?.reason, "PluginFailed");
      assert.match(failed.status!.message!, message);
      assert.equal(failed.status?.route, undefined);
      assert.deepEqual(await runtimeObjects(home, service, instance), []);
    }
  });

  test("a start not running by startTimeoutSeconds fails, its workload removed; a new start tries again", async () => {
    const { name } = placed(names.waiting, "late");
    assert.equal((await call("POST", path(names.waiting, "late"), token, {})).status, 202);
    const failed = await phaseOf(names.waiting, "late", "Failed");
    assert.equal(failed.status?.reason, "StartTimeout");
    assert.match(failed.status!.message!, /not running after 10 s/);
    assert.match(failed.status!.message!, /Scheduled|Volumes/);
    assert.ok(failed.status?.steps?.some((s) => s.state === "Failed"));
    const left = await runtimeObjects(home, names.waiting, "late");
    assert.ok(!left.includes(`Deployment/${name}`) && !left.includes(`Service/${name}`), left.join());
    // Asking again starts again.
    assert.equal((await call("POST", path(names.waiting, "late"), token, {})).status, 202);
    const again = await phaseOf(names.waiting, "late", "Starting");
    assert.ok(again.status?.route?.token);
  });

  test("DELETE during a start removes everything", async () => {
    const { namespace, name } = placed(names.waiting, "brief");
    assert.equal((await call("POST", path(names.waiting, "brief"), token, {})).status, 202);
    await eventually(async () => await home.apps.readNamespacedDeployment({ name, namespace }));
    assert.equal((await call("DELETE", path(names.waiting, "brief"), token)).status, 202);
    await eventually(async () =>
      assert.equal((await call("GET", path(names.waiting, "brief"), token)).status, 404),
    );
    assert.deepEqual(await runtimeObjects(home, names.waiting, "brief"), []);
  });

  test("concurrent starts of one instance make one runtime and one deployment", async () => {
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => call("POST", path(names.waiting, "once"), token, {})),
    );
    assert.deepEqual(new Set(replies.map((r) => r.status)), new Set([202]));
    const { namespace, name } = placed(names.waiting, "once");
    await eventually(async () => await home.apps.readNamespacedDeployment({ name, namespace }));
    const deployments = await home.apps.listNamespacedDeployment({
      namespace,
      labelSelector: `${RUNTIME_LABEL}=${name}`,
    });
    assert.equal(deployments.items.length, 1);
    assert.equal(
      plugin.calls.filter(
        (c) => c.callout === "deploy-service" && (c.body.registration as { name: string }).name === name,
      ).length,
      1,
    );
  });

  test("a service in another runtimes cluster: the Runtime stays in home, its objects live in edge-1", async () => {
    const { namespace, name } = placed(names.remote, "far");
    await staticVolume(edge, edgeStorageClass, namespace, `${name}-data`);
    assert.equal((await call("POST", path(names.remote, "far"), token, {})).status, 202);
    await eventually(
      async () => assert.equal((await call("GET", path(names.remote, "far"), token)).status, 200),
      {
        timeoutMs: 60_000,
      },
    );
    const runtime = await readRuntime(names.remote, "far");
    assert.equal(runtime.status?.cluster, "edge-1");
    const pod = await edge.core.readNamespacedPod({ name: runtime.status!.endpoint!.pod!, namespace });
    assert.equal(runtime.status!.endpoint!.url, `http://${pod.status!.podIP}:8080`);
    assert.deepEqual(await runtimeObjects(home, names.remote, "far"), []);
    assert.deepEqual(await runtimeObjects(edge, names.remote, "far"), [
      `Deployment/${name}`,
      `PersistentVolumeClaim/${name}-data`,
      `Secret/${name}-secret`,
      `Service/${name}`,
    ]);
    const deployment = await edge.apps.readNamespacedDeployment({ name, namespace });
    assert.equal(deployment.metadata?.ownerReferences, undefined, "no owner across clusters");
    // The namespace there is the tenant's, under a mirror of the tenant kept by tenantry.
    const ns = await edge.core.readNamespace({ name: namespace });
    assert.equal(ns.metadata?.labels?.["tenantry.dev/tenant"], tenant);
    const mirror = (await edge.objects.read({
      apiVersion: API,
      kind: "Tenant",
      metadata: { name: tenant },
    })) as KubernetesObject;
    assert.equal(mirror.metadata?.labels?.[MIRROR_LABEL], "home");
    await edge.objects.read({
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: { name: RUNTIMES_NETWORK_POLICY, namespace },
    });
    // Its runtimes live there: the service cannot be moved to another cluster.
    await assert.rejects(
      home.objects.patchRaw(
        {
          apiVersion: API,
          kind: "RuntimeService",
          metadata: { name: names.remote },
          spec: { cluster: { name: "edge-2", kubeconfigSecretRef: { name: secret } } },
        } as KubernetesObject,
        PatchStrategy.MergePatch,
      ),
      /cluster cannot change/,
    );

    assert.equal((await call("DELETE", path(names.remote, "far"), token)).status, 202);
    await eventually(async () =>
      assert.equal((await call("GET", path(names.remote, "far"), token)).status, 404),
    );
    assert.deepEqual(await runtimeObjects(edge, names.remote, "far"), []);
    assert.ok(plugin.deregistered(name).some((r) => r.cluster === "edge-1"));
  });

  test("a service's plugin: init's capabilities and Ready, a failing init named; the pre-pull DaemonSet", async () => {
    const service = (await home.objects.read({
      apiVersion: API,
      kind: "RuntimeService",
      metadata: { name: names.http },
    })) as RuntimeService;
    assert.deepEqual(service.status?.capabilities, [
      "check-service",
      "deploy-service",
      "deregister-service",
      "image-cleanup",
      "image-pull",
    ]);
    const daemonSet = async () =>
      (await home.apps.readNamespacedDaemonSet({
        name: prePullName(names.waiting),
        namespace: "tenantry-system",
      })) as V1DaemonSet;
    const pulled = await eventually(async () => {
      const ds = await daemonSet();
      assert.deepEqual(
        ds.spec?.template.spec?.initContainers?.map((c) => [c.image, c.command]),
        [["example/app:1", ["true"]]],
      );
      return ds;
    });
    assert.deepEqual(pulled.spec?.template.spec?.nodeSelector, NO_NODE.nodeSelector);
    assert.equal(pulled.spec?.template.spec?.containers.length, 1);

    // A new image is wanted; image-cleanup keeps the old one for now, then lets it go.
    plugin.images = ["example/app:2"];
    plugin.cleanup = () => [];
    const touch = (value: string) =>
      home.objects.patchRaw(
        {
          apiVersion: API,
          kind: "RuntimeService",
          metadata: { name: names.waiting, annotations: { "test.tenantry.dev/touch": value } },
        } as KubernetesObject,
        PatchStrategy.MergePatch,
      );
    await touch("1");
    await eventually(async () => {
      const images = (await daemonSet()).spec?.template.spec?.initContainers?.map((c) => c.image);
      assert.deepEqual(images, ["example/app:2", "example/app:1"]);
    });
    plugin.cleanup = (images) => images;
    await touch("2");
    await eventually(async () => {
      const images = (await daemonSet()).spec?.template.spec?.initContainers?.map((c) => c.image);
      assert.deepEqual(images, ["example/app:2"]);
      const status = (
        (await home.objects.read({
          apiVersion: API,
          kind: "RuntimeService",
          metadata: { name: names.waiting },
        })) as RuntimeService
      ).status;
      assert.deepEqual(status?.prePull?.images, ["example/app:2"]);
    });

    // A plugin whose init fails: the service is not Ready, with the plugin's message.
    const broken = await startTestPlugin();
    broken.initFailure = "the license server does not answer";
    const name = uniqueName("broken");
    const object = {
      apiVersion: API,
      kind: "RuntimeService",
      metadata: { name },
      spec: { plugin: { http: { url: broken.url } } },
    } as KubernetesObject;
    try {
      await home.objects.create(object);
      await eventually(async () => {
        const ready = ((await home.objects.read(object as never)) as RuntimeService).status?.conditions?.find(
          (c) => c.type === "Ready",
        );
        assert.equal(ready?.status, "False");
        assert.equal(ready?.reason, "InitFailed");
        assert.match(ready?.message ?? "", /the license server does not answer/);
      });
      // A start of it is refused, saying why.
      const refused = await eventually(async () => {
        const r = await call("POST", path(name, "x"), token, {});
        assert.equal(r.status, 503);
        return r;
      });
      assert.equal(refused.body.field, "service");
      assert.match(String(refused.body.detail), /the license server does not answer/);
      broken.initFailure = undefined;
      await eventually(
        async () => {
          const ready = (
            (await home.objects.read(object as never)) as RuntimeService
          ).status?.conditions?.find((c) => c.type === "Ready");
          assert.equal(ready?.status, "True");
        },
        { timeoutMs: 60_000 },
      );
    } finally {
      await removeObject(home, object);
      await broken.close();
    }
  });
});
