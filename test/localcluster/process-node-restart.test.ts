/**
 * The process node's agent killed with SIGKILL and started again (as `tenantry dev cluster up`
 * does for a cluster whose agent alone died): pods that still exist keep their processes, those
 * deleted meanwhile lose them. On edge-2, whose process node no other test uses.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { ClusterHarness, type ClusterState, LOCAL_IMAGES, specFor } from "../../src/localcluster/index.js";
import { testEnvironment, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { containerPid, podReady, processAlive, processNodePod } from "../support/process-node.js";

const CLUSTER = "edge-2";

async function agentPid(): Promise<number> {
  const state = JSON.parse(
    await readFile(join(testEnvironment().dir, CLUSTER, "state.json"), "utf8"),
  ) as ClusterState;
  return state.processes.find((p) => p.component === "process-node")!.pid;
}

describe("the process node's agent restarted", () => {
  const namespace = uniqueName("pn-restart");
  let api: CoreV1Api;

  before(async () => {
    api = testKubeConfig(CLUSTER).makeApiClient(CoreV1Api);
    await api.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await api.deleteNamespace({ name: namespace }).catch(() => {});
  });

  test("adopts the processes of pods that still exist and kills those of pods deleted meanwhile", async () => {
    const echo = (name: string) =>
      processNodePod(name, [
        {
          name: "echo",
          image: LOCAL_IMAGES.echo,
          readinessProbe: { tcpSocket: { port: 8080 as never }, periodSeconds: 1 },
        },
      ]);
    await api.createNamespacedPod({ namespace, body: echo("keep") });
    await api.createNamespacedPod({ namespace, body: echo("drop") });
    const [keep, drop] = await Promise.all(
      ["keep", "drop"].map((name) =>
        eventually(async () => {
          const pod = await api.readNamespacedPod({ namespace, name });
          assert.ok(podReady(pod), `${name} is Ready`);
          return pod;
        }),
      ),
    );
    const keepPid = containerPid(keep!)!;
    const dropPid = containerPid(drop!)!;

    const agent = await agentPid();
    process.kill(agent, "SIGKILL");
    await eventually(() => assert.ok(!processAlive(agent), "the agent is gone"));
    // While no agent runs, one pod is removed from the API outright.
    await api.deleteNamespacedPod({ namespace, name: "drop", gracePeriodSeconds: 0 });
    assert.ok(processAlive(keepPid) && processAlive(dropPid), "pods' processes outlive the agent");

    const harness = new ClusterHarness({ dir: testEnvironment().dir, log: () => {} });
    await harness.up([specFor(CLUSTER)]);
    assert.notEqual(await agentPid(), agent, "a new agent runs");

    await eventually(() => assert.ok(!processAlive(dropPid), `orphan ${dropPid} still runs`));
    const adopted = await api.readNamespacedPod({ namespace, name: "keep" });
    assert.equal(containerPid(adopted), keepPid, "the same process, not a new one");
    assert.equal(adopted.status?.containerStatuses?.[0]?.restartCount, 0);
    assert.ok(processAlive(keepPid), "the adopted process runs");
    assert.ok(podReady(adopted), "the adopted pod is Ready");
    const response = await fetch(`http://${adopted.status?.podIP}:8080/`);
    assert.equal(response.status, 200);

    // The adopted process is still the agent's to stop.
    await api.deleteNamespacedPod({ namespace, name: "keep" });
    await eventually(() =>
      assert.rejects(
        api.readNamespacedPod({ namespace, name: "keep" }),
        (err: { code?: number }) => err.code === 404,
      ),
    );
    assert.ok(!processAlive(keepPid), "the adopted process is stopped");
  });
});
