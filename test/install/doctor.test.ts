/**
 * `tenantry doctor` against real clusters: the shared home cluster (tenantry with every part, and
 * kube-apiserver wired to its token and authorization webhooks) is healthy; on a cluster of its
 * own, tenantry is then broken in the ways installations break (a wrong webhook CA, a CRD gone, a
 * certificate about to expire, tenantry stopped) and each is named with its fix.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  type V1ValidatingWebhookConfiguration,
} from "@kubernetes/client-node";
import { pino } from "pino";
import { ALL_CRDS } from "../../src/app/crds.js";
import { diagnose, type Finding } from "../../src/app/doctor.js";
import {
  leaderLeases,
  type RunningTenantry,
  startTenantry,
  TENANTRY_NAMESPACE,
} from "../../src/app/tenantry.js";
import { type ClusterClient, loadClusterClient } from "../../src/kube/index.js";
import { ClusterHarness, type ClusterState, webhookClientCaFile } from "../../src/localcluster/index.js";
import {
  createCertificateAuthority,
  issueCertificate,
  loadCertificateAuthority,
} from "../../src/pki/index.js";
import { testEnvironment } from "../support/clusters.js";
import { runCommand } from "../support/kubectl.js";

const root = join(import.meta.dirname, "..", "..");

function doctorCli(kubeconfig: string, ...args: string[]) {
  return runCommand(process.execPath, [
    "--import",
    "tsx",
    join(root, "src/cli/main.ts"),
    "doctor",
    "--kubeconfig",
    kubeconfig,
    ...args,
  ]);
}

let dir: string;
let harness: ClusterHarness;
let cluster: ClusterState;
let admin: ClusterClient;
let tenantry: RunningTenantry | undefined;

/** tenantry on the doctor's own cluster, trusting `webhookClientCa` for admission (see TenantryOptions). */
async function startOwnTenantry(webhookClientCa: string | false): Promise<void> {
  await tenantry?.stop();
  tenantry = await startTenantry({
    cluster: cluster.name,
    kubeconfig: cluster.kubeconfig,
    webhookClientCa,
    logger: pino({ level: "silent" }),
    gateway: false,
    runtimesAdmin: false,
    runtimesProxy: false,
    dashboard: false,
    logicalClouds: false,
    storage: false,
    monitor: false,
  });
  // The doctor's leader check wants a leader, not one being elected.
  const deadline = Date.now() + 60_000;
  while (!tenantry.isLeader() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
}

const diagnoseOwn = () =>
  diagnose({ client: admin, namespace: TENANTRY_NAMESPACE, crds: ALL_CRDS, leaderLeases: leaderLeases() });

function problems(findings: Finding[], check: string): Finding[] {
  return findings.filter((f) => f.check === check && f.status !== "ok");
}

describe("tenantry doctor", { timeout: 15 * 60_000 }, () => {
  it("says a healthy installation is healthy (home cluster: every check ok, exit 0)", async () => {
    const home = testEnvironment().clusters.find((c) => c.name === "home")!;
    const result = await doctorCli(home.kubeconfig);
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /tenantry is healthy/, result.stdout);
    for (const check of [
      "crds",
      "webhooks/registration",
      "webhooks/ca",
      "webhooks/reachable",
      "certificates",
      "leader",
      "webhooks/callers",
      "apiserver/authentication",
      "apiserver/authorization",
      "apiserver/admission",
      "apiserver/node-restriction",
    ]) {
      assert.match(result.stdout, new RegExp(`^ok +${check.replace("/", "\\/")} `, "m"), result.stdout);
    }
    const json = await doctorCli(home.kubeconfig, "-o", "json");
    const findings = JSON.parse(json.stdout) as Finding[];
    assert.ok(
      findings.every((f) => f.status === "ok"),
      json.stdout,
    );
  });

  describe("on a cluster of its own", () => {
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), "tenantry-doctor-"));
      harness = new ClusterHarness({ dir, log: () => {} });
      [cluster] = (await harness.up([{ name: "doctor", nodes: 1 }])) as [ClusterState];
      admin = loadClusterClient(cluster.name, cluster.kubeconfig);
      await startOwnTenantry(await readFile(webhookClientCaFile(cluster), "utf8"));
    });

    after(async () => {
      await tenantry?.stop();
      await harness?.reset().catch(() => {});
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it("finds tenantry itself healthy, and names kube-apiserver's missing token and authorization webhooks with their flags", async () => {
      const findings = await diagnoseOwn();
      const errors = findings.filter((f) => f.status === "error");
      assert.deepEqual(errors, []);
      const [authentication] = problems(findings, "apiserver/authentication");
      assert.equal(authentication?.status, "warning");
      assert.match(authentication.fix ?? "", /--authentication-token-webhook-config-file=/);
      const [authorization] = problems(findings, "apiserver/authorization");
      assert.equal(authorization?.status, "warning");
      assert.match(authorization.fix ?? "", /--authorization-config/);
    });

    it("names a webhook whose caBundle is not tenantry's CA, and the TLS failure it causes (exit 1)", async () => {
      const api = admin.kubeConfig.makeApiClient(AdmissionregistrationV1Api);
      const original: V1ValidatingWebhookConfiguration = await api.readValidatingWebhookConfiguration({
        name: "tenantry",
      });
      const first = original.webhooks![0]!;
      const stranger = await createCertificateAuthority("someone-else");
      await api.patchValidatingWebhookConfiguration({
        name: "tenantry",
        body: [
          {
            op: "replace",
            path: "/webhooks/0/clientConfig/caBundle",
            value: Buffer.from(stranger.certPem).toString("base64"),
          },
        ],
      });
      try {
        const result = await doctorCli(cluster.kubeconfig);
        assert.equal(result.code, 1, `${result.stdout}\n${result.stderr}`);
        assert.match(
          result.stdout,
          new RegExp(`ERROR +webhooks/ca .*caBundle of ${first.name.replace(/\./g, "\\.")}`),
        );
        assert.match(
          result.stdout,
          /ERROR +webhooks\/reachable .*the registered CA does not verify the certificate/,
        );
        assert.match(result.stdout, /fix: restart tenantry/);
      } finally {
        await api.patchValidatingWebhookConfiguration({
          name: "tenantry",
          body: [
            { op: "replace", path: "/webhooks/0/clientConfig/caBundle", value: first.clientConfig.caBundle },
          ],
        });
      }
      assert.deepEqual(problems(await diagnoseOwn(), "webhooks/ca"), []);
    });

    it("names a CustomResourceDefinition that is missing, and how to apply it", async () => {
      const crd = ALL_CRDS.find((c) => c.spec.names.plural === "monitorrules")!;
      await admin.kubeConfig
        .makeApiClient(ApiextensionsV1Api)
        .deleteCustomResourceDefinition({ name: crd.metadata.name });
      let missing: Finding[] = [];
      for (let i = 0; i < 30 && !missing.length; i++) {
        missing = problems(await diagnoseOwn(), "crds");
        if (!missing.length) await new Promise((r) => setTimeout(r, 1000));
      }
      assert.equal(missing.length, 1, JSON.stringify(missing));
      assert.equal(missing[0]!.status, "error");
      assert.equal(missing[0]!.detail, `CustomResourceDefinition ${crd.metadata.name} is missing`);
      assert.match(missing[0]!.fix ?? "", /kubectl apply --server-side -f deploy\/crds\//);
    });

    it("warns of a webhook certificate about to expire that was not renewed", async () => {
      const secret = await admin.core.readNamespacedSecret({
        name: "tenantry-webhook-tls",
        namespace: TENANTRY_NAMESPACE,
      });
      const text = (key: string) => Buffer.from(secret.data![key]!, "base64").toString();
      const ca = await loadCertificateAuthority({ certPem: text("ca.crt"), keyPem: text("ca.key") });
      const shortLived = await issueCertificate(ca, {
        commonName: "tenantry-webhooks",
        ipAddresses: ["127.0.0.1"],
        dnsNames: ["localhost", `tenantry-webhooks.${TENANTRY_NAMESPACE}.svc`],
        usage: "server",
        validDays: 2,
      });
      await admin.core.patchNamespacedSecret({
        name: "tenantry-webhook-tls",
        namespace: TENANTRY_NAMESPACE,
        body: [
          { op: "replace", path: "/data/tls.crt", value: Buffer.from(shortLived.certPem).toString("base64") },
        ],
      });
      const [expiring] = problems(await diagnoseOwn(), "certificates");
      assert.equal(expiring?.status, "warning");
      assert.match(
        expiring.detail,
        /the webhook serving certificate expires in (47|48) hours .* has not been renewed/,
      );
      assert.match(
        expiring.fix ?? "",
        /get events --field-selector involvedObject.name=tenantry-webhook-tls/,
      );
    });

    it("names a webhook server that answers callers without kube-apiserver's client certificate (exit 1)", async () => {
      await startOwnTenantry(false);
      const result = await doctorCli(cluster.kubeconfig);
      assert.equal(result.code, 1, `${result.stdout}\n${result.stderr}`);
      assert.match(
        result.stdout,
        /ERROR +webhooks\/callers +https:\/\/127\.0\.0\.1:\d+ answered an admission review sent without a client certificate \(HTTP 400\): anyone who reaches it can forge AdmissionReviews/,
      );
      assert.match(
        result.stdout,
        /fix: give tenantry the CA that signed kube-apiserver's webhook client certificate/,
      );
      // kube-apiserver itself still gets answers.
      assert.match(result.stdout, /^ok +apiserver\/admission /m);
    });

    it("names a kube-apiserver whose webhook client certificate tenantry does not trust (401 in its metrics)", async () => {
      await startOwnTenantry((await createCertificateAuthority("not-kube-apiservers")).certPem);
      const findings = await diagnoseOwn();
      const [admission] = problems(findings, "apiserver/admission");
      assert.equal(admission?.status, "error", JSON.stringify(findings));
      assert.match(admission.detail, /refused kube-apiserver's admission calls with 401/);
      assert.match(admission.fix ?? "", /--admission-control-config-file/);
      assert.deepEqual(problems(findings, "webhooks/callers"), []);
      await startOwnTenantry(await readFile(webhookClientCaFile(cluster), "utf8"));
      assert.deepEqual(problems(await diagnoseOwn(), "apiserver/admission"), []);
    });

    it("with tenantry stopped, names the webhook server that does not answer and the missing leader", async () => {
      await tenantry!.stop();
      tenantry = undefined;
      const findings = await diagnoseOwn();
      const [unreachable] = problems(findings, "webhooks/reachable");
      assert.equal(unreachable?.status, "error");
      assert.match(unreachable.detail, /ECONNREFUSED/);
      assert.match(unreachable.fix ?? "", /is tenantry running/);
      const [leader] = problems(findings, "leader");
      assert.equal(leader?.status, "error");
      assert.match(leader.detail, /no replica leads|controllers are not running/);
    });
  });
});
