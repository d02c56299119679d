/**
 * What the monitor's integration tests share: the monitor of the tenantry running on edge-1 (the
 * test run starts one on every cluster), a tenant's namespace and another namespace, a webhook
 * receiver that checks each body's HMAC, and ways to read Events, rules and metrics.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before } from "node:test";
import type { CoreV1Event, KubernetesObject, V1Pod } from "@kubernetes/client-node";
import { isNotFound } from "../../src/kube/index.js";
import {
  ALERT_FIRING_REASON,
  type AlertNotification,
  DELIVERY_HEADER,
  type MonitorRule,
  type MonitorRuleSpec,
  SIGNATURE_HEADER,
  verifySignature,
} from "../../src/monitor/index.js";
import { TENANT_LABEL } from "../../src/tenants/index.js";
import { testEnvironment, uniqueName } from "../support/clusters.js";
import { RUNTIMES_API as API, clusterClient, removeObject } from "../support/runtimes.js";

export { API };

/** Registers the fixture's before/after hooks in the calling suite and returns its helpers. */
export function monitorFixture() {
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
  const hook = { url: "" };
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
    hook.url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`;
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

  return {
    edge,
    cleanup,
    deliveryIds,
    labelsOf,
    selectorOf,
    namespace,
    other,
    tenant,
    hook,
    delivered,
    badSignatures,
    createRule,
    readRule,
    eventsOf,
    metric,
    firingGauge,
    notificationsFor,
    firedBy,
    createPod,
    pendingPod,
  };
}
