import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { UserError } from "../common/index.js";
import { createCertificateAuthority } from "../pki/index.js";
import { parseComponents, tenantryOptions } from "./run.js";

const logger = pino({ level: "silent" });
const all = "controllers,webhooks,gateway,identity,runtimes";
const dir = mkdtempSync(join(tmpdir(), "tenantry-run-test-"));
const caFile = join(dir, "webhook-client-ca.crt");
let caPem: string;
/** What commander passes when only the required flags are given. */
const defaults = {
  cluster: "home",
  components: all,
  logLevel: "info",
  webhookCertificateIssuer: "self",
  webhookClientCa: caFile,
};

before(async () => {
  caPem = (await createCertificateAuthority("run-test-client-ca")).certPem;
  writeFileSync(caFile, caPem);
});

describe("tenantry run options", () => {
  test("every component by default, from a kubeconfig on loopback", () => {
    const options = tenantryOptions({ ...defaults, kubeconfig: "/tmp/kc" }, logger, new Registry());
    assert.equal(options.kubeconfig, "/tmp/kc");
    assert.equal(options.inCluster, undefined);
    assert.equal(options.controllers, undefined);
    assert.deepEqual(options.webhooks, {});
    assert.deepEqual(options.gateway, { host: "127.0.0.1" });
    assert.deepEqual(options.identityApi, { host: "127.0.0.1" });
    assert.deepEqual(options.runtimesProxy, { host: "127.0.0.1" });
    assert.equal(options.namespace, "tenantry-system");
    assert.equal(options.webhookClientCa, caPem);
  });

  test("with the webhooks component, kube-apiserver's webhook client CA is required, or anonymous admission said out loud", () => {
    const { webhookClientCa: _, ...noCa } = defaults;
    const refused = (opts: Record<string, unknown>, message: RegExp) =>
      assert.throws(
        () => tenantryOptions({ ...noCa, kubeconfig: "/tmp/kc", ...opts }, logger, new Registry()),
        (err: unknown) => err instanceof UserError && err.exitCode === 2 && message.test(err.message),
      );
    refused({}, /^--webhook-client-ca: required with the webhooks component/);
    refused(
      { webhookClientCa: join(dir, "missing.crt") },
      /--webhook-client-ca: .*missing\.crt is not a readable PEM/,
    );
    writeFileSync(join(dir, "garbage.crt"), "not a certificate");
    refused({ webhookClientCa: join(dir, "garbage.crt") }, /garbage\.crt is not a readable PEM certificate/);
    refused(
      { webhookClientCa: caFile, allowAnonymousAdmission: true },
      /either --webhook-client-ca or --allow-anonymous-admission/,
    );
    const anonymous = tenantryOptions(
      { ...noCa, kubeconfig: "/tmp/kc", allowAnonymousAdmission: true },
      logger,
      new Registry(),
    );
    assert.equal(anonymous.webhookClientCa, false);
    // Without webhooks nothing is required (the identity API's reviews then answer nobody).
    const identityOnly = tenantryOptions(
      { ...noCa, kubeconfig: "/tmp/kc", components: "identity" },
      logger,
      new Registry(),
    );
    assert.equal(identityOnly.webhookClientCa, undefined);
  });

  test("in-cluster serves on every address, webhooks behind the Service, components chosen", () => {
    const options = tenantryOptions(
      {
        inCluster: true,
        namespace: "platform",
        cluster: "prod",
        components: "webhooks,identity",
        webhookService: "tenantry-webhooks",
        webhookPort: 9443,
        identityPort: 8443,
        logLevel: "info",
        webhookCertificateIssuer: "external",
        webhookClientCa: caFile,
      },
      logger,
      new Registry(),
    );
    assert.equal(options.inCluster, true);
    assert.equal(options.kubeconfig, undefined);
    assert.equal(options.namespace, "platform");
    assert.equal(options.controllers, false);
    assert.deepEqual(options.webhooks, { service: { name: "tenantry-webhooks" } });
    assert.equal(options.webhookHost, "0.0.0.0");
    assert.deepEqual(options.identityApi, { host: "0.0.0.0", port: 8443 });
    assert.equal(options.gateway, false);
    assert.deepEqual(options.webhookCertificate, { issuer: "external" });
    assert.equal(options.runtimesAdmin, false);
    assert.equal(options.runtimesProxy, false);
  });

  test("a kubeconfig and --in-cluster together, or neither, is bad input", () => {
    for (const opts of [{ kubeconfig: "/tmp/kc", inCluster: true }, {}]) {
      assert.throws(
        () => tenantryOptions({ ...defaults, ...opts }, logger, new Registry()),
        (err: unknown) => err instanceof UserError && err.exitCode === 2 && /--in-cluster/.test(err.message),
      );
    }
  });

  test("an unknown certificate issuer is named, with the choices", () => {
    assert.throws(
      () =>
        tenantryOptions(
          { ...defaults, kubeconfig: "/tmp/kc", webhookCertificateIssuer: "cert-manager" },
          logger,
          new Registry(),
        ),
      (err: unknown) =>
        err instanceof UserError &&
        err.exitCode === 2 &&
        /--webhook-certificate-issuer: "cert-manager" is neither self .* nor external/.test(err.message),
    );
  });

  test("an unknown component is named, with the choices", () => {
    assert.throws(
      () => parseComponents("controllers,webhoks"),
      (err: unknown) =>
        err instanceof UserError &&
        /"webhoks"/.test(err.message) &&
        /controllers, webhooks/.test(err.message),
    );
    assert.throws(() => parseComponents(" , "), /--components: empty/);
    assert.deepEqual([...parseComponents("gateway, runtimes")], ["gateway", "runtimes"]);
  });
});
