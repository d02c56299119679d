/**
 * The Helm chart, checked with Helm itself (built from its Go module, cached like the Kubernetes
 * components): lint, render with default and non-default values, refuse bad values naming the
 * field, and apply what it renders with server-side dry run to the home cluster.
 */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import { CLUSTER_RULES, flatten, NAMESPACE_RULES } from "../../src/app/rbac.js";
import { ensureHelm } from "../../src/localcluster/index.js";
import { createCertificateAuthority } from "../../src/pki/index.js";
import { testEnvironment } from "../support/clusters.js";
import { kubectl, runCommand } from "../support/kubectl.js";

const chart = join(import.meta.dirname, "..", "..", "deploy", "helm", "tenantry");
const KUBE_VERSION = "1.33.0";

interface Rendered {
  kind: string;
  metadata: { name: string; namespace?: string };
  [field: string]: unknown;
}

let helm: string;
/** The CA of kube-apiserver's webhook client certificate, as an operator gives it. */
let caBundle: string;
let caFile: string;
const CONTROL_PLANE = "networkPolicy.controlPlane[0].ipBlock.cidr=10.0.0.10/32";
/** The values an install must give: the CA, and where kube-apiserver calls the webhooks from. */
let required: string[];

async function helmRun(args: string[]) {
  return runCommand(helm, args);
}

async function render(values: string[] = [], namespace = "tenantry-system"): Promise<Rendered[]> {
  return renderExactly([...required, ...values], namespace);
}

/** `helm template` of the chart with these values, as Helm answered. */
function template(values: string[], namespace?: string) {
  return helmRun([
    "template",
    "tenantry",
    chart,
    ...(namespace ? ["--namespace", namespace] : []),
    "--kube-version",
    KUBE_VERSION,
    ...values,
  ]);
}

async function renderExactly(values: string[], namespace = "tenantry-system"): Promise<Rendered[]> {
  const result = await template(values, namespace);
  assert.equal(result.code, 0, result.stderr);
  return parseAllDocuments(result.stdout)
    .map((d) => d.toJS() as Rendered | null)
    .filter((o): o is Rendered => o !== null);
}

function find(objects: Rendered[], kind: string, name?: string): Rendered {
  const found = objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  assert.ok(found, `no ${kind}${name ? ` ${name}` : ""} rendered`);
  return found;
}

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are walked by path
type Any = any;

describe("Helm chart deploy/helm/tenantry", { timeout: 20 * 60_000 }, () => {
  before(async () => {
    ({ helm } = await ensureHelm());
    caBundle = (await createCertificateAuthority("webhook-client-ca")).certPem;
    caFile = join(mkdtempSync(join(tmpdir(), "tenantry-chart-")), "ca.crt");
    writeFileSync(caFile, caBundle);
    required = ["--set-file", `apiServerClient.caBundle=${caFile}`, "--set", CONTROL_PLANE];
  });

  it("passes helm lint, with default and non-default values", async () => {
    for (const values of [
      [],
      ["--set", "replicaCount=3,podAntiAffinity=required,serviceMonitor.enabled=true"],
    ]) {
      const result = await helmRun(["lint", chart, "--strict", ...required, ...values]);
      assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
      assert.match(result.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  it("renders a hardened Deployment of 2 replicas in in-cluster mode by default", async () => {
    const objects = await render();
    const deployment: Any = find(objects, "Deployment");
    assert.equal(deployment.spec.replicas, 2);
    const pod = deployment.spec.template.spec;
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.ok(pod.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution);
    const [container] = pod.containers;
    assert.deepEqual(container.args.slice(0, 2), ["run", "--in-cluster"]);
    assert.ok(container.args.includes("--components=controllers,webhooks,gateway,identity,runtimes"));
    assert.ok(container.args.includes("--webhook-service=tenantry-webhooks"));
    assert.ok(container.args.includes("--webhook-certificate-issuer=self"));
    assert.ok(container.args.includes("--shutdown-delay=5"));
    assert.ok(pod.terminationGracePeriodSeconds > 5 + 15, "room for the shutdown delay and the drain");
    assert.equal(
      objects.find((o) => o.kind === "Certificate" || o.kind === "Issuer"),
      undefined,
    );
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.equal(container.readinessProbe.httpGet.path, "/readyz");
    assert.equal(container.livenessProbe.httpGet.path, "/healthz");
    assert.ok(container.resources.requests.cpu);
    assert.equal(find(objects, "Service", "tenantry-webhooks").kind, "Service");
    assert.equal((find(objects, "PodDisruptionBudget") as Any).spec.minAvailable, 1);
    find(objects, "NetworkPolicy");
    assert.equal(
      objects.find((o) => o.kind === "ServiceMonitor"),
      undefined,
    );
  });

  it("gives tenantry the CA of kube-apiserver's webhook client certificate, and admits only the control plane to the webhook port", async () => {
    const objects = await render();
    const pod = (find(objects, "Deployment") as Any).spec.template.spec;
    const [container] = pod.containers;
    assert.ok(container.args.includes("--webhook-client-ca=/etc/tenantry/apiserver-client/ca.crt"));
    assert.ok(
      container.volumeMounts.some(
        (m: Any) => m.name === "apiserver-client-ca" && m.mountPath === "/etc/tenantry/apiserver-client",
      ),
    );
    const volume = pod.volumes.find((v: Any) => v.name === "apiserver-client-ca");
    const configMap: Any = find(objects, "ConfigMap", volume.configMap.name);
    assert.equal(configMap.data["ca.crt"], caBundle);
    assert.match(
      (find(objects, "Deployment") as Any).spec.template.metadata.annotations["checksum/apiserver-client-ca"],
      /^[0-9a-f]{64}$/,
    );
    const ingress = (find(objects, "NetworkPolicy") as Any).spec.ingress as Any[];
    const reaching = ingress.filter((rule) => rule.ports.some((p: Any) => p.port === "webhooks"));
    assert.deepEqual(reaching, [
      { ports: [{ port: "webhooks", protocol: "TCP" }], from: [{ ipBlock: { cidr: "10.0.0.10/32" } }] },
    ]);

    const anonymous = await renderExactly([
      "--set",
      "apiServerClient.allowAnonymous=true",
      "--set",
      CONTROL_PLANE,
    ]);
    const args = (find(anonymous, "Deployment") as Any).spec.template.spec.containers[0].args as string[];
    assert.ok(args.includes("--allow-anonymous-admission"));
    assert.equal(
      args.find((a) => a.startsWith("--webhook-client-ca")),
      undefined,
    );
    assert.equal(
      anonymous.find((o) => o.kind === "ConfigMap"),
      undefined,
    );

    // Without the webhooks nothing about them is asked for.
    const noWebhooks = await renderExactly(["--set", "components={controllers,gateway}"]);
    const policy = (find(noWebhooks, "NetworkPolicy") as Any).spec.ingress as Any[];
    assert.equal(policy.filter((rule) => rule.ports.some((p: Any) => p.port === "webhooks")).length, 0);
  });

  it("refuses an install without kube-apiserver's webhook client CA or control plane, naming the value", async () => {
    const refused = async (values: string[], message: RegExp) => {
      const result = await template(values);
      assert.notEqual(result.code, 0, `${values.join(" ")} was accepted`);
      assert.match(result.stderr, message);
    };
    await refused(
      ["--set", CONTROL_PLANE],
      /apiServerClient\.caBundle: the CA bundle \(PEM\) that signs kube-apiserver's webhook client certificate is required/,
    );
    await refused(
      ["--set-file", `apiServerClient.caBundle=${caFile}`],
      /networkPolicy\.controlPlane: give the NetworkPolicy peers kube-apiserver calls the webhooks from/,
    );
    await refused(
      [...required, "--set", "apiServerClient.allowAnonymous=true"],
      /apiServerClient: give either caBundle or allowAnonymous, not both/,
    );
    await refused(
      ["--set", "apiServerClient.caBundle=not-a-certificate", "--set", CONTROL_PLANE],
      /apiServerClient\/caBundle|apiServerClient\.caBundle/,
    );
  });

  it("renders the ClusterRole and Role exactly as src/app/rbac.ts lists them, without wildcards", async () => {
    const objects = await render();
    assert.deepEqual((find(objects, "ClusterRole") as Any).rules, flatten(CLUSTER_RULES));
    assert.deepEqual((find(objects, "Role") as Any).rules, flatten(NAMESPACE_RULES));
    for (const rule of (find(objects, "ClusterRole") as Any).rules) {
      assert.ok(!rule.verbs.includes("*") && !rule.resources.includes("*"), JSON.stringify(rule));
    }
  });

  it("follows non-default values: replicas, required anti-affinity, fewer components, ServiceMonitor", async () => {
    const objects = await render([
      "--set",
      "replicaCount=3,podAntiAffinity=required,serviceMonitor.enabled=true,podDisruptionBudget.enabled=false",
      "--set",
      "components={webhooks,identity}",
      "--set",
      "networkPolicy.enabled=false",
    ]);
    const deployment: Any = find(objects, "Deployment");
    assert.equal(deployment.spec.replicas, 3);
    assert.ok(
      deployment.spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution,
    );
    assert.ok(deployment.spec.template.spec.containers[0].args.includes("--components=webhooks,identity"));
    find(objects, "ServiceMonitor");
    const services = objects.filter((o) => o.kind === "Service").map((o) => o.metadata.name);
    assert.deepEqual(services.sort(), ["tenantry-identity", "tenantry-metrics", "tenantry-webhooks"]);
    assert.equal(
      objects.find((o) => o.kind === "PodDisruptionBudget" || o.kind === "NetworkPolicy"),
      undefined,
    );
  });

  it("with webhookCertificate.issuer=certManager, renders cert-manager's Certificate into the Secret tenantry follows", async () => {
    const own = await render(["--set", "webhookCertificate.issuer=certManager"]);
    const deployment: Any = find(own, "Deployment");
    assert.ok(
      deployment.spec.template.spec.containers[0].args.includes("--webhook-certificate-issuer=external"),
    );
    const certificate: Any = find(own, "Certificate", "tenantry-webhooks");
    assert.equal(certificate.spec.secretName, "tenantry-webhook-tls");
    assert.ok(certificate.spec.dnsNames.includes("tenantry-webhooks.tenantry-system.svc"));
    assert.equal(certificate.spec.renewBefore, "720h");
    // No issuer given: a CA of the chart's own, self-signed by cert-manager, signs it.
    assert.equal(certificate.spec.issuerRef.name, "tenantry-webhook-ca");
    assert.equal((find(own, "Certificate", "tenantry-webhook-ca") as Any).spec.isCA, true);
    assert.deepEqual(
      own.filter((o) => o.kind === "Issuer").map((o) => o.metadata.name),
      ["tenantry-selfsigned", "tenantry-webhook-ca"],
    );

    const corporate = await render([
      "--set",
      "webhookCertificate.issuer=certManager,webhookCertificate.certManager.issuerRef.name=corp-ca,webhookCertificate.certManager.issuerRef.kind=ClusterIssuer",
    ]);
    assert.deepEqual((find(corporate, "Certificate") as Any).spec.issuerRef, {
      name: "corp-ca",
      kind: "ClusterIssuer",
    });
    assert.equal(corporate.filter((o) => o.kind === "Certificate" || o.kind === "Issuer").length, 1);
  });

  it("refuses bad values, naming the field", async () => {
    const cases: [string[], RegExp][] = [
      [["--set", "replicaCount=two"], /replicaCount/],
      [["--set", "components={gateway,dashbord}"], /components/],
      [["--set", "ports.webhooks=70000"], /ports\/webhooks|ports\.webhooks/],
      [["--set", "podAntiAffinity=sometimes"], /podAntiAffinity/],
      [["--set", "replicas=2"], /replicas/],
      [["--set", "webhookCertificate.issuer=vault"], /webhookCertificate\/issuer/],
      [["--set", "shutdownDelaySeconds=-1"], /shutdownDelaySeconds/],
    ];
    for (const [values, field] of cases) {
      const result = await template([...required, ...values]);
      assert.notEqual(result.code, 0, `${values.join(" ")} was accepted`);
      assert.match(result.stderr, /schema/);
      assert.match(result.stderr, field);
    }
  });

  it("applies to the home cluster with server-side dry run, CRDs included", async () => {
    const home = testEnvironment().clusters.find((c) => c.name === "home")!;
    const result = await helmRun([
      "template",
      "tenantry",
      chart,
      "--namespace",
      "tenantry-system",
      "--kube-version",
      KUBE_VERSION,
      "--include-crds",
      ...required,
    ]);
    assert.equal(result.code, 0, result.stderr);
    const applied = await kubectl(
      home.kubeconfig,
      ["apply", "--server-side", "--dry-run=server", "--force-conflicts", "--field-manager=helm", "-f", "-"],
      result.stdout,
    );
    assert.equal(applied.code, 0, applied.stderr);
    for (const kind of [
      "customresourcedefinition.apiextensions.k8s.io/tenants.tenantry.dev",
      "clusterrole.rbac.authorization.k8s.io/tenantry",
      "deployment.apps/tenantry",
      "configmap/tenantry-apiserver-client-ca",
      "service/tenantry-webhooks",
      "poddisruptionbudget.policy/tenantry",
      "networkpolicy.networking.k8s.io/tenantry",
    ]) {
      assert.match(
        applied.stdout,
        new RegExp(`${kind.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} serverside-applied \\(server dry run\\)`),
      );
    }
  });
});
