/**
 * The process node of the shared test clusters: pods on it run as local processes on their
 * loopback pod IPs, so HTTP, WebSocket, probes and volumes touch real bytes.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, type CoreV1Event, type V1Pod } from "@kubernetes/client-node";
import { Informer, loadClusterClient } from "../../src/kube/index.js";
import {
  LOCAL_IMAGES,
  LOCAL_STORAGE_CLASS,
  PROCESS_NODE_LABEL,
  PROCESS_NODE_NAME,
  PROCESS_NODE_TAINT,
} from "../../src/localcluster/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import {
  containerPid,
  podReady,
  processAlive,
  processNodePod,
  webSocketExchange,
} from "../support/process-node.js";

const core = () => testKubeConfig("home").makeApiClient(CoreV1Api);

describe("process node", () => {
  const namespace = uniqueName("procnode");
  let api: CoreV1Api;

  const create = (pod: V1Pod) => api.createNamespacedPod({ namespace, body: pod });
  const read = (name: string) => api.readNamespacedPod({ namespace, name });
  const ready = (name: string, timeoutMs = 60_000) =>
    eventually(
      async () => {
        const pod = await read(name);
        assert.ok(podReady(pod), `${name} is not Ready: ${JSON.stringify(pod.status?.containerStatuses)}`);
        return pod;
      },
      { timeoutMs },
    );
  const events = async (name: string): Promise<CoreV1Event[]> =>
    (await api.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` })).items;
  const gone = (name: string, timeoutMs = 60_000) =>
    eventually(() => assert.rejects(read(name), (err: { code?: number }) => err.code === 404), { timeoutMs });

  before(async () => {
    api = core();
    await api.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await api.deleteNamespace({ name: namespace }).catch(() => {});
  });

  test("the node is Ready, labelled, tainted for runtimes, with a pod network of its own, and not KWOK's", async () => {
    const node = await api.readNode({ name: PROCESS_NODE_NAME });
    assert.equal(node.metadata?.labels?.[PROCESS_NODE_LABEL], "true");
    assert.equal(node.metadata?.labels?.["topology.kubernetes.io/region"], "eu-west");
    assert.equal(node.metadata?.annotations?.["kwok.x-k8s.io/node"], undefined);
    assert.deepEqual(
      node.spec?.taints?.map((t) => `${t.key}=${t.value}:${t.effect}`),
      [`${PROCESS_NODE_TAINT.key}=true:NoSchedule`],
    );
    assert.match(node.spec?.podCIDR ?? "", /^10\.200\.\d+\.0\/24$/);
    assert.ok(
      node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
      "the node is Ready",
    );
    const classes = await testKubeConfig("home")
      .makeApiClient((await import("@kubernetes/client-node")).StorageV1Api)
      .readStorageClass({ name: LOCAL_STORAGE_CLASS });
    assert.equal(classes.metadata?.annotations?.["storageclass.kubernetes.io/is-default-class"], "true");
  });

  test("an echo pod runs its init containers in order and answers HTTP and WebSocket on its pod IP", async () => {
    await api.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "echo" }, data: { port: "8181" } },
    });
    await api.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "echo" }, stringData: { word: "sesame" } },
    });
    await create(
      processNodePod(
        "echo",
        [
          {
            name: "echo",
            image: LOCAL_IMAGES.echo,
            env: [
              { name: "PORT", valueFrom: { configMapKeyRef: { name: "echo", key: "port" } } },
              { name: "SEND_HEADER_X_POD", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
              { name: "SEND_HEADER_X_WORD", valueFrom: { secretKeyRef: { name: "echo", key: "word" } } },
            ],
            ports: [{ name: "http", containerPort: 8181 }],
            readinessProbe: { httpGet: { path: "/", port: "http" as never }, periodSeconds: 1 },
          },
        ],
        {
          initContainers: [
            { name: "first", image: LOCAL_IMAGES.echo, command: ["true"] },
            { name: "second", image: LOCAL_IMAGES.pause, command: ["true"] },
          ],
        },
      ),
    );
    const pod = await ready("echo");
    const ip = pod.status?.podIP ?? "";
    const node = await api.readNode({ name: PROCESS_NODE_NAME });
    const octets = (node.spec?.podCIDR ?? "").split(".").slice(0, 3).join(".");
    assert.ok(ip.startsWith(`${octets}.`), `pod IP ${ip} is in ${node.spec?.podCIDR}`);
    assert.deepEqual(
      pod.status?.podIPs?.map((p) => p.ip),
      [ip],
    );
    const internalIP = node.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
    assert.equal(pod.status?.hostIP, internalIP, "the node's address, where its pods reach it");
    assert.deepEqual(
      pod.status?.initContainerStatuses?.map((s) => [
        s.name,
        s.state?.terminated?.reason,
        s.state?.terminated?.exitCode,
      ]),
      [
        ["first", "Completed", 0],
        ["second", "Completed", 0],
      ],
    );
    const started = (await events("echo"))
      .filter((e) => e.reason === "Started")
      .map((e) => e.involvedObject.fieldPath);
    assert.deepEqual(started, [
      "spec.initContainers{first}",
      "spec.initContainers{second}",
      "spec.containers{echo}",
    ]);

    const response = await fetch(`http://${ip}:8181/hello?x=1`, { method: "POST", body: "ping" });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("x-pod"), "echo");
    assert.equal(response.headers.get("x-word"), "sesame");
    const text = await response.text();
    assert.match(text, /^Request served by echo\n\nPOST \/hello\?x=1 HTTP\/1\.1\n\nHost: /);
    assert.match(text, /\n\nping$/);

    const messages = await webSocketExchange(`ws://${ip}:8181/`, ["one", "two"], {
      done: (got) => got.length === 3,
    });
    assert.deepEqual(messages, ["Request served by echo", "one", "two"]);

    const logs = await api.readNamespacedPodLog({ namespace, name: "echo", container: "echo" });
    assert.match(logs, /Echo server listening on port 8181\./);
    assert.match(logs, /upgraded to websocket/);
    const tail = await api.readNamespacedPodLog({ namespace, name: "echo", container: "echo", tailLines: 1 });
    assert.equal(tail.trim().split("\n").length, 1);
  });

  test("readiness follows the probe: a killed process is restarted, Ready goes False and back", async () => {
    await create(
      processNodePod("flip", [
        {
          name: "echo",
          image: LOCAL_IMAGES.echo,
          readinessProbe: { tcpSocket: { port: 8080 as never }, periodSeconds: 1, failureThreshold: 1 },
        },
      ]),
    );
    const before = await ready("flip");
    const pid = containerPid(before)!;
    assert.ok(processAlive(pid), `process ${pid} runs`);
    const client = loadClusterClient(
      "home",
      testEnvironment().clusters.find((c) => c.name === "home")!.kubeconfig,
    );
    const informer = Informer.forResource<V1Pod>(client, {
      apiVersion: "v1",
      kind: "Pod",
      namespace,
      fieldSelector: "metadata.name=flip",
    });
    const readiness: boolean[] = [];
    informer.addHandler({ onUpdate: (_old, pod) => readiness.push(podReady(pod)) });
    informer.start();
    await informer.waitForSync();
    try {
      process.kill(pid, "SIGKILL");
      const after = await eventually(async () => {
        const pod = await read("flip");
        const restarts = pod.status?.containerStatuses?.[0]?.restartCount ?? 0;
        assert.ok(restarts >= 1, `restarted ${restarts} times`);
        assert.ok(podReady(pod), "Ready again");
        return pod;
      });
      assert.ok(readiness.includes(false), `Ready went False after the kill (seen: ${readiness.join(",")})`);
      const status = after.status!.containerStatuses![0]!;
      assert.equal(status.lastState?.terminated?.exitCode, 137);
      assert.equal(status.lastState?.terminated?.signal, 9);
      assert.notEqual(containerPid(after), pid);
      assert.ok(!processAlive(pid), `the killed process ${pid} is gone`);
    } finally {
      await informer.stop();
    }
  });

  test("a failing liveness probe restarts the container", async () => {
    await create(
      processNodePod("alive", [
        {
          name: "echo",
          image: LOCAL_IMAGES.echo,
          livenessProbe: { tcpSocket: { port: 9999 as never }, periodSeconds: 1, failureThreshold: 2 },
        },
      ]),
    );
    await eventually(async () => {
      const pod = await read("alive");
      const restarts = pod.status?.containerStatuses?.[0]?.restartCount ?? 0;
      assert.ok(restarts >= 1, `restarted ${restarts} times`);
    });
    const reasons = (await events("alive")).map((e) => `${e.reason}: ${e.message}`);
    assert.ok(
      reasons.some((r) =>
        /^Unhealthy: Liveness probe failed: dial tcp 10\.200\.\d+\.\d+:9999: connect: connection refused$/.test(
          r,
        ),
      ),
      reasons.join("\n"),
    );
    assert.ok(
      reasons.includes("Killing: Container echo failed liveness probe, will be restarted"),
      reasons.join("\n"),
    );
  });

  test("an unknown image waits in ErrImagePull naming the images the node runs", async () => {
    await create(processNodePod("unknown", [{ name: "web", image: "nginx:1.27" }]));
    const waiting = await eventually(async () => {
      const status = (await read("unknown")).status?.containerStatuses?.[0];
      assert.ok(
        ["ErrImagePull", "ImagePullBackOff"].includes(status?.state?.waiting?.reason ?? ""),
        JSON.stringify(status),
      );
      return status!.state!.waiting!;
    });
    for (const image of Object.values(LOCAL_IMAGES))
      assert.ok(waiting.message?.includes(image), waiting.message);
    const failures = (await events("unknown")).filter((e) => e.reason === "Failed").map((e) => e.message);
    assert.ok(failures.includes("Error: ErrImagePull"), failures.join("\n"));
    assert.ok(
      failures.some((m) =>
        m?.startsWith('Failed to pull image "nginx:1.27": the process node cannot run image "nginx:1.27"'),
      ),
      failures.join("\n"),
    );
    assert.equal((await read("unknown")).status?.phase, "Pending");
  });

  test("deleting a pod stops its process (SIGTERM), then the pod is removed", async () => {
    await create(processNodePod("bye", [{ name: "echo", image: LOCAL_IMAGES.echo }]));
    const pod = await ready("bye");
    const pid = containerPid(pod)!;
    const uid = pod.metadata!.uid!;
    await api.deleteNamespacedPod({ namespace, name: "bye" });
    await gone("bye");
    assert.ok(!processAlive(pid), `process ${pid} still runs`);
    assert.ok(
      !existsSync(join(testEnvironment().dir, "home", "process-node", "pods", uid)),
      "the pod's folder is removed",
    );
    const killing = (await events("bye")).find((e) => e.reason === "Killing");
    assert.equal(killing?.message, "Stopping container echo");
  });

  test("a claim of the local class is bound to a folder; a Jupyter Server writes there and the next pod reads it", async () => {
    await api.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name: "work" },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
      },
    });
    const claim = await eventually(async () => {
      const c = await api.readNamespacedPersistentVolumeClaim({ namespace, name: "work" });
      assert.equal(c.status?.phase, "Bound");
      return c;
    });
    assert.equal(claim.spec?.storageClassName, LOCAL_STORAGE_CLASS);
    const volume = await api.readPersistentVolume({ name: claim.spec!.volumeName! });
    const folder = volume.spec?.hostPath?.path ?? "";
    assert.ok(folder.startsWith(join(testEnvironment().dir, "home", "volumes")), folder);
    assert.equal(volume.spec?.persistentVolumeReclaimPolicy, "Delete");

    const token = "t0ken-for-the-test";
    const notebook = (name: string) =>
      processNodePod(
        name,
        [
          {
            name: "notebook",
            image: LOCAL_IMAGES.jupyter,
            args: ["start-notebook.py", "--ServerApp.base_url=/r/abc/", `--ServerApp.token=${token}`],
            ports: [{ name: "http", containerPort: 8888 }],
            readinessProbe: { httpGet: { path: "/r/abc/api", port: "http" as never }, periodSeconds: 1 },
            volumeMounts: [{ name: "work", mountPath: "/home/jovyan/work" }],
          },
        ],
        { volumes: [{ name: "work", persistentVolumeClaim: { claimName: "work" } }] },
      );
    // The first Jupyter pod of a machine installs jupyter-server (its image pull).
    await create(notebook("nb-1"));
    const first = await ready("nb-1", 300_000);
    const base = `http://${first.status?.podIP}:8888/r/abc`;
    const auth = { Authorization: `token ${token}` };
    assert.equal((await fetch(`${base}/api/contents`)).status, 403);
    const listing = (await (await fetch(`${base}/api/contents`, { headers: auth })).json()) as {
      type: string;
    };
    assert.equal(listing.type, "directory");
    const put = await fetch(`${base}/api/contents/notes.txt`, {
      method: "PUT",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ type: "file", format: "text", content: "kept across pods" }),
    });
    assert.equal(put.status, 201);
    const terminal = (await (
      await fetch(`${base}/api/terminals`, { method: "POST", headers: auth })
    ).json()) as {
      name: string;
    };
    // A real shell behind a real terminal: the arithmetic is done on the other side.
    const stdout = (got: string[]) =>
      got
        .map((m) => JSON.parse(m) as [string, string])
        .filter(([kind]) => kind === "stdout")
        .map(([, text]) => text)
        .join("");
    const output = await webSocketExchange(
      `ws://${first.status?.podIP}:8888/r/abc/terminals/websocket/${terminal.name}`,
      [JSON.stringify(["stdin", "echo answer-$((40+2))\r"])],
      { done: (got) => stdout(got).includes("answer-42"), greeting: false, headers: auth },
    );
    assert.match(stdout(output), /answer-42/);
    const pulled = (await events("nb-1")).filter((e) => e.reason === "Pulling" || e.reason === "Pulled");
    assert.ok(pulled.length >= 1, "the image pull is reported");

    const pid = containerPid(first)!;
    await api.deleteNamespacedPod({ namespace, name: "nb-1" });
    await gone("nb-1");
    assert.ok(!processAlive(pid), `Jupyter's process ${pid} is gone`);

    await create(notebook("nb-2"));
    const second = await ready("nb-2", 120_000);
    const file = (await (
      await fetch(`http://${second.status?.podIP}:8888/r/abc/api/contents/notes.txt`, { headers: auth })
    ).json()) as { content: string };
    assert.equal(file.content, "kept across pods");
    await api.deleteNamespacedPod({ namespace, name: "nb-2" });
    await gone("nb-2");

    await api.deleteNamespacedPersistentVolumeClaim({ namespace, name: "work" });
    await eventually(() =>
      assert.rejects(
        api.readPersistentVolume({ name: volume.metadata!.name! }),
        (err: { code?: number }) => err.code === 404,
      ),
    );
    assert.ok(!existsSync(folder), "reclaim policy Delete removes the folder");
  });
});
