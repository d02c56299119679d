/**
 * Runtimes end to end on the process node of the home cluster, whose pods run as real local
 * processes: the generic plugin's echo runtime answers on its endpoint URL, and the example
 * Jupyter plugin's runtime is a real Jupyter Server under its route's base path whose files
 * survive a stop and a resume. Started, stopped and deleted through the Admin API.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import type { BuiltinIdentity } from "../../src/identity/index.js";
import { LOCAL_IMAGES, PROCESS_NODE_NAME, PROCESS_NODE_PLACEMENT } from "../../src/localcluster/index.js";
import {
  prePullName,
  type Runtime,
  type RuntimeService,
  runtimePlacement,
} from "../../src/runtimes/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { sharedBuiltinIdentity, stopSharedBuiltinIdentity } from "../support/identity.js";
import { reachable, serverPod } from "../support/netpol.js";
import { RUNTIMES_API as API, adminCall as call, clusterClient, removeObject } from "../support/runtimes.js";

const jupyterPlugin = join(
  import.meta.dirname,
  "..",
  "..",
  "examples",
  "runtime-plugins",
  "jupyter",
  "plugin.ts",
);

describe("runtimes on the process node", () => {
  const home = clusterClient();
  const tenant = uniqueName("rtp");
  const user = uniqueName("pat");
  const password = "runtime-secret-1";
  const echo = uniqueName("echo");
  const jupyter = uniqueName("jupyter");
  let identity: BuiltinIdentity;
  let token: string;
  const services: KubernetesObject[] = [];

  const path = (service: string, instance: string) => `/services/${user}/${service}/${instance}`;
  const placed = (service: string, instance: string) => runtimePlacement({ tenant, user, service, instance });
  const readRuntime = (service: string, instance: string) =>
    home.objects.read({
      apiVersion: API,
      kind: "Runtime",
      metadata: placed(service, instance),
    }) as Promise<Runtime>;
  /** Starts (or resumes) and waits for GET 200; the runtime as it then is. */
  const start = async (service: string, instance: string, timeoutMs: number) => {
    const posted = await call("POST", path(service, instance), token, {});
    assert.ok([201, 202].includes(posted.status), JSON.stringify(posted.body));
    await eventually(
      async () => {
        const r = await call("GET", path(service, instance), token);
        assert.equal(r.status, 200, JSON.stringify(r.body));
      },
      { timeoutMs, intervalMs: 500 },
    );
    return readRuntime(service, instance);
  };
  const stop = async (service: string, instance: string) => {
    assert.equal((await call("DELETE", `${path(service, instance)}/stop`, token)).status, 202);
    await eventually(
      async () => assert.equal((await readRuntime(service, instance)).status?.phase, "Stopped"),
      {
        timeoutMs: 60_000,
      },
    );
  };

  before(async () => {
    identity = await sharedBuiltinIdentity();
    await identity.createUser({ name: user, password, tenant, tenantAdmin: false });
    token = (await identity.login({ username: user, password })).token;
    for (const [name, spec] of [
      [
        echo,
        {
          plugin: { builtin: "generic" },
          defaults: { image: LOCAL_IMAGES.echo, port: 8080, volumeSize: "64Mi" },
          pods: PROCESS_NODE_PLACEMENT,
        },
      ],
      [
        jupyter,
        {
          plugin: {
            exec: {
              command: [process.execPath, "--import", "tsx", jupyterPlugin, "--image", LOCAL_IMAGES.jupyter],
              timeoutSeconds: 60,
            },
          },
          defaults: { volumeSize: "256Mi" },
          pods: PROCESS_NODE_PLACEMENT,
          // The first Jupyter runtime of a machine installs jupyter-server: its image pull.
          startTimeoutSeconds: 600,
        },
      ],
    ] as const) {
      const object = {
        apiVersion: API,
        kind: "RuntimeService",
        metadata: { name },
        spec,
      } as KubernetesObject;
      await home.objects.create(object);
      services.push(object);
      await eventually(async () => {
        const service = (await home.objects.read(object as never)) as RuntimeService;
        assert.equal(service.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
      });
    }
  });

  after(async () => {
    for (const service of services) {
      for (const runtime of (await home.objects.list(API, "Runtime")).items as Runtime[]) {
        if (runtime.spec.service === service.metadata?.name) await removeObject(home, runtime);
      }
      await removeObject(home, service);
    }
    const namespace = placed("x", "x").namespace;
    await removeObject(home, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
    await removeObject(home, { apiVersion: API, kind: "Tenant", metadata: { name: tenant } });
    await identity?.deleteUser(user).catch(() => {});
    await stopSharedBuiltinIdentity();
  });

  test("the generic plugin's echo runtime answers on its endpoint; stopped it is gone, resumed it answers again", async () => {
    const running = await start(echo, "one", 120_000);
    const { endpoint } = running.status!;
    const pod = await home.core.readNamespacedPod({
      name: endpoint!.pod!,
      namespace: placed(echo, "one").namespace,
    });
    assert.equal(pod.spec?.nodeName, PROCESS_NODE_NAME);
    assert.match(endpoint!.url, /^http:\/\/10\.200\.\d+\.\d+:8080$/);
    const answer = await fetch(`${endpoint!.url}/hello?from=tenantry`);
    assert.equal(answer.status, 200);
    assert.match(await answer.text(), /GET \/hello\?from=tenantry/);
    // Its claim came from the cluster's default class and is bound.
    const claim = await home.core.readNamespacedPersistentVolumeClaim({
      name: `${placed(echo, "one").name}-data`,
      namespace: placed(echo, "one").namespace,
    });
    assert.equal(claim.status?.phase, "Bound");

    await stop(echo, "one");
    await assert.rejects(fetch(`${endpoint!.url}/hello`), "the stopped runtime's process is gone");
    const resumed = await start(echo, "one", 120_000);
    assert.notEqual(resumed.status!.route!.token, running.status!.route!.token);
    assert.equal((await fetch(`${resumed.status!.endpoint!.url}/again`)).status, 200);

    // The service's images are pulled on the process node by its pre-pull DaemonSet.
    await eventually(
      async () => {
        const ds = await home.apps.readNamespacedDaemonSet({
          name: prePullName(echo),
          namespace: "tenantry-system",
        });
        assert.deepEqual(
          ds.spec?.template.spec?.initContainers?.map((c) => c.image),
          [LOCAL_IMAGES.echo],
        );
        assert.equal(ds.status?.numberReady, 1, JSON.stringify(ds.status));
      },
      { timeoutMs: 60_000 },
    );
  });

  test("the Jupyter plugin's runtime is a real Jupyter Server under its base path; its files survive a stop", async () => {
    const { namespace, name } = placed(jupyter, "lab");
    const running = await start(jupyter, "lab", 600_000);
    const { endpoint, route } = running.status!;
    // The pod's address on the process node's pod network (no longer a loopback address).
    assert.match(endpoint!.url, new RegExp(`^http://10\\.\\d+\\.\\d+\\.\\d+:8888/r/${route!.token}$`));
    const secretToken = async () =>
      Buffer.from(
        (await home.core.readNamespacedSecret({ name: `${name}-token`, namespace })).data!.token!,
        "base64",
      ).toString();
    const auth = { Authorization: `token ${await secretToken()}` };
    assert.equal((await fetch(`${endpoint!.url}/api/contents`)).status, 403, "its token is needed");
    const put = await fetch(`${endpoint!.url}/api/contents/notes.txt`, {
      method: "PUT",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ type: "file", format: "text", content: "kept across a stop" }),
    });
    assert.equal(put.status, 201);

    await stop(jupyter, "lab");
    const resumed = await start(jupyter, "lab", 300_000);
    assert.notEqual(resumed.status!.route!.token, route!.token);
    assert.ok(resumed.status!.endpoint!.url.endsWith(`/r/${resumed.status!.route!.token}`));
    const file = await fetch(`${resumed.status!.endpoint!.url}/api/contents/notes.txt`, {
      headers: { Authorization: `token ${await secretToken()}` },
    });
    assert.equal(file.status, 200);
    assert.equal(((await file.json()) as { content: string }).content, "kept across a stop");

    assert.equal((await call("DELETE", path(jupyter, "lab"), token)).status, 202);
    await eventually(async () => assert.equal((await call("GET", path(jupyter, "lab"), token)).status, 404), {
      timeoutMs: 60_000,
    });
    // The claim goes once its pod has stopped (claims in use are protected).
    await eventually(
      () =>
        assert.rejects(home.core.readNamespacedPersistentVolumeClaim({ name: `${name}-home`, namespace })),
      { timeoutMs: 60_000 },
    );
  });

  test("a runtime is reached from the machine, where the runtimes proxy runs, and from no other namespace of its tenant or outside it", async () => {
    const running = await start(echo, "fenced", 120_000);
    const runtime = new URL(running.status!.endpoint!.url).host;
    assert.equal((await fetch(`http://${runtime}/`)).status, 200, "the machine reaches the runtime");
    // The tenant's own namespace (made at the user's first login) and a namespace of no tenant;
    // the pods are placed on the process node by the cluster admin, so their packets cross the pod network.
    const tenantNamespace = `${tenant}-default`;
    const stranger = uniqueName("rtp-stranger");
    await home.core.createNamespace({ body: { metadata: { name: stranger } } });
    try {
      const neighbour = await serverPod(
        home.core,
        tenantNamespace,
        "neighbour",
        { app: "neighbour" },
        [8080],
      );
      const member = await serverPod(home.core, tenantNamespace, "member", { app: "member" }, [8080]);
      const outsider = await serverPod(home.core, stranger, "outsider", { app: "outsider" }, [8080]);
      await eventually(
        async () => {
          const [fromMember, fromOutsider] = await Promise.all([
            reachable(member, [runtime, `${neighbour.ip}:8080`]),
            reachable(outsider, [runtime]),
          ]);
          assert.deepEqual(
            { runtime: fromMember[0], neighbour: fromMember[1], outsider: fromOutsider[0] },
            // The neighbour in the member's own namespace answers: the member's packets do flow.
            { runtime: false, neighbour: true, outsider: false },
          );
        },
        { timeoutMs: 60_000, intervalMs: 1000 },
      );
    } finally {
      await home.core.deleteNamespace({ name: stranger }).catch(() => {});
      for (const name of ["neighbour", "member"])
        await home.core.deleteNamespacedPod({ name, namespace: tenantNamespace }).catch(() => {});
    }
  });
});
