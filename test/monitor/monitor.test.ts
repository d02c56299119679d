/**
 * The runtimes monitor of the tenantry running on the edge-1 cluster, against real objects there: pods held pending by a node selector nothing matches,
 * running on KWOK's nodes, terminating behind a finalizer; a claim of a class nobody provisions;
 * a node whose Ready condition is False; and a pod on the process node whose real process stops
 * answering (SIGSTOP) or is killed and restarted. Alerts reach Events, metrics, a signed webhook
 * and the rules' status, once each, and resolve.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { CoreV1Event, KubernetesObject, V1Pod } from "@kubernetes/client-node";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { isNotFound } from "../../src/kube/index.js";
import { LOCAL_IMAGES } from "../../src/localcluster/index.js";
import {
  ALERT_FIRING_REASON,
  ALERT_RESOLVED_REASON,
  type AlertNotification,
  DELIVERY_HEADER,
  type MonitorRule,
  type MonitorRuleSpec,
  REMEDIATION_REASON,
  SIGNATURE_HEADER,
  verifySignature,
} from "../../src/monitor/index.js";
import { TENANT_LABEL } from "../../src/tenants/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { tenantryCli } from "../support/kubectl.js";
import { containerPid, processAlive, processNodePod } from "../support/process-node.js";
import { RUNTIMES_API as API, clusterClient, removeObject } from "../support/runtimes.js";

describe("runtimes monitor", () => {
  const edge = clusterClient("edge-1");
  const run = uniqueName("mon");
  /** Each case's objects carry its own labels, and its rule selects them alone. */
  const labelsOf = (which: string) => ({
    "tenantry.dev/monitor-test": run,
    "tenantry.dev/monitor-case": which,
  });
  const selectorOf = (which: string) => ({ matchLabels: labelsOf(which) });
  const namespace = uniqueName("mon");
  const other = uniqueName("mon-other");
  const tenant = uniqueName("acme");
  const metricsUrl = testEnvironment().tenantries?.find((t) => t.cluster === "edge-1")?.metricsUrl;
  let receiver: Server;
  let hookUrl: string;
  const hookSecret = "monitor-hmac-secret";
  const delivered: AlertNotification[] = [];
  const deliveryIds = new Map<string, number>();
  const badSignatures: string[] = [];
  const cleanup: KubernetesObject[] = [];

  before(async () => {
    assert.ok(metricsUrl, "the test run reports edge-1's tenantry metrics URL");
    for (const [name, labels] of [
      [namespace, { [TENANT_LABEL]: tenant }],
      [other, {}],
    ] as const) {
      await edge.core.createNamespace({ body: { metadata: { name, labels } } });
    }
    await edge.core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "hook" }, stringData: { "hmac-secret": hookSecret } },
    });
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString();
        const signature = String(req.headers[SIGNATURE_HEADER] ?? "");
        if (!verifySignature(hookSecret, body, signature)) {
          badSignatures.push(body);
          res.writeHead(401).end();
          return;
        }
        // At least once: a receiver keeps the first of each delivery id.
        const id = String(req.headers[DELIVERY_HEADER]);
        if (!deliveryIds.has(id)) delivered.push(JSON.parse(body) as AlertNotification);
        deliveryIds.set(id, (deliveryIds.get(id) ?? 0) + 1);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`;
  });

  after(async () => {
    receiver?.closeAllConnections();
    receiver?.close();
    for (const obj of cleanup.reverse()) await removeObject(edge, obj);
    for (const name of [namespace, other]) {
      await edge.core.deleteNamespace({ name }).catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    }
  });

  const createRule = async (name: string, spec: MonitorRuleSpec) => {
    const rule = { apiVersion: API, kind: "MonitorRule", metadata: { name }, spec };
    cleanup.push(rule);
    return (await edge.objects.create(rule)) as MonitorRule;
  };
  const readRule = (name: string) =>
    edge.objects.read({ apiVersion: API, kind: "MonitorRule", metadata: { name } }) as Promise<MonitorRule>;
  const eventsOf = async (ns: string, name: string, reason: string): Promise<CoreV1Event[]> =>
    (
      await edge.core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${name}` })
    ).items.filter((event) => event.reason === reason);
  const metric = async (name: string) =>
    (await (await fetch(metricsUrl!, { signal: AbortSignal.timeout(10_000) })).text())
      .split("\n")
      .filter((l) => l.startsWith(name))
      .join("\n");
  const firingGauge = async (condition: string, labelTenant = "") => {
    const text = await metric("tenantry_monitor_alerts_firing");
    const line = text
      .split("\n")
      .find((l) => l.includes(`condition="${condition}"`) && l.includes(`tenant="${labelTenant}"`));
    return line ? Number(line.split(" ").pop()) : 0;
  };
  const notificationsFor = (name: string, status: string) =>
    delivered.filter((n) => n.target.name === name && n.status === status);
  const firedBy = async (ns: string, name: string, rule: string) =>
    (await eventsOf(ns, name, ALERT_FIRING_REASON)).filter((e) => e.message?.startsWith(`${rule} (`));
  const createPod = async (ns: string, pod: V1Pod) => {
    cleanup.push({ apiVersion: "v1", kind: "Pod", metadata: { name: pod.metadata!.name!, namespace: ns } });
    return edge.core.createNamespacedPod({ namespace: ns, body: pod });
  };
  const pendingPod = (name: string, which: string, extra: Partial<V1Pod["metadata"]> = {}): V1Pod => ({
    metadata: { name, labels: labelsOf(which), ...extra },
    spec: {
      nodeSelector: { "tenantry.dev/no-such-node": "true" },
      containers: [{ name: "main", image: "registry.k8s.io/pause:3.10" }],
    },
  });

  test("the API server refuses a rule that breaks the schema, naming the field and the limit", async () => {
    const refused = async (spec: Record<string, unknown>, pattern: RegExp) => {
      await assert.rejects(
        edge.objects.create({
          apiVersion: API,
          kind: "MonitorRule",
          metadata: { name: uniqueName("bad") },
          spec,
        } as KubernetesObject),
        (err: Error) => {
          assert.match(String((err as { body?: unknown }).body ?? err.message), pattern);
          return true;
        },
      );
    };
    await refused(
      { object: "Pod", condition: "long-pending", cutOffMinutes: 0.01 },
      /spec\.cutOffMinutes.*0\.05/,
    );
    await refused(
      { object: "Node", condition: "long-pending", cutOffMinutes: 1 },
      /spec\.condition.*not one of object's conditions/,
    );
    await refused({ object: "Pod", condition: "endpoint-probe" }, /endpoint-probe needs probe/);
    await refused(
      { object: "Pod", condition: "endpoint-probe", probe: { endpointUrl: "ftp://x", retries: 11 } },
      /spec\.probe\.endpointUrl.*\^https\?:\/\/|spec\.probe\.retries/,
    );
    await refused(
      { object: "Node", condition: "not-ready", cutOffMinutes: 1, tenant: "acme" },
      /spec\.tenant.*no tenant/,
    );
    await refused(
      { object: "Pod", condition: "long-pending", cutOffMinutes: 1, remediation: { action: "DeletePod" } },
      /spec\.remediation\.action.*long-terminating only/,
    );
  });

  test("a tenant's pod pending past its cut-off fires once — Event, status, metric, signed webhook — and resolves when deleted", async () => {
    const rule = uniqueName("pending");
    await createRule(rule, {
      object: "Pod",
      condition: "long-pending",
      cutOffMinutes: 0.05,
      tenant,
      selector: selectorOf("pending"),
      webhook: { url: hookUrl, secretRef: { namespace, name: "hook", key: "hmac-secret" } },
    });
    const pod = uniqueName("stuck");
    await createPod(namespace, pendingPod(pod, "pending"));
    // Another tenant's (no tenant's) pod in the same state: not this rule's business.
    const outsider = uniqueName("outsider");
    await createPod(other, pendingPod(outsider, "pending"));

    await eventually(async () => {
      assert.equal((await eventsOf(namespace, pod, ALERT_FIRING_REASON)).length, 1);
      assert.equal(notificationsFor(pod, "firing").length, 1, JSON.stringify([...deliveryIds]));
    });
    const [firing] = notificationsFor(pod, "firing");
    assert.equal(firing!.rule, rule);
    assert.equal(firing!.condition, "long-pending");
    assert.equal(firing!.tenant, tenant);
    assert.deepEqual(firing!.target, { kind: "Pod", namespace, name: pod });
    assert.equal(firing!.cluster, "edge-1");
    await eventually(async () => {
      const status = (await readRule(rule)).status;
      assert.equal(status?.firing, 1);
      assert.equal(status?.alerts?.[0]?.name, pod);
      assert.equal(status?.alerts?.[0]?.tenant, tenant);
      assert.match(status?.alerts?.[0]?.message ?? "", /pending for/);
    });
    assert.equal(await firingGauge("long-pending", tenant), 1);

    // The same from the command line.
    const kubeconfig = testEnvironment().clusters.find((c) => c.name === "edge-1")!.kubeconfig;
    const alerts = await tenantryCli([
      "monitor",
      "alerts",
      "--kubeconfig",
      kubeconfig,
      "--rule",
      rule,
      "-o",
      "json",
    ]);
    assert.equal(alerts.code, 0, alerts.stderr);
    const listed = JSON.parse(alerts.stdout) as {
      rule: string;
      kind: string;
      name: string;
      tenant: string;
    }[];
    assert.deepEqual(
      listed.map((a) => [a.rule, a.kind, a.name, a.tenant]),
      [[rule, "Pod", pod, tenant]],
    );
    const rules = await tenantryCli(["monitor", "rules", "--kubeconfig", kubeconfig]);
    assert.match(
      rules.stdout,
      new RegExp(`${rule}\\s+Pod long-pending > 0.05 min\\s+${tenant}\\s+None\\s+${hookUrl}\\s+1`),
    );
    const unknown = await tenantryCli([
      "monitor",
      "alerts",
      "--kubeconfig",
      kubeconfig,
      "--rule",
      "no-such-rule",
    ]);
    assert.equal(unknown.code, 3, unknown.stderr);

    // Still pending a while later: the alert does not fire again.
    await new Promise((r) => setTimeout(r, 4000));
    assert.equal((await eventsOf(namespace, pod, ALERT_FIRING_REASON)).length, 1);
    assert.equal(notificationsFor(pod, "firing").length, 1);
    assert.equal(notificationsFor(outsider, "firing").length, 0);
    assert.equal((await eventsOf(other, outsider, ALERT_FIRING_REASON)).length, 0);

    await edge.core.deleteNamespacedPod({ namespace, name: pod, gracePeriodSeconds: 0 });
    await eventually(async () => {
      assert.equal((await eventsOf(namespace, pod, ALERT_RESOLVED_REASON)).length, 1);
      assert.equal(notificationsFor(pod, "resolved").length, 1);
      assert.equal((await readRule(rule)).status?.firing, 0);
    });
    assert.match(notificationsFor(pod, "resolved")[0]!.message, /long-pending\): resolved/);
    assert.equal(await firingGauge("long-pending", tenant), 0);
    assert.deepEqual(badSignatures, []);
  });

  test("a pod stuck terminating behind a finalizer is deleted by the DeletePod remediation, recorded", async () => {
    const rule = uniqueName("terminating");
    await createRule(rule, {
      object: "Pod",
      condition: "long-terminating",
      cutOffMinutes: 0.05,
      selector: selectorOf("terminating"),
      remediation: { action: "DeletePod", removeFinalizers: true },
    });
    const pod = uniqueName("held");
    await createPod(
      namespace,
      pendingPod(pod, "terminating", { finalizers: ["tenantry.dev/monitor-test-hold"] }),
    );
    await edge.core.deleteNamespacedPod({ namespace, name: pod });
    await eventually(async () => {
      assert.equal((await eventsOf(namespace, pod, ALERT_FIRING_REASON)).length, 1);
      const [remediation] = await eventsOf(namespace, pod, REMEDIATION_REASON);
      assert.match(
        remediation?.message ?? "",
        /DeletePod: deleted with no grace period and its finalizers removed/,
      );
    });
    await eventually(async () => {
      await assert.rejects(edge.core.readNamespacedPod({ namespace, name: pod }), (err) => isNotFound(err));
      assert.equal((await eventsOf(namespace, pod, ALERT_RESOLVED_REASON)).length, 1);
    });
    const remediated = await metric("tenantry_monitor_remediations_total");
    assert.match(remediated, /action="DeletePod",result="done"\} [1-9]/);
  });

  test("a pod running on a simulated node past its cut-off fires long-running", async () => {
    const rule = uniqueName("running");
    await createRule(rule, {
      object: "Pod",
      condition: "long-running",
      cutOffMinutes: 0.05,
      selector: selectorOf("running"),
    });
    const pod = uniqueName("runner");
    await createPod(namespace, {
      metadata: { name: pod, labels: labelsOf("running") },
      spec: {
        nodeSelector: { type: "kwok" },
        tolerations: [{ operator: "Exists" }],
        containers: [{ name: "main", image: "registry.k8s.io/pause:3.10" }],
      },
    });
    await eventually(async () => {
      const [event] = await eventsOf(namespace, pod, ALERT_FIRING_REASON);
      assert.match(event?.message ?? "", new RegExp(`${rule} \\(long-running\\): running for`));
    });
    assert.equal(await firingGauge("long-running", tenant), 1);
  });

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
      webhook: { url: hookUrl, secretRef: { namespace, name: "hook", key: "hmac-secret" } },
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
    process.kill(pid, "SIGSTOP");
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
      process.kill(pid, "SIGCONT");
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
