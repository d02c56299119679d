/**
 * The runtimes monitor of the tenantry running on edge-1, against real pods there: rules the API
 * server refuses, pods held pending by a node selector nothing matches (with the CLI's view of
 * them), terminating behind a finalizer (and remediated), running on KWOK's nodes. Alerts reach
 * Events, metrics, a signed webhook and the rules' status, once each, and resolve.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { KubernetesObject } from "@kubernetes/client-node";
import { isNotFound } from "../../src/kube/index.js";
import { ALERT_FIRING_REASON, ALERT_RESOLVED_REASON, REMEDIATION_REASON } from "../../src/monitor/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { tenantryCli } from "../support/kubectl.js";
import { API, monitorFixture } from "./support.js";

describe("runtimes monitor: pods", () => {
  const {
    edge,
    deliveryIds,
    labelsOf,
    selectorOf,
    namespace,
    other,
    tenant,
    hook,
    badSignatures,
    createRule,
    readRule,
    eventsOf,
    metric,
    firingGauge,
    notificationsFor,
    createPod,
    pendingPod,
  } = monitorFixture();

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
      webhook: { url: hook.url, secretRef: { namespace, name: "hook", key: "hmac-secret" } },
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
      new RegExp(`${rule}\\s+Pod long-pending > 0.05 min\\s+${tenant}\\s+None\\s+${hook.url}\\s+1`),
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
});
