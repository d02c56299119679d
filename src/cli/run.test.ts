import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import { pino } from "pino";
import { Registry } from "prom-client";
import { CAPABILITY_NAMES, LEADING_CAPABILITIES } from "../app/index.js";
import { UserError } from "../common/index.js";
import { createCertificateAuthority } from "../pki/index.js";
import { COMPONENT_ALIASES, parseComponents, tenantryOptions } from "./run.js";

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
    assert.deepEqual(options.controllers, [...LEADING_CAPABILITIES]);
    // The five roles of old name every capability but the dashboard (access comes as a dependency).
    assert.deepEqual(
      options.capabilities,
      CAPABILITY_NAMES.filter((n) => n !== "dashboard" && n !== "access"),
    );
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
    assert.equal(options.controllers, false, "webhooks and identity lead nothing: no Lease");
    assert.deepEqual(options.capabilities, ["webhooks", "identity"]);
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

  test("an unknown component is named, with the flag and every choice", () => {
    assert.throws(
      () => parseComponents("controllers,webhoks"),
      (err: unknown) =>
        err instanceof UserError &&
        err.exitCode === 2 &&
        /^--components: unknown "webhoks"; choose from tenants, clusters, .*, dashboard, all, controllers$/.test(
          err.message,
        ),
    );
    assert.throws(() => parseComponents(" , "), /--components: empty/);
  });

  test("capability names run those capabilities, their controllers each on its Lease, their servers", () => {
    const some = parseComponents("gateway, nodes,monitor");
    assert.deepEqual(some.capabilities, ["monitor", "nodes", "gateway"]);
    assert.deepEqual(some.controllers, ["monitor", "nodes"]);
    assert.ok(some.serves("gateway") && !some.serves("identity"));
    const options = tenantryOptions(
      { ...defaults, kubeconfig: "/tmp/kc", components: "runtimes,tenants" },
      logger,
      new Registry(),
    );
    assert.deepEqual(options.capabilities, ["tenants", "runtimes"]);
    assert.deepEqual(options.controllers, ["tenants", "runtimes"]);
    assert.deepEqual(options.runtimesProxy, { host: "127.0.0.1" });
    assert.equal(options.gateway, false);
    assert.equal(options.webhooks, false);
    assert.equal(options.identityApi, false);
  });

  test("the chart accepts exactly the names --components takes", () => {
    const schema = JSON.parse(
      readFileSync(join(import.meta.dirname, "../../deploy/helm/tenantry/values.schema.json"), "utf8"),
    );
    assert.deepEqual(schema.properties.components.items.enum, [...CAPABILITY_NAMES, ...COMPONENT_ALIASES]);
  });

  test("the role names are aliases: controllers leads every capability and serves no role's server; all is everything", () => {
    const roles = parseComponents("controllers");
    assert.deepEqual(roles.controllers, [...LEADING_CAPABILITIES]);
    assert.deepEqual(roles.capabilities, [...LEADING_CAPABILITIES]);
    assert.ok(!roles.serves("runtimes"), "the runtimes API and proxy need runtimes named");
    const options = tenantryOptions(
      { ...defaults, kubeconfig: "/tmp/kc", components: "controllers" },
      logger,
      new Registry(),
    );
    assert.equal(options.runtimesProxy, false);
    assert.equal(options.webhooks, false);
    const all = parseComponents("all");
    assert.deepEqual(all.capabilities, [...CAPABILITY_NAMES]);
    assert.deepEqual(all.controllers, [...LEADING_CAPABILITIES]);
    assert.ok(CAPABILITY_NAMES.every((n) => all.serves(n)));
  });

  test("--network-gateway runs the gateway with that image; its other flags need it and say what is wrong", () => {
    const base = { ...defaults, kubeconfig: "/tmp/kc" };
    assert.equal(tenantryOptions(base, logger, new Registry()).multicluster, undefined);
    const options = tenantryOptions(
      {
        ...base,
        networkGateway: "registry.example/gateway:1",
        networkGatewayNode: "kubernetes.io/hostname=gw-1,tun=yes",
        networkPodCidr: "10.244.0.0/16",
      },
      logger,
      new Registry(),
    );
    assert.deepEqual(options.multicluster?.network, {
      gateway: {
        image: "registry.example/gateway:1",
        nodeSelector: { "kubernetes.io/hostname": "gw-1", tun: "yes" },
      },
      podCidr: "10.244.0.0/16",
    });
    for (const [flags, message] of [
      [{ networkPodCidr: "10.244.0.0/16" }, /need --network-gateway <image>/],
      [
        { networkGateway: "g:1", networkGatewayNode: "hostname" },
        /--network-gateway-node: "hostname" is not key=value/,
      ],
      [{ networkGateway: "g:1", networkPodCidr: "10.244.0.1/16" }, /--network-pod-cidr: .*host bits set/],
    ] as const) {
      assert.throws(() => tenantryOptions({ ...base, ...flags }, logger, new Registry()), message);
    }
  });
});
