/**
 * The webhook serving certificate renewed before it expires and served without a restart, with
 * short-lived certificates on the home cluster: self-issued (tenantry renews), external (someone
 * else writes the Secret, as cert-manager does), and a renewal that cannot happen (a warning).
 * Each case in a namespace of its own; nothing here touches tenantry's own webhooks.
 */
import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { request } from "node:https";
import { after, before, describe, test } from "node:test";
import type { TLSSocket } from "node:tls";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { Registry } from "prom-client";
import { createCertificateAuthority, issueCertificate } from "../../src/pki/index.js";
import {
  ensureWebhookTls,
  WebhookCertificateKeeper,
  WebhookServer,
  type WebhookTls,
  type WebhookTlsOptions,
} from "../../src/webhooks/index.js";
import { apiServerCallers, testKubeConfig, uniqueName } from "../support/clusters.js";
import { eventually } from "../support/eventually.js";

const DAY_SECONDS = 86_400;
const logger = pino({ level: "silent" });

/** The certificate the server presents to a client trusting only `caPem` (the handshake verifies it). */
function servedCertificate(url: string, caPem: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/healthz`, { ca: caPem, agent: false }, (res) => {
      const raw = (res.socket as TLSSocket).getPeerCertificate().raw;
      res.resume();
      res.on("end", () => resolve(new X509Certificate(raw)));
    });
    req.on("error", reject);
    req.end();
  });
}

function secretData(tls: WebhookTls): Record<string, string> {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  return {
    "ca.crt": b64(tls.caPem),
    "tls.crt": b64(tls.serving.certPem),
    "tls.key": b64(tls.serving.keyPem),
  };
}

async function externallyIssued(validSeconds: number): Promise<WebhookTls> {
  const ca = await createCertificateAuthority(uniqueName("external-ca"));
  const serving = await issueCertificate(ca, {
    commonName: "tenantry-webhooks",
    ipAddresses: ["127.0.0.1"],
    usage: "server",
    validDays: validSeconds / DAY_SECONDS,
  });
  return { caPem: ca.certPem, serving };
}

describe("webhook certificate renewal without a restart", { timeout: 5 * 60_000 }, () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  const namespaces: string[] = [];
  const running: { keeper: WebhookCertificateKeeper; server: WebhookServer }[] = [];

  before(() => {
    kc = testKubeConfig("home");
    core = kc.makeApiClient(CoreV1Api);
  });

  after(async () => {
    for (const { keeper, server } of running) {
      await keeper.stop();
      await server.stop();
    }
    for (const name of namespaces) await core.deleteNamespace({ name }).catch(() => {});
  });

  async function serve(
    options: WebhookTlsOptions,
    issuer: "self" | "external",
    initial: WebhookTls,
  ): Promise<{ url: string; registry: Registry; keeper: WebhookCertificateKeeper }> {
    const server = new WebhookServer({ tls: initial, callers: apiServerCallers(), host: "127.0.0.1" });
    const url = await server.start();
    const registry = new Registry();
    const keeper = new WebhookCertificateKeeper({
      kubeConfig: kc,
      tls: options,
      issuer,
      initial,
      registry,
      logger,
      checkIntervalMs: 1_000,
      onChange: (next) => server.rotate(next),
    });
    keeper.start();
    running.push({ keeper, server });
    return { url, registry, keeper };
  }

  async function namespaceFor(prefix: string): Promise<string> {
    const name = uniqueName(prefix);
    await core.createNamespace({ body: { metadata: { name } } });
    namespaces.push(name);
    return name;
  }

  async function events(namespace: string, secretName: string) {
    const list = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=Secret,involvedObject.name=${secretName}`,
    });
    return list.items.map((e) => ({ type: e.type, reason: e.reason, message: e.message ?? "" }));
  }

  async function expiryMetric(registry: Registry, certificate: string): Promise<number | undefined> {
    const metric = await registry.getSingleMetric("tenantry_certificate_expiration_timestamp_seconds")?.get();
    return metric?.values.find((v) => v.labels.certificate === certificate)?.value;
  }

  test("a self-issued certificate is renewed before it expires, and new connections get it", async () => {
    const namespace = await namespaceFor("cert-self");
    // Valid 90 s, renewed when fewer than 60 s remain: the first renewal comes after about 30 s.
    const options: WebhookTlsOptions = {
      namespace,
      secretName: "webhook-tls",
      ipAddresses: ["127.0.0.1"],
      dnsNames: ["localhost"],
      servingValidDays: 90 / DAY_SECONDS,
      renewBeforeDays: 60 / DAY_SECONDS,
    };
    const initial = await ensureWebhookTls(kc, options);
    const { url, registry } = await serve(options, "self", initial);
    const first = await servedCertificate(url, initial.caPem);
    assert.equal(first.serialNumber, new X509Certificate(initial.serving.certPem).serialNumber);
    assert.equal(await expiryMetric(registry, "webhook-serving"), Date.parse(first.validTo) / 1000);

    const renewed = await eventually(
      async () => {
        const served = await servedCertificate(url, initial.caPem);
        assert.notEqual(served.serialNumber, first.serialNumber, "still the first certificate");
        return served;
      },
      { timeoutMs: 90_000, intervalMs: 1_000 },
    );
    // Before the first one expired, from the same CA (the caBundle stays), and what the Secret holds.
    assert.ok(Date.now() < Date.parse(first.validTo));
    assert.ok(renewed.checkIssued(new X509Certificate(initial.caPem)));
    assert.ok(Date.parse(renewed.validTo) > Date.parse(first.validTo));
    const secret = await core.readNamespacedSecret({ name: "webhook-tls", namespace });
    const stored = new X509Certificate(Buffer.from(secret.data!["tls.crt"]!, "base64").toString());
    assert.ok(
      Date.parse(stored.validTo) >= Date.parse(renewed.validTo),
      "the Secret holds the renewed certificate",
    );
    await eventually(async () => {
      assert.ok((await expiryMetric(registry, "webhook-serving"))! >= Date.parse(renewed.validTo) / 1000);
      const recorded = await events(namespace, "webhook-tls");
      assert.ok(
        recorded.some((e) => e.type === "Normal" && e.reason === "CertificateRenewed"),
        JSON.stringify(recorded),
      );
      assert.ok(!recorded.some((e) => e.type === "Warning"), JSON.stringify(recorded));
    });
  });

  test("an externally issued certificate that is due warns, and a new one (new CA) is served once written", async () => {
    const namespace = await namespaceFor("cert-external");
    const options: WebhookTlsOptions = {
      namespace,
      secretName: "issued-tls",
      ipAddresses: ["127.0.0.1"],
      dnsNames: [],
    };
    const expiring = await externallyIssued(60);
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "issued-tls" }, type: "kubernetes.io/tls", data: secretData(expiring) },
    });
    const { url, registry } = await serve(options, "external", expiring);
    await eventually(async () => {
      const warning = (await events(namespace, "issued-tls")).find((e) => e.type === "Warning");
      assert.equal(warning?.reason, "CertificateExpiring");
      assert.match(
        warning.message,
        /has not been renewed by its issuer \(check cert-manager's Certificate\)/,
      );
    });

    const reissued = await externallyIssued(DAY_SECONDS);
    await core.replaceNamespacedSecret({
      name: "issued-tls",
      namespace,
      body: { metadata: { name: "issued-tls" }, type: "kubernetes.io/tls", data: secretData(reissued) },
    });
    const served = await eventually(() => servedCertificate(url, reissued.caPem), { timeoutMs: 30_000 });
    assert.equal(served.serialNumber, new X509Certificate(reissued.serving.certPem).serialNumber);
    assert.equal(
      await expiryMetric(registry, "webhook-ca"),
      Date.parse(new X509Certificate(reissued.caPem).validTo) / 1000,
    );
  });

  test("a renewal that fails keeps serving the old certificate and says why in a warning Event", async () => {
    const namespace = await namespaceFor("cert-broken");
    const options: WebhookTlsOptions = {
      namespace,
      secretName: "webhook-tls",
      ipAddresses: ["127.0.0.1"],
      dnsNames: [],
      servingValidDays: 600 / DAY_SECONDS,
      renewBeforeDays: 1,
    };
    const current = await externallyIssued(600);
    // The CA's key is unreadable: tenantry cannot sign a new certificate.
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: "webhook-tls" },
        type: "kubernetes.io/tls",
        data: { ...secretData(current), "ca.key": Buffer.from("not a key").toString("base64") },
      },
    });
    const { url } = await serve(options, "self", current);
    await eventually(async () => {
      const reasons = (await events(namespace, "webhook-tls"))
        .filter((e) => e.type === "Warning")
        .map((e) => e.reason);
      assert.ok(reasons.includes("CertificateRenewalFailed"), JSON.stringify(reasons));
      assert.ok(reasons.includes("CertificateExpiring"), JSON.stringify(reasons));
    });
    const served = await servedCertificate(url, current.caPem);
    assert.equal(served.serialNumber, new X509Certificate(current.serving.certPem).serialNumber);
  });
});
