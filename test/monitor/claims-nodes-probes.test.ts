/**
 * The runtimes monitor of the tenantry running on edge-1, against real claims, nodes and a pod
 * on the process node: a claim of a class nobody provisions, a node whose Ready condition is
 * False, and an echo pod whose real process stops answering (SIGSTOP) or is killed and restarted.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { LOCAL_IMAGES } from "../../src/localcluster/index.js";
import { ALERT_FIRING_REASON, ALERT_RESOLVED_REASON } from "../../src/monitor/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { containerPid, processAlive, processNodePod } from "../support/process-node.js";
import { monitorFixture } from "./support.js";

describe("runtimes monitor: claims, nodes, probes", () => {
  const {
    edge,
    cleanup,
    labelsOf,
    selectorOf,
    namespace,
    tenant,
    hook,
    badSignatures,
    createRule,
    readRule,
    eventsOf,
    metric,
    firingGauge,
    notificationsFor,
    firedBy,
    createPod,
  } = monitorFixture();

  test("a claim of a class nobody provisions fires long-pending", async () => {
    const rule = uniqueName("claims");
    await createRule(rule, {
      object: "PersistentVolumeClaim",
      condition: "long-pending",
      cutOffMinutes: 0.05,
      selector: selectorOf("claims"),
    });
    const storageClass = uniqueName("nobody");
    const classObject = {
      apiVersion: "storage.k8s.io/v1",
      kind: "StorageClass",
      metadata: { name: storageClass },
      provisioner: "tenantry.dev/no-provisioner",
      volumeBindingMode: "Immediate",
    };
    cleanup.push(classObject);
    await edge.objects.create(classObject);
    const claim = uniqueName("claim");
    cleanup.push({ apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: claim, namespace } });
    await edge.core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name: claim, labels: labelsOf("claims") },
        spec: {
          storageClassName: storageClass,
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: "1Gi" } },
        },
      },
    });
    await eventually(async () => {
      assert.equal((await eventsOf(namespace, claim, ALERT_FIRING_REASON)).length, 1);
      assert.equal((await readRule(rule)).status?.alerts?.[0]?.kind, "PersistentVolumeClaim");
    });
    assert.equal(await firingGauge("long-pending", tenant), 1);
  });

  test("a node whose Ready condition is False fires not-ready on the node, and resolves when it is Ready", async () => {
    const rule = uniqueName("nodes");
    await createRule(rule, {
      object: "Node",
      condition: "not-ready",
      cutOffMinutes: 0.05,
      selector: selectorOf("nodes"),
    });
    // Not annotated for KWOK, so nothing but this test writes its status.
    const node = uniqueName("mon-node");
    cleanup.push({ apiVersion: "v1", kind: "Node", metadata: { name: node } });
    await edge.core.createNode({
      body: {
        metadata: { name: node, labels: labelsOf("nodes") },
        spec: { unschedulable: true, taints: [{ key: "tenantry.dev/monitor-test", effect: "NoSchedule" }] },
      },
    });
    const setReady = (status: "True" | "False") =>
      edge.core.patchNodeStatus(
        {
          name: node,
          body: {
            status: {
              conditions: [
                {
                  type: "Ready",
                  status,
                  reason: status === "True" ? "KubeletReady" : "KubeletNotReady",
                  message: "set by the monitor test",
                  lastHeartbeatTime: new Date(),
                  lastTransitionTime: new Date(),
                },
              ],
            },
          },
        },
        setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
      );
    await setReady("False");
    await eventually(async () => {
      const [event] = await eventsOf("default", node, ALERT_FIRING_REASON);
      assert.match(event?.message ?? "", /not-ready\): not ready for .*KubeletNotReady/);
      assert.equal(event?.involvedObject.kind, "Node");
    });
    await setReady("True");
    await eventually(async () =>
      assert.equal((await eventsOf("default", node, ALERT_RESOLVED_REASON)).length, 1),
    );
  });

  test("a pod on the process node that stops answering fails its endpoint probe; restarted, it fires last-restart", async () => {
    const probeRule = uniqueName("probe");
    await createRule(probeRule, {
      object: "Pod",
      condition: "endpoint-probe",
      selector: selectorOf("probe"),
      probe: {
        endpointUrl: "http://{{status.podIP}}:{{metadata.annotations.port}}/health",
        timeoutSeconds: 1,
        retries: 1,
        statusCode: 200,
        initialDelaySeconds: 3,
        periodSeconds: 1,
      },
      webhook: { url: hook.url, secretRef: { namespace, name: "hook", key: "hmac-secret" } },
    });
    const restartRule = uniqueName("restart");
    await createRule(restartRule, {
      object: "Pod",
      condition: "last-restart",
      cutOffMinutes: 0.5,
      selector: selectorOf("probe"),
    });
    const name = uniqueName("echo");
    const pod = processNodePod(
      name,
      [{ name: "echo", image: LOCAL_IMAGES.echo, env: [{ name: "PORT", value: "8080" }] }],
      {},
      labelsOf("probe"),
    );
    pod.metadata!.annotations = { port: "8080" };
    await createPod(namespace, pod);
    const running = await eventually(
      async () => {
        const current = await edge.core.readNamespacedPod({ namespace, name });
        assert.equal(current.status?.phase, "Running");
        assert.ok(containerPid(current));
        return current;
      },
      { timeoutMs: 60_000 },
    );
    // Answering: probes pass and nothing fires.
    await eventually(async () => {
      const text = await metric("tenantry_monitor_probe_duration_seconds");
      assert.match(text, /tenantry_monitor_probe_duration_seconds_count\{result="ok"\} [1-9]/);
    });
    assert.deepEqual(await firedBy(namespace, name, probeRule), []);

    const pid = containerPid(running)!;
    // The container's process is its sandbox's first; the server is further down its process group.
    process.kill(-pid, "SIGSTOP");
    try {
      await eventually(async () => {
        const [event] = await eventsOf(namespace, name, ALERT_FIRING_REASON);
        assert.match(
          event?.message ?? "",
          /endpoint-probe\): GET http:\/\/[\d.]+:8080\/health failed: no answer within 1 s/,
        );
        assert.equal(notificationsFor(name, "firing").length, 1);
      });
      assert.equal(await firingGauge("endpoint-probe", tenant), 1);
    } finally {
      process.kill(-pid, "SIGCONT");
    }
    await eventually(async () => {
      assert.equal((await eventsOf(namespace, name, ALERT_RESOLVED_REASON)).length, 1);
      assert.equal(notificationsFor(name, "resolved").length, 1);
    });

    // Killed: the process node restarts the container, which is what last-restart reports.
    process.kill(pid, "SIGKILL");
    await eventually(() => assert.ok(!processAlive(pid)));
    await eventually(
      async () => {
        const events = await eventsOf(namespace, name, ALERT_FIRING_REASON);
        assert.ok(
          events.some((e) => e.message?.includes(`${restartRule} (last-restart): restarted`)),
          JSON.stringify(events.map((e) => e.message)),
        );
      },
      { timeoutMs: 60_000 },
    );
    // It ages out at its cut-off (30 s): resolved without anything else happening.
    await eventually(
      async () => {
        const events = await eventsOf(namespace, name, ALERT_RESOLVED_REASON);
        assert.ok(events.some((e) => e.message?.startsWith(`${restartRule} (last-restart): resolved`)));
      },
      { timeoutMs: 90_000 },
    );
    assert.deepEqual(badSignatures, []);
  });
});
