import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
  CertificatesV1Api,
  type CoreV1Event,
  type V1CertificateSigningRequest,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1Secret,
} from "@kubernetes/client-node";
import { Registry } from "prom-client";
import {
  CERTIFICATE_EXPIRY_METRIC,
  type ClusterClient,
  certificateExpiryGauge,
  isNotFound,
  loadClusterClient,
  silentLogger,
} from "../../src/kube/index.js";
import {
  KUBECONFIG_KEY,
  MulticlusterInformers,
  PEER_CERTIFICATE_SECONDS_ANNOTATION,
  PEER_RENEW_FRACTION_ANNOTATION,
  PeerCertificateRenewer,
  peerCertificateLabel,
  peerClusters,
  peerRoleName,
  peerSecretName,
  peerTenantName,
  unpeerClusters,
  virtualNodeName,
} from "../../src/multicluster/index.js";
import { createCertificateRequest } from "../../src/pki/index.js";
import { TENANTS_API_VERSION } from "../../src/tenants/index.js";
import { uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";
import { kubectl } from "../support/kubectl.js";
import {
  adminClient,
  exists,
  kubeconfigPath,
  nodeReady,
  readNode,
  readPeering,
  tempDir,
  tenantryOn,
  writeTemp,
} from "./support.js";

/**
 * edge-2 consumes home here, a pair the shared topology (home consumes edge-1 and edge-2) and the
 * other peering tests (edge-1 → home, edge-1 → edge-2, edge-2 → edge-1 refused) do not use.
 */
const consumer = adminClient("edge-2");
const provider = adminClient("home");
const NAMESPACE = "tenantry-system";
const LIFETIME = 600;

function secretCertificate(secret: V1Secret): { kubeconfig: string; certificate: X509Certificate } {
  const kubeconfig = Buffer.from(secret.data![KUBECONFIG_KEY]!, "base64").toString();
  const certData = /client-certificate-data: (\S+)/.exec(kubeconfig)?.[1];
  assert.ok(certData, "the kubeconfig carries a client certificate");
  return { kubeconfig, certificate: new X509Certificate(Buffer.from(certData, "base64")) };
}

async function readSecret(): Promise<V1Secret> {
  return consumer.core.readNamespacedSecret({ name: peerSecretName("home"), namespace: NAMESPACE });
}

describe("peer certificates renew themselves (edge-2 consumes home)", () => {
  const dir = tempDir("peer-certificates");
  const username = `tenantry-peer:${tenantryOn("edge-2").clusterId}`;
  let firstSerial: string;
  let renewed: { kubeconfig: string; certificate: X509Certificate };
  let peer: ClusterClient;

  before(
    async () => {
      await peerClusters({
        consumer,
        provider,
        namespaceQuota: 1,
        resources: { cpu: "1", memory: "1Gi", pods: "10" },
        expirationSeconds: LIFETIME,
      });
      firstSerial = secretCertificate(await readSecret()).certificate.serialNumber;
    },
    { timeout: 120_000 },
  );

  after(async () => {
    await unpeerClusters({ consumer, provider }).catch((err) => {
      if (!/no peering/.test((err as Error).message)) throw err;
    });
    for (const kind of ["ClusterRole", "ClusterRoleBinding"]) {
      assert.equal(
        await exists(provider, "rbac.authorization.k8s.io/v1", kind, peerRoleName("edge-2")),
        false,
        `${kind} removed by unpeer`,
      );
    }
  });

  test("the provider grants the peer user only create and get of CSRs, and records the lifetime", async () => {
    const rbac = (kind: string) =>
      provider.objects.read({
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind,
        metadata: { name: peerRoleName("edge-2") },
      }) as Promise<V1ClusterRole & V1ClusterRoleBinding>;
    const role = await rbac("ClusterRole");
    assert.deepEqual(
      role.rules?.map((r) => ({ apiGroups: r.apiGroups, resources: r.resources, verbs: r.verbs })),
      [
        {
          apiGroups: ["certificates.k8s.io"],
          resources: ["certificatesigningrequests"],
          verbs: ["create", "get"],
        },
      ],
    );
    const binding = await rbac("ClusterRoleBinding");
    assert.deepEqual(
      binding.subjects?.map((s) => [s.kind, s.name]),
      [["User", username]],
    );
    const tenant = await provider.objects.read({
      apiVersion: TENANTS_API_VERSION,
      kind: "Tenant",
      metadata: { name: peerTenantName("edge-2") },
    });
    assert.equal(tenant.metadata?.annotations?.[PEER_CERTIFICATE_SECONDS_ANNOTATION], String(LIFETIME));
  });

  test("when due, the consumer gets a new certificate for a new key and the peering keeps working", async () => {
    const annotate = (value: string) =>
      kubectl(kubeconfigPath("edge-2"), ["annotate", "--overwrite", "peering", "home", value]);
    // 0.99: due at once, and again as long as it is set (the signer backdates a certificate, so a
    // fresh one has less than 99% of its lifetime left); then back to the default, a third.
    const set = await annotate(`${PEER_RENEW_FRACTION_ANNOTATION}=0.99`);
    assert.equal(set.code, 0, set.stderr);
    try {
      await eventually(
        async () => {
          const current = secretCertificate(await readSecret());
          assert.notEqual(current.certificate.serialNumber, firstSerial, "the Secret's certificate changed");
        },
        { timeoutMs: 90_000, intervalMs: 1_000 },
      );
    } finally {
      const unset = await annotate(`${PEER_RENEW_FRACTION_ANNOTATION}-`);
      assert.equal(unset.code, 0, unset.stderr);
    }
    // A renewal under way when the annotation went may still land: take the certificate once it stays.
    renewed = await eventually(
      async () => {
        const first = secretCertificate(await readSecret());
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        const again = secretCertificate(await readSecret());
        assert.equal(again.certificate.serialNumber, first.certificate.serialNumber, "the certificate stays");
        return again;
      },
      { timeoutMs: 30_000, intervalMs: 0 },
    );
    const { certificate } = renewed;
    assert.match(certificate.subject, new RegExp(`^CN=${username.replace(/[.:]/g, "\\$&")}$`));
    const lifetime = (Date.parse(certificate.validTo) - Date.parse(certificate.validFrom)) / 1000;
    // The signer backdates notBefore by up to 5 minutes; never longer than asked otherwise.
    assert.ok(lifetime <= LIFETIME + 300, `lifetime ${lifetime}s`);
    assert.ok(Date.parse(certificate.validTo) > Date.now() + (LIFETIME - 120) * 1000, "a fresh certificate");

    // The new certificate works in the provider: it reads home's identity as the peer user.
    const path = writeTemp(dir, "renewed.kubeconfig", renewed.kubeconfig);
    peer = loadClusterClient("peer-of-home", path);
    const identity = await peer.core.readNamespacedConfigMap({
      name: "tenantry-cluster-identity",
      namespace: NAMESPACE,
    });
    assert.equal(identity.data?.clusterId, tenantryOn("home").clusterId);

    // The consumer's tenantry took it up without a restart: the Peering shows its expiry, the node stays Ready.
    await eventually(
      async () => {
        const peering = await readPeering(consumer, "home");
        assert.equal(
          Date.parse(String(peering?.status?.credentialsExpireAt)),
          Math.floor(Date.parse(certificate.validTo) / 1000) * 1000,
          JSON.stringify(peering?.status),
        );
        assert.equal(peering?.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
        assert.equal(nodeReady(await readNode(consumer, virtualNodeName("home")))?.status, "True");
      },
      { timeoutMs: 30_000 },
    );

    const events = await consumer.core.listNamespacedEvent({
      namespace: "default",
      fieldSelector: "involvedObject.kind=Peering,involvedObject.name=home,reason=CertificateRenewed",
    });
    const messages = events.items.map((e: CoreV1Event) => e.message ?? "");
    assert.ok(
      messages.some((m) =>
        /through CertificateSigningRequest tenantry-peer-renewal-[0-9a-f]+: valid until/.test(m),
      ),
      messages.join("\n"),
    );
  });

  test("the certificate's expiry is the shared metric, certificate=peer/<peering>", async () => {
    // A renewer of this process (it renews nothing: the certificate is fresh) with its own registry.
    const informers = new MulticlusterInformers(consumer, NAMESPACE);
    const registry = new Registry();
    const webhookGauge = certificateExpiryGauge(registry);
    const renewer = new PeerCertificateRenewer({
      client: consumer,
      peerings: informers.peerings,
      peerSecrets: informers.peerSecrets,
      namespace: NAMESPACE,
      registry,
      logger: silentLogger,
    });
    await informers.start();
    await renewer.start();
    try {
      await eventually(async () => {
        const { certificate } = secretCertificate(await readSecret());
        const metric = await registry.getSingleMetric(CERTIFICATE_EXPIRY_METRIC)!.get();
        assert.equal(registry.getSingleMetric(CERTIFICATE_EXPIRY_METRIC), webhookGauge, "one gauge for all");
        const value = metric.values.find((v) => v.labels.certificate === peerCertificateLabel("home"))?.value;
        assert.equal(value, Date.parse(certificate.validTo) / 1000);
      });
    } finally {
      await renewer.stop();
      await informers.stop();
    }
  });

  test("the provider approves the peer's own request only: not another name, a group, a longer life, or its own approval", async () => {
    assert.ok(peer, "runs after the renewal test");
    const api = peer.kubeConfig.makeApiClient(CertificatesV1Api);
    const submit = async (what: string, cn: string, groups: string[], expirationSeconds: number) => {
      const { csrPem } = await createCertificateRequest(cn, groups);
      const name = uniqueName(`forged-${what}`);
      const body: V1CertificateSigningRequest = {
        metadata: { name },
        spec: {
          request: Buffer.from(csrPem).toString("base64"),
          signerName: "kubernetes.io/kube-apiserver-client",
          usages: ["client auth", "digital signature", "key encipherment"],
          expirationSeconds,
        },
      };
      await api.createCertificateSigningRequest({ body });
      return name;
    };
    const own = await submit("own", username, [], LIFETIME);
    const forged = [
      await submit("name", "tenantry-peer:someone-else", [], LIFETIME),
      // (the API server itself refuses system:masters for this signer)
      await submit("group", username, ["peer-admins"], LIFETIME),
      await submit("longer", username, [], LIFETIME * 2),
    ];
    try {
      // The control: the peer's own request is approved and signed, so the approver has seen them all.
      await eventually(
        async () => {
          const csr = await api.readCertificateSigningRequest({ name: own });
          assert.ok(csr.status?.certificate, "the peer's own request is signed");
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      for (const name of forged) {
        const csr = await api.readCertificateSigningRequest({ name });
        assert.deepEqual(csr.status?.conditions ?? [], [], `${name} left alone: neither approved nor denied`);
        assert.equal(csr.status?.certificate, undefined);
      }
      // The peer user may not approve anything itself.
      const mine = await api.readCertificateSigningRequest({ name: forged[0]! });
      await assert.rejects(
        api.replaceCertificateSigningRequestApproval({
          name: mine.metadata!.name!,
          body: {
            ...mine,
            status: { conditions: [{ type: "Approved", status: "True", reason: "Self", message: "self" }] },
          },
        }),
        (err: { code?: number }) => err.code === 403,
      );
    } finally {
      const certificates = provider.kubeConfig.makeApiClient(CertificatesV1Api);
      for (const name of [own, ...forged]) {
        await certificates.deleteCertificateSigningRequest({ name }).catch((err) => {
          if (!isNotFound(err)) throw err;
        });
      }
    }
  });

  test("a renewal the provider refuses is a warning Event on the Peering, and the working kubeconfig stays", async () => {
    // Without its ClusterRoleBinding the peer user may not ask for certificates any more.
    await provider.objects.delete({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: peerRoleName("edge-2") },
    });
    const before = (await readSecret()).data![KUBECONFIG_KEY];
    const set = await kubectl(kubeconfigPath("edge-2"), [
      "annotate",
      "--overwrite",
      "peering",
      "home",
      `${PEER_RENEW_FRACTION_ANNOTATION}=0.99`,
    ]);
    assert.equal(set.code, 0, set.stderr);
    try {
      const warning = await eventually(
        async () => {
          const events = await consumer.core.listNamespacedEvent({
            namespace: "default",
            fieldSelector:
              "involvedObject.kind=Peering,involvedObject.name=home,reason=CertificateRenewalFailed",
          });
          const event = events.items.find((e: CoreV1Event) => e.type === "Warning");
          assert.ok(event, "a CertificateRenewalFailed warning");
          return event;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      assert.match(
        warning.message ?? "",
        /could not renew the client certificate for provider "home" \(valid until .*; the current one stays in use\): creating CertificateSigningRequest tenantry-peer-renewal-[0-9a-f]+ in the provider: .*forbidden.*; retrying in 10s/,
      );
      assert.equal((await readSecret()).data![KUBECONFIG_KEY], before, "the Secret is unchanged");
      const peering = await readPeering(consumer, "home");
      assert.equal(peering?.status?.conditions?.find((c) => c.type === "Ready")?.status, "True");
      assert.equal(nodeReady(await readNode(consumer, virtualNodeName("home")))?.status, "True");
    } finally {
      await kubectl(kubeconfigPath("edge-2"), [
        "annotate",
        "peering",
        "home",
        `${PEER_RENEW_FRACTION_ANNOTATION}-`,
      ]);
    }
  });
});
