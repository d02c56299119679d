import assert from "node:assert/strict";
import { createServer } from "node:https";
import { after, before, describe, test } from "node:test";
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Node,
} from "@kubernetes/client-node";
import { createCertificateAuthority, issueCertificate } from "../../src/pki/index.js";
import { testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";

const ready = (n: V1Node) =>
  n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

describe("shared home cluster", () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  const namespace = uniqueName("harness");

  before(async () => {
    kc = testKubeConfig("home");
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    await core.deleteNamespace({ name: namespace }).catch(() => {});
  });

  test("has at least three Ready simulated nodes carrying region, zone and provider labels", async () => {
    const nodes = (await core.listNode({ labelSelector: "type=kwok" })).items;
    assert.ok(nodes.length >= 3, `expected 3 nodes, got ${nodes.length}`);
    for (const node of nodes) {
      assert.ok(ready(node), `${node.metadata?.name} is not Ready`);
      assert.equal(node.metadata?.labels?.["topology.kubernetes.io/region"], "eu-west");
      assert.equal(node.metadata?.labels?.["tenantry.dev/provider"], "onprem");
      assert.match(node.metadata?.labels?.["topology.kubernetes.io/zone"] ?? "", /^eu-west-[abc]$/);
      assert.equal(node.status?.capacity?.cpu, "32");
    }
  });

  test("reports a real Kubernetes version", async () => {
    const version = await kc.makeApiClient((await import("@kubernetes/client-node")).VersionApi).getCode();
    assert.match(version.gitVersion, /^v1\.33\.\d+$/);
  });

  test("runs a Deployment of 3 replicas to Available with Running pods, and fills ResourceQuota usage", async () => {
    await core.createNamespacedResourceQuota({
      namespace,
      body: { metadata: { name: "pods" }, spec: { hard: { pods: "10", "count/deployments.apps": "2" } } },
    });
    const apps = kc.makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: "web" },
        spec: {
          replicas: 3,
          selector: { matchLabels: { app: "web" } },
          template: {
            metadata: { labels: { app: "web" } },
            spec: { containers: [{ name: "web", image: "nginx" }] },
          },
        },
      },
    });
    await eventually(async () => {
      const d = await apps.readNamespacedDeployment({ name: "web", namespace });
      assert.equal(d.status?.availableReplicas, 3);
    });
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: "app=web" })).items;
    assert.equal(pods.length, 3);
    for (const pod of pods) {
      assert.equal(pod.status?.phase, "Running");
      assert.ok(pod.spec?.nodeName?.startsWith("home-node-"), "scheduled onto a simulated node");
      assert.ok(pod.status?.podIP, "pod has an IP");
    }
    await eventually(
      async () => {
        const quota = await core.readNamespacedResourceQuota({ name: "pods", namespace });
        assert.equal(quota.status?.used?.pods, "3");
        assert.equal(quota.status?.used?.["count/deployments.apps"], "1");
      },
      { timeoutMs: 60_000 },
    );
  });

  test("garbage-collects a ReplicaSet's pods when its Deployment is deleted", async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace,
      body: {
        metadata: { name: "gc" },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: "gc" } },
          template: {
            metadata: { labels: { app: "gc" } },
            spec: { containers: [{ name: "c", image: "busybox" }] },
          },
        },
      },
    });
    await eventually(async () => {
      assert.equal((await core.listNamespacedPod({ namespace, labelSelector: "app=gc" })).items.length, 1);
    });
    await apps.deleteNamespacedDeployment({ name: "gc", namespace, propagationPolicy: "Background" });
    await eventually(async () => {
      assert.equal((await core.listNamespacedPod({ namespace, labelSelector: "app=gc" })).items.length, 0);
    });
  });

  test("completes namespace deletion", async () => {
    const name = uniqueName("gone");
    await core.createNamespace({ body: { metadata: { name } } });
    await core.createNamespacedConfigMap({
      namespace: name,
      body: { metadata: { name: "x" }, data: { a: "b" } },
    });
    await core.deleteNamespace({ name });
    await eventually(async () => {
      await assert.rejects(core.readNamespace({ name }), (err: { code?: number }) => err.code === 404);
    });
  });

  test("calls an admission webhook served on loopback over TLS", async () => {
    const ca = await createCertificateAuthority("webhook-test-ca");
    const serving = await issueCertificate(ca, {
      commonName: "webhook",
      ipAddresses: ["127.0.0.1"],
      usage: "server",
    });
    const server = createServer({ cert: serving.certPem, key: serving.keyPem }, (req, res) => {
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", () => {
        const review = JSON.parse(body);
        const name = review.request.name as string;
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            apiVersion: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            response: {
              uid: review.request.uid,
              allowed: !name.startsWith("forbidden"),
              status: { code: 403, message: `configmap ${name} refused by the loopback webhook` },
            },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const admission = kc.makeApiClient(AdmissionregistrationV1Api);
    const webhookName = `${namespace}.test.tenantry.dev`;
    try {
      await admission.createValidatingWebhookConfiguration({
        body: {
          metadata: { name: webhookName },
          webhooks: [
            {
              name: webhookName,
              admissionReviewVersions: ["v1"],
              sideEffects: "None",
              failurePolicy: "Fail",
              timeoutSeconds: 5,
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
              clientConfig: {
                url: `https://127.0.0.1:${port}/validate`,
                caBundle: Buffer.from(ca.certPem).toString("base64"),
              },
              rules: [
                { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"] },
              ],
            },
          ],
        },
      });
      // The API server picks new webhook configurations up asynchronously.
      await eventually(async () => {
        await assert.rejects(
          core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "forbidden-1" } } }),
          (err: { body?: string }) => /forbidden-1 refused by the loopback webhook/.test(String(err.body)),
        );
      });
      const allowed = await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: "allowed-1" } },
      });
      assert.equal(allowed.metadata?.name, "allowed-1");
    } finally {
      await admission.deleteValidatingWebhookConfiguration({ name: webhookName }).catch(() => {});
      server.close();
    }
  });
});

describe("remote clusters", () => {
  test("edge-1 and edge-2 run at the same time as home, each with its own labels", async () => {
    for (const [cluster, region, provider] of [
      ["edge-1", "eu-south", "aws"],
      ["edge-2", "us-east", "gcp"],
    ] as const) {
      const core = testKubeConfig(cluster).makeApiClient(CoreV1Api);
      const nodes = (await core.listNode({})).items;
      assert.ok(nodes.length >= 3);
      assert.ok(nodes.every(ready));
      assert.ok(nodes.every((n) => n.metadata?.labels?.["topology.kubernetes.io/region"] === region));
      assert.ok(nodes.every((n) => n.metadata?.labels?.["tenantry.dev/provider"] === provider));
    }
  });
});
