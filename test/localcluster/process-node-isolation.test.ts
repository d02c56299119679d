/**
 * The process node as a real kubelet's node, seen from a pod that wants more: every container
 * runs as its user in namespaces of its own (mount, PID, network), sees only its volumes, and
 * leaves nothing behind — even when many pods start and are deleted at once.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, type V1PodSpec } from "@kubernetes/client-node";
import { LOCAL_IMAGES } from "../../src/localcluster/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { processNodePod } from "../support/process-node.js";

/** Host processes whose environment names one of `hostnames` or whose command line one of `uids`. */
function processesOf(hostnames: Set<string>, uids: string[]): string[] {
  const found: string[] = [];
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      const hostname = environ.find((e) => e.startsWith("HOSTNAME="))?.slice("HOSTNAME=".length);
      if ((hostname && hostnames.has(hostname)) || uids.some((uid) => cmdline.includes(uid)))
        found.push(`${pid}: ${cmdline.slice(0, 120)}`);
    } catch {
      // Gone meanwhile, or a kernel thread.
    }
  }
  return found;
}

describe("process node isolation", () => {
  const namespace = uniqueName("pn-isolation");
  const dir = () => testEnvironment().dir;
  let api: CoreV1Api;

  const logsOf = (name: string) =>
    eventually(
      async () => {
        const pod = await api.readNamespacedPod({ namespace, name });
        assert.ok(["Succeeded", "Failed"].includes(pod.status?.phase ?? ""), `${name}: ${pod.status?.phase}`);
        return api.readNamespacedPodLog({ namespace, name });
      },
      { timeoutMs: 90_000 },
    );

  before(async () => {
    api = testKubeConfig("home").makeApiClient(CoreV1Api);
    await api.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await api.deleteNamespace({ name: namespace }).catch(() => {});
  });

  test("id -u in a pod is its runAsUser; without one it is not root", async () => {
    const shell = (name: string, spec: Partial<V1PodSpec> = {}) =>
      processNodePod(
        name,
        [{ name: "sh", image: LOCAL_IMAGES.busybox, command: ["sh", "-c", "id -u; id -g"] }],
        { restartPolicy: "Never", ...spec },
      );
    await api.createNamespacedPod({
      namespace,
      body: shell("as-4321", { securityContext: { runAsUser: 4321, runAsGroup: 4322 } }),
    });
    await api.createNamespacedPod({ namespace, body: shell("as-default") });
    assert.deepEqual((await logsOf("as-4321")).trim().split("\n"), ["4321", "4322"]);
    const [uid] = (await logsOf("as-default")).trim().split("\n");
    assert.notEqual(uid, "0", "a pod that names no user does not run as root");
    assert.ok(Number(uid) >= 2_000_000, `the pod's own user: ${uid}`);
  });

  test("a pod cannot read the admin kubeconfig, the cache, another pod's volume or processes", async () => {
    await api.createNamespacedPod({
      namespace,
      body: processNodePod(
        "victim",
        [
          {
            name: "sh",
            image: LOCAL_IMAGES.busybox,
            command: ["sh", "-c", "echo victim-secret > /data/secret; sleep 3600"],
            volumeMounts: [{ name: "data", mountPath: "/data" }],
          },
        ],
        { volumes: [{ name: "data", emptyDir: {} }] },
      ),
    });
    const victim = await eventually(async () => {
      const pod = await api.readNamespacedPod({ namespace, name: "victim" });
      assert.ok(pod.status?.containerStatuses?.[0]?.state?.running, "victim runs");
      return pod;
    });
    const victimVolume = join(
      dir(),
      "home",
      "process-node",
      "pods",
      victim.metadata!.uid!,
      "volumes",
      "data",
    );
    await eventually(() =>
      assert.ok(existsSync(join(victimVolume, "secret")), "the victim wrote its secret"),
    );
    const kubeconfig = join(dir(), "home", "kubeconfig");
    const attempts = [
      `cat ${kubeconfig}`,
      `cat ${join(dir(), "home", "pki", "ca.key")}`,
      `cat ${join(victimVolume, "secret")}`,
      "ls /root/.cache",
      `ls ${dir()}`,
      "ps -e -o comm= | grep -v -e '^ps$' -e '^sh$' -e '^grep$' -e '^bash$'",
    ];
    const script = attempts.map((a) => `if ${a} >/dev/null 2>&1; then echo "GOT: ${a}"; fi`).join("\n");
    await api.createNamespacedPod({
      namespace,
      body: processNodePod(
        "attacker",
        [{ name: "sh", image: LOCAL_IMAGES.busybox, command: ["sh", "-c", `${script}\necho done`] }],
        { restartPolicy: "Never", securityContext: { runAsUser: 0 } },
      ),
    });
    const logs = await logsOf("attacker");
    assert.match(logs, /done/);
    assert.deepEqual(
      logs.split("\n").filter((l) => l.startsWith("GOT:")),
      [],
      "nothing of the machine's or another pod's is within reach",
    );
  });

  test("50 pods started and deleted at once leave no process, namespace, address or folder", async () => {
    const names = Array.from({ length: 50 }, (_, i) => `churn-${i}`);
    const created = await Promise.all(
      names.map((name, i) =>
        api.createNamespacedPod({
          namespace,
          body: processNodePod(
            name,
            [
              i % 2
                ? { name: "echo", image: LOCAL_IMAGES.echo }
                : { name: "sh", image: LOCAL_IMAGES.busybox, command: ["sh", "-c", "sleep 3600"] },
            ],
            { terminationGracePeriodSeconds: 2 },
          ),
        }),
      ),
    );
    const uids = created.map((pod) => pod.metadata!.uid!);
    // Deletes land while the pods are starting: some before their processes run, some after.
    await Promise.all(
      names.map(async (name, i) => {
        await sleep((i % 10) * 300);
        await api.deleteNamespacedPod({ namespace, name });
      }),
    );
    await eventually(
      async () => {
        const left = (await api.listNamespacedPod({ namespace, labelSelector: "" })).items.filter((p) =>
          names.includes(p.metadata!.name!),
        );
        assert.equal(left.length, 0, `${left.length} pods are still there`);
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    await eventually(
      () => {
        assert.deepEqual(processesOf(new Set(names), uids), [], "no process of those pods is left");
        const namespaces = readdirSync("/run/netns");
        const ids = uids.map((uid) => uid.replace(/-/g, "").slice(0, 8));
        assert.deepEqual(
          namespaces.filter((n) => ids.some((id) => n.endsWith(`-${id}`))),
          [],
          "no network namespace (and so no address) of those pods is left",
        );
        const pods = join(dir(), "home", "process-node", "pods");
        assert.deepEqual(
          uids.filter((uid) => existsSync(join(pods, uid))),
          [],
          "no pod folder is left",
        );
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
  });
});
