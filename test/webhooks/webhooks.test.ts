import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { certificateNames } from "../../src/pki/index.js";
import {
  type AdmissionWebhook,
  allow,
  applyWebhookConfigurations,
  deleteWebhookConfigurations,
  deny,
  ensureWebhookTls,
  setLabelsPatch,
  WebhookServer,
  webhookConfigurations,
} from "../../src/webhooks/index.js";
import { apiServerCallers, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { testUser } from "../support/users.js";

describe("admission webhooks served by tenantry over TLS", () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  let server: WebhookServer;
  const ownNamespace = uniqueName("tenantry-sys");
  const namespace = uniqueName("wh");
  const configurationName = `${namespace}.tenantry.dev`;
  let configurations: ReturnType<typeof webhookConfigurations>;
  const tlsOptions = {
    namespace: ownNamespace,
    secretName: "webhook-tls",
    ipAddresses: ["127.0.0.1"],
    dnsNames: ["localhost"],
  };

  const scoped = { matchLabels: { "tenantry.dev/webhook-test": namespace } };
  const webhooks: AdmissionWebhook[] = [
    {
      name: `label.${configurationName}`,
      kind: "mutating",
      path: "/mutate/label",
      failurePolicy: "Ignore",
      namespaceSelector: scoped,
      rules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"] }],
      handle: (request) =>
        allow(
          setLabelsPatch(request.object as { metadata?: { labels?: Record<string, string> } }, {
            "tenantry.dev/user": request.userInfo.username?.replace(/[^\w.-]/g, "_") ?? "",
          }),
        ),
    },
    {
      name: `deny.${configurationName}`,
      kind: "validating",
      path: "/validate/deny",
      failurePolicy: "Fail",
      namespaceSelector: scoped,
      rules: [{ apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["configmaps"] }],
      handle: (request) =>
        request.name?.startsWith("bad-")
          ? deny(`metadata.name: "${request.name}" must not start with "bad-"`)
          : allow(),
    },
  ];

  before(async () => {
    kc = testKubeConfig("home");
    core = kc.makeApiClient(CoreV1Api);
    const tls = await ensureWebhookTls(kc, tlsOptions);
    server = new WebhookServer({ tls, callers: apiServerCallers() });
    for (const w of webhooks) server.register(w);
    const url = await server.start();
    configurations = webhookConfigurations(
      configurationName,
      webhooks,
      { url, caPem: tls.caPem },
      ownNamespace,
    );
    await applyWebhookConfigurations(kc, configurations);
    await core.createNamespace({
      body: { metadata: { name: namespace, labels: { "tenantry.dev/webhook-test": namespace } } },
    });
  });
  after(async () => {
    await deleteWebhookConfigurations(kc, configurations);
    await server.stop();
    await core.deleteNamespace({ name: namespace }).catch(() => {});
    await core.deleteNamespace({ name: ownNamespace }).catch(() => {});
  });

  test("the TLS secret is reused: a second call returns the same CA and certificate", async () => {
    const first = await ensureWebhookTls(kc, tlsOptions);
    const second = await ensureWebhookTls(kc, tlsOptions);
    assert.equal(second.caPem, first.caPem);
    assert.equal(second.serving.certPem, first.serving.certPem);
    assert.deepEqual(certificateNames(first.serving.certPem), {
      dnsNames: ["localhost"],
      ipAddresses: ["127.0.0.1"],
    });
  });

  test("a validating webhook denies with its message, a mutating one patches", async () => {
    await eventually(async () => {
      await assert.rejects(
        core.createNamespacedConfigMap({ namespace, body: { metadata: { name: "bad-one" } } }),
        (err: { code?: number; body?: string }) =>
          err.code === 403 &&
          String(err.body).includes('metadata.name: \\"bad-one\\" must not start with \\"bad-\\"'),
      );
    });
    const created = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "good-one" } },
    });
    assert.equal(created.metadata?.labels?.["tenantry.dev/user"], "tenantry-admin");
  });

  test("rotating the serving certificate keeps the webhooks working without a restart", async () => {
    const renewed = await ensureWebhookTls(kc, { ...tlsOptions, renewBeforeDays: 100_000 });
    server.rotate(renewed);
    const created = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "after-rotation" } },
    });
    assert.equal(created.metadata?.labels?.["tenantry.dev/user"], "tenantry-admin");
  });

  test("exempt namespaces are never intercepted, even by a Fail webhook whose server is down", async () => {
    const [validating] = configurations.filter((c) => c.kind === "ValidatingWebhookConfiguration");
    const selector = (
      validating as unknown as {
        webhooks: { namespaceSelector: { matchExpressions: { values: string[] }[] } }[];
      }
    ).webhooks[0]!.namespaceSelector.matchExpressions.at(-1)!;
    assert.deepEqual(selector.values, ["kube-system", "kube-public", "kube-node-lease", ownNamespace]);
  });

  test("when the server is down, Fail webhooks refuse users and Ignore webhooks let requests through", async () => {
    const user = await testUser(uniqueName("wh-user"));
    await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: "wh-user-edit" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "edit" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: user.name }],
      },
    });
    const userCore = user.kubeConfig.makeApiClient(CoreV1Api);
    await server.stop();
    await eventually(() =>
      assert.rejects(
        userCore.createNamespacedConfigMap({ namespace, body: { metadata: { name: "while-down" } } }),
        (err: { body?: string }) => /failed calling webhook \\"deny\./.test(String(err.body)),
      ),
    );
    // The cluster's administrator is never blocked by the outage: the Fail webhook's copy for them ignores it.
    const byAdmin = await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: "admin-while-down" } },
    });
    assert.equal(byAdmin.metadata?.labels?.["tenantry.dev/user"], undefined);
    // Ignore-only: drop the validating configuration; the mutating webhook is skipped, not fatal.
    await deleteWebhookConfigurations(
      kc,
      configurations.filter((c) => c.kind === "ValidatingWebhookConfiguration"),
    );
    await eventually(async () => {
      const created = await userCore.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: uniqueName("ignored") } },
      });
      assert.equal(created.metadata?.labels?.["tenantry.dev/user"], undefined);
    });
  });
});
